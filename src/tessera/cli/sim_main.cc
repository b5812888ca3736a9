// `tessera_sim`: the simulator's scenarios as a standalone program (same flags as `tessera sim`).
#include "tessera/cluster/sim_command.h"

int main(int argc, char** argv) { return tessera::cluster::RunSimCommand(argc, argv); }
