// `tessera sim` is the cluster library's own command (sim_command.h).
#include "tessera/cli/commands.h"
#include "tessera/cluster/sim_command.h"

namespace tessera::cli {

int RunSim(int argc, char** argv) { return cluster::RunSimCommand(argc, argv); }

}  // namespace tessera::cli
