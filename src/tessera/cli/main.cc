// tessera: one binary, several subcommands (commands.h).
#include <cstdio>
#include <cstring>
#include <string_view>

#include "tessera/cli/commands.h"
#include "tessera/cli/log_setup.h"
#include "tessera/util/version.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int, char**);
  const char* summary;
};

constexpr Command kCommands[] = {
    {"serve", tessera::cli::RunServe, "run a node: the Bigtable v2 API over local storage"},
    {"shell", tessera::cli::RunShell, "read and write data: interactive, -e '...' or a file"},
    {"bench", tessera::cli::RunBench, "YCSB-style load against any Bigtable-API endpoint"},
    {"admin", tessera::cli::RunAdmin, "operator commands: status of every node of the cluster"},
    {"sim", tessera::cli::RunSim, "simulate gossip and failure detection on N nodes"},
};

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: tessera <command> [flags]   (tessera <command> --help)\n"
               "       tessera --version\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-7s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything can call gRPC: its log lines go through Tessera's logger.
  tessera::cli::InstallProcessLogging();
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  const std::string_view name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    Usage(stdout);
    return 0;
  }
  if (name == "--version" || name == "version") {
    std::printf("%s\n", tessera::VersionLine("tessera").c_str());
    return 0;
  }
  for (const Command& c : kCommands) {
    if (name == c.name) return c.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "tessera: unknown command \"%s\"\n\n", argv[1]);
  Usage(stderr);
  return 2;
}
