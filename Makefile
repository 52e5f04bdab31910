# Thin wrapper over CMake for the README's commands.
#   make            release build: build/frond, build/libfrond.a, build/libfrond.so
#   make check      AddressSanitizer + UBSan build in build-san/, then ctest
#   make install    honours PREFIX (default /usr/local) and DESTDIR
#   make format     apply .clang-format
#   make bench      run the benchmarks (release build)
#   make bench-formats   ID formats beside the plain generator (release)
PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_ARGS ?=

.PHONY: all build check test install format format-check bench bench-formats \
	fuzz clean

all: build

build:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFROND_TESTS=OFF -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	cmake --build build -j $(JOBS)

build-san/CMakeCache.txt:
	cmake -S . -B build-san -DCMAKE_BUILD_TYPE=Debug -DFROND_SANITIZE=ON >/dev/null

check test: build-san/CMakeCache.txt
	cmake --build build-san -j $(JOBS)
	cd build-san && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

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

fuzz:
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DFROND_FUZZ=ON -DFROND_SANITIZE=ON >/dev/null
	cmake --build build-fuzz -j $(JOBS)

clean:
	rm -rf build build-san build-fuzz
