# What every subcommand shares (cli_flags.h: --version, help, exit status 2, HOST:PORT flags;
# config_file.h: --config; log_setup.h: logging, gRPC's lines included; proto_json.h). Included
# by this folder's CMakeLists.txt before the subcommands, so paths are relative to it.
tessera_add_library(tessera_cli_common
  SOURCES cli_flags.cc config_file.cc log_setup.cc proto_json.cc
  DEPS tessera_util tessera_rpc CLI11::CLI11 toml11::toml11 spdlog::spdlog fmt::fmt
       nlohmann_json::nlohmann_json gRPC::grpc++ protobuf::libprotobuf absl::strings)
target_link_libraries(tessera PRIVATE tessera_cli_common)

# Flags, help, config files and JSON printing, in process (no server).
tessera_add_test(cli_common_test
  SOURCES cli_flags_test.cc config_file_test.cc proto_json_test.cc
  DEPS tessera_cli_common tessera_cluster_proto tessera_testing)

# The `tessera` binary as a process: exit codes, --version, address flags, --config, gRPC's log
# lines, --help, admin --json, sim's memory check (a few seconds; starts `tessera serve` twice).
tessera_add_test(cli_process_test
  SOURCES cli_process_test.cc
  DEPS tessera_testing nlohmann_json::nlohmann_json
  DEFINITIONS TESSERA_BINARY_PATH="$<TARGET_FILE:tessera>"
  RUNS tessera)
