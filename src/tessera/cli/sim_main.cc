// `tessera_sim`: the simulator's scenarios as a standalone program (same flags as `tessera sim`).
#include "tessera/cli/commands.h"

int main(int argc, char** argv) { return tessera::cli::RunSim(argc, argv); }
