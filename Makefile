# SPDX-License-Identifier: Apache-2.0
# Thin wrapper over CMake for the README's commands.
#   make            release build: build/frond, build/libfrond.a, build/libfrond.so
#   make check      AddressSanitizer + UBSan build in build-san/, then ctest;
#                   then the unit tests again under ThreadSanitizer
#                   (build-tsan/, make check-tsan); then every fuzz harness
#                   for a bounded time (build-fuzz/, clang, make check-fuzz).
#                   Each ctest run prints its slowest tests and its total
#                   and logs them in build-*/Testing/timing.log; the whole
#                   run's time goes to build-san/Testing/check-times.log
#   make check-fast the edit loop: the unit tests and the fuzz corpora's
#                   replay under ASan + UBSan (build-san/), under a minute
#   make install    honours PREFIX (default /usr/local) and DESTDIR
#   make format     apply .clang-format
#   make bench      run the benchmarks (release build)
#   make bench-formats   ID formats beside the plain generator (release)
PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_ARGS ?=

.PHONY: all build check test check-san check-fast check-tsan check-fuzz \
	install format format-check bench bench-formats fuzz clean

all: build

build:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFROND_TESTS=OFF -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	cmake --build build -j $(JOBS)

build-san/CMakeCache.txt:
	cmake -S . -B build-san -DCMAKE_BUILD_TYPE=Debug -DFROND_SANITIZE=ON >/dev/null

# ctest writes a JUnit file per run; tests/timing.py prints where the time
# went (by suite, the slowest tests) whether the run passed or not.
CTEST = ctest --output-on-failure -j $(JOBS) --output-junit Testing/junit.xml
TIMING = python3 ../tests/timing.py Testing/junit.xml

check test:
	@t0=$$(date +%s); \
	$(MAKE) --no-print-directory check-san && \
	$(MAKE) --no-print-directory check-tsan && \
	$(MAKE) --no-print-directory check-fuzz; rc=$$?; \
	line="$$(date -u +%FT%TZ) make check: $$(( $$(date +%s) - t0 )) s, exit $$rc"; \
	echo "$$line"; mkdir -p build-san/Testing; \
	echo "$$line" >>build-san/Testing/check-times.log; exit $$rc

check-san: build-san/CMakeCache.txt
	cmake --build build-san -j $(JOBS)
	cd build-san && { $(CTEST) $(CTEST_ARGS); rc=$$?; \
	  $(TIMING) "make check (ASan+UBSan)"; exit $$rc; }

check-fast: build-san/CMakeCache.txt
	cmake --build build-san -j $(JOBS)
	cd build-san && { $(CTEST) -L 'unit|fuzz' $(CTEST_ARGS); rc=$$?; \
	  $(TIMING) "make check-fast"; exit $$rc; }

build-tsan/CMakeCache.txt:
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DFROND_TSAN=ON >/dev/null

# Every unit test under ThreadSanitizer, but one that needs the layout's
# full rate (TSan's slowdown never reaches it).
TSAN_SKIP = test_waiters_not_starved
check-tsan: build-tsan/CMakeCache.txt
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && { $(CTEST) -L unit -E '$(TSAN_SKIP)'; rc=$$?; \
	  $(TIMING) "make check-tsan"; exit $$rc; }

install: build
	cmake -S . -B build -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	DESTDIR=$(DESTDIR) cmake --install build

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

bench: build
	./build/frond bench

bench-formats: build
	./build/bench_formats

build-fuzz/CMakeCache.txt:
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DFROND_FUZZ=ON -DFROND_SANITIZE=ON >/dev/null

fuzz: build-fuzz/CMakeCache.txt
	cmake --build build-fuzz -j $(JOBS)

# Every libFuzzer harness, built with clang, run for FUZZ_SECONDS (the
# network parsers, fuzz_http and fuzz_resp, for FUZZ_LONG_SECONDS).
FUZZ_SECONDS ?= 10
FUZZ_LONG_SECONDS ?= 60
check-fuzz: build-fuzz/CMakeCache.txt
	cmake --build build-fuzz -j $(JOBS) --target fuzz_harnesses
	@t0=$$(date +%s); scripts/fuzz.sh build-fuzz $(FUZZ_SECONDS) \
	  $(FUZZ_LONG_SECONDS); rc=$$?; \
	echo "make check-fuzz: the harnesses ran $$(( $$(date +%s) - t0 )) s"; \
	exit $$rc

clean:
	rm -rf build build-san build-tsan build-fuzz
