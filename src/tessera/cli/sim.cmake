# `tessera sim`: the cluster simulator's scenarios (sim_command.h over testing/scenarios.h), also
# as the standalone `tessera_sim`.
tessera_add_library(tessera_cmd_sim
  SOURCES sim_command.cc
  DEPS tessera_testing tessera_cluster tessera_util CLI11::CLI11 nlohmann_json::nlohmann_json
       fmt::fmt)
target_link_libraries(tessera PRIVATE tessera_cmd_sim)

add_executable(tessera_sim sim_main.cc)
target_link_libraries(tessera_sim PRIVATE tessera_cmd_sim)

tessera_add_test(sim_command_test
  SOURCES sim_command_test.cc
  DEPS tessera_cmd_sim nlohmann_json::nlohmann_json)
