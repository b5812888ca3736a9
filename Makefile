# Tessera — the two set-up commands are `make run` and `make test` (see README.md).
#
#   make run     install what is missing, build, start one Tessera node on 127.0.0.1:8086
#                (data in ./data; SERVE_ARGS adds flags, e.g. SERVE_ARGS='--sync periodic')
#   make test    install what is missing, build, run every test (fuzz, tsan, thread-safety
#                check, then unit, crash, corruption, integration)
#   make tsan    the ThreadSanitizer build (clang) of the libraries and tests that link no gRPC
#   make check-thread-safety  clang's -Werror=thread-safety over the gcc build's other files
#   make bench   engine vs RocksDB and LevelDB; tessera serve vs the official emulator (YCSB,
#                scripts/bench_server.sh); 3 nodes at RF 3 vs one node (scripts/bench_cluster.sh);
#                the cluster simulator's detection and gossip figures
#   make fuzz    run every fuzzer for FUZZ_SECONDS each (default 20)
#   make inbox-search  the Cassandra paper's inbox search example, end to end
#   make test-cluster  only the multi-process suites (etcd and several `tessera serve`)
#   make soak    the distributed store's simulation over SOAK_SEEDS seeds (default 5000;
#                `make test` runs 300 of them)

BUILD_DIR    ?= build
FUZZ_DIR     := build-fuzz
TSAN_DIR     := build-tsan
BUILD_TYPE   ?= RelWithDebInfo
JOBS         ?= $(shell nproc)
FUZZ_SECONDS ?= 20
CTEST_ARGS   ?=
BENCH_ARGS   ?=
SERVE_ARGS   ?=
SOAK_SEEDS   ?= 5000

.PHONY: all deps configure build run test unit-test fuzz fuzz-build tsan tsan-build \
        check-thread-safety bench inbox-search clean test-cluster soak

all: build

deps:
	@bash scripts/install_deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	$(BUILD_DIR)/src/tessera/cli/tessera serve --data-dir ./data $(SERVE_ARGS)

unit-test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

test-cluster: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -L integration $(CTEST_ARGS)

# Faults and concurrent clients over many seeds; a failing seed prints how to replay it.
soak: build
	TESSERA_SIM_SEEDS=$(SOAK_SEEDS) $(BUILD_DIR)/src/tessera/testing/sim_replication_test \
	  --gtest_filter='*ConcurrentClients*' | grep -v '^\[20'

# The fuzz preset (CMakePresets.json) builds into build-fuzz/.
fuzz-build: deps
	cmake --preset fuzz
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target fuzzers

fuzz: fuzz-build
	@bash scripts/run_fuzzers.sh $(FUZZ_DIR) $(FUZZ_SECONDS)

# The tsan preset (CMakePresets.json) builds into build-tsan/ only the tests marked TSAN in CMake
# (docs/testing.md): TSan cannot run what links Debian's gRPC.
tsan-build: deps
	cmake --preset tsan
	cmake --build $(TSAN_DIR) -j $(JOBS) --target tsan_tests

tsan: tsan-build
	@bash scripts/run_tsan_tests.sh $(TSAN_DIR) $(JOBS)

# Clang's thread-safety analysis over the files that no clang build compiles (above all what
# links gRPC); the fuzz and tsan builds already check theirs with -Werror=thread-safety.
# After the build: the pass reads the gcc build's compile commands, whose generated protobuf
# headers must exist.
check-thread-safety: build
	@JOBS=$(JOBS) bash scripts/check_thread_safety.sh $(BUILD_DIR) \
	  $(TSAN_DIR)/compile_commands.json $(FUZZ_DIR)/compile_commands.json

# Fuzzers, TSan and the thread-safety check first, so that ctest's summary is the last line.
test: fuzz tsan check-thread-safety unit-test

bench: build
	@BUILD_DIR=$(abspath $(BUILD_DIR)) bash scripts/bench.sh $(BENCH_ARGS)

# The Cassandra paper's inbox search (examples/inbox_search/README.md) in one command.
inbox-search: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target tessera inbox_search
	@bash examples/inbox_search/run.sh $(abspath $(BUILD_DIR))

clean:
	rm -rf $(BUILD_DIR) $(FUZZ_DIR) $(TSAN_DIR)
