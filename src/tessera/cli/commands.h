// The `tessera` binary's subcommands. Each is a library of its own (one .cmake fragment per
// command in this folder); main.cc dispatches on the first argument.
//
// Every Run* function takes the arguments after the subcommand name (argv[0] is the
// subcommand, e.g. "serve"), prints its own --help, and returns the process exit code:
// 0 success, 1 a runtime failure (with a message on stderr), 2 a usage error.
#pragma once

namespace tessera::cli {

int RunServe(int argc, char** argv);  // serve.cmake: the Bigtable-compatible server
int RunShell(int argc, char** argv);  // shell.cmake: the interactive / scripted data shell
int RunBench(int argc, char** argv);  // bench.cmake: YCSB-style load against any endpoint
int RunSim(int argc, char** argv);    // sim.cmake:   the cluster simulator (sim_command.h)
int RunAdmin(int argc, char** argv);  // admin.cmake: operator commands (status)

}  // namespace tessera::cli
