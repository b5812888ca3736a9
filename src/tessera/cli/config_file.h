// `--config FILE`: flags of a CLI11 command read from a TOML file whose top-level keys are the
// command's long flag names without the dashes ("data-dir = \"/var/lib/tessera\""). Unlike
// CLI11's own reader, nothing in the file passes silently:
//   - a TOML syntax error (unterminated string, duplicate key, ...) is refused with its line;
//   - an unknown key (or a table) is refused, naming the closest valid key:
//       tessera.toml:3: unknown key 'data_dir'; did you mean 'data-dir'?
//   - each value goes through the same conversion and validators as the flag on the command
//     line, and is refused with the file, line and key:
//       tessera.toml:4: bad value for 'memtable-mb': Value 0 not in range 1 to 4096
// Flags given on the command line win: their keys in the file are checked the same way, but
// the command line's values stay.
//
// Thread-safety: call from the thread that parses the command line.
#pragma once

#include <string>

#include "CLI/CLI.hpp"
#include "tessera/util/status.h"

namespace tessera::cli {

// Applies the file at `path` to `app`'s options. InvalidArgument (the file's name, the line,
// the key) on the first problem, in line order; Unavailable if the file cannot be read.
// --help, --version and the option named `config_flag` are not configurable from the file.
// REQUIRES: app->parse() has run on the command line and succeeded.
Status ApplyConfigFile(CLI::App* app, const std::string& path,
                       const std::string& config_flag = "--config");

// The Levenshtein distance of two strings (for "did you mean"); exposed for tests.
size_t EditDistance(std::string_view a, std::string_view b);

}  // namespace tessera::cli
