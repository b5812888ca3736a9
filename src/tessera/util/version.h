// The version of this build and the git commit it was built from, for `--version` of the
// `tessera` binary and each subcommand. The version number is set in one place, the
// top-level CMakeLists.txt (project(... VERSION ...)); the commit is taken when CMake
// configures (`git rev-parse --short HEAD`; "unknown" outside a git checkout), so it names
// the commit the build directory was last configured at.
//
// Thread-safety: constants.
#pragma once

#include <string>
#include <string_view>

namespace tessera {

std::string_view Version();    // "0.1.0"
std::string_view GitCommit();  // "a61cdac", or "unknown"

// "<program> <version> (commit <commit>)", e.g. "tessera serve 0.1.0 (commit a61cdac)".
std::string VersionLine(std::string_view program);

}  // namespace tessera
