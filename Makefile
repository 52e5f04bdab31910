# SPDX-License-Identifier: Apache-2.0
# Thin wrapper over CMake for the README's commands.
#   make            release build: build/frond, build/libfrond.a, build/libfrond.so
#   make check      AddressSanitizer + UBSan build in build-san/, then ctest;
#                   then the unit tests again under ThreadSanitizer
#                   (build-tsan/, make check-tsan); then every fuzz harness
#                   for a bounded time (build-fuzz/, clang, make check-fuzz)
#   make install    honours PREFIX (default /usr/local) and DESTDIR
#   make format     apply .clang-format
#   make bench      run the benchmarks (release build)
#   make bench-formats   ID formats beside the plain generator (release)
PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_ARGS ?=

.PHONY: all build check test check-tsan check-fuzz install format \
	format-check bench bench-formats fuzz clean

all: build

build:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFROND_TESTS=OFF -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	cmake --build build -j $(JOBS)

build-san/CMakeCache.txt:
	cmake -S . -B build-san -DCMAKE_BUILD_TYPE=Debug -DFROND_SANITIZE=ON >/dev/null

check test: build-san/CMakeCache.txt
	cmake --build build-san -j $(JOBS)
	cd build-san && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)
	$(MAKE) check-tsan
	$(MAKE) check-fuzz

build-tsan/CMakeCache.txt:
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DFROND_TSAN=ON >/dev/null

# Every unit test under ThreadSanitizer, but one that needs the layout's
# full rate (TSan's slowdown never reaches it).
TSAN_SKIP = test_waiters_not_starved
check-tsan: build-tsan/CMakeCache.txt
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && ctest --output-on-failure -j $(JOBS) -L unit -E '$(TSAN_SKIP)'

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
	scripts/fuzz.sh build-fuzz $(FUZZ_SECONDS) $(FUZZ_LONG_SECONDS)

clean:
	rm -rf build build-san build-tsan build-fuzz
