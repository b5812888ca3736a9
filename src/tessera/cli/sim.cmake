# `tessera sim`: the cluster simulator's scenarios (src/tessera/cluster/sim_command.h).
tessera_add_library(tessera_cmd_sim SOURCES sim.cc DEPS tessera_cluster)
target_link_libraries(tessera PRIVATE tessera_cmd_sim)
