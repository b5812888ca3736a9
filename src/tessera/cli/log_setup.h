// Process-wide logging set-up for the `tessera` commands: level and format (text for people,
// json — one object per line — for log collectors), always to stderr; and gRPC's own log
// lines routed through the same logger, so nothing reaches stderr in gRPC's raw format
// ("E1201 12:00:00.000 chttp2_server.cc:...").
//
// Thread-safety: call these early, before other threads log (main() calls
// InstallProcessLogging before any subcommand runs; a subcommand may call SetUpLogging once
// after parsing its flags).
#pragma once

#include <string>

#include "tessera/util/status.h"

namespace tessera::cli {

// level: trace|debug|info|warn|error|off. format: text|json. InvalidArgument otherwise.
// Also sets which gRPC lines are passed on: errors always, gRPC's info lines at debug/trace
// (unless $GRPC_VERBOSITY says otherwise).
Status SetUpLogging(const std::string& level, const std::string& format);

// The defaults (info, text) and gRPC's log function: gRPC errors become "grpc: ..." warn lines,
// its info and debug lines debug lines. REQUIRES: called before any gRPC call.
void InstallProcessLogging();

}  // namespace tessera::cli
