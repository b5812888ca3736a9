# `tessera bench` (commands.h): YCSB workloads against any Bigtable-API endpoint. Included by
# this folder's CMakeLists.txt, so paths are relative to it.
tessera_add_library(tessera_cmd_bench
  SOURCES bench.cc ycsb_bigtable_db.cc ycsb_driver.cc ycsb_generators.cc ycsb_histogram.cc
          ycsb_report.cc ycsb_workload.cc
  DEPS tessera_proto tessera_util tessera_cli_common CLI11::CLI11 nlohmann_json::nlohmann_json fmt::fmt
       absl::synchronization Threads::Threads)
target_link_libraries(tessera PRIVATE tessera_cmd_bench)

tessera_add_test(ycsb_test
  SOURCES ycsb_generators_test.cc ycsb_histogram_test.cc ycsb_workload_test.cc
          ycsb_driver_test.cc ycsb_report_test.cc
  DEPS tessera_cmd_bench)

# End to end against the emulator and `tessera serve` (started by the client's test helpers).
# The test runs `tessera serve` from this build.
tessera_add_test(ycsb_bigtable_db_test
  SOURCES ycsb_bigtable_db_test.cc
  DEPS tessera_cmd_bench tessera_testing
  DEFINITIONS TESSERA_BINARY_PATH="$<TARGET_FILE:tessera>"
  RUNS tessera)

# scripts/bench_server.sh end to end (tiny sizes; ~30 s: it starts four servers).
tessera_add_test(bench_server_script_test
  SOURCES bench_server_script_test.cc
  DEPS tessera_testing nlohmann_json::nlohmann_json
  LABELS slow
  DEFINITIONS TESSERA_BINARY_PATH="$<TARGET_FILE:tessera>"
              TESSERA_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  RUNS tessera)

# scripts/bench_cluster.sh end to end (tiny sizes; ~15 s: one node, then two 3-node clusters).
tessera_add_test(bench_cluster_script_test
  SOURCES bench_cluster_script_test.cc
  DEPS tessera_testing tessera_testing_etcd nlohmann_json::nlohmann_json
  LABELS slow
  DEFINITIONS TESSERA_BINARY_PATH="$<TARGET_FILE:tessera>"
              TESSERA_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  RUNS tessera)
