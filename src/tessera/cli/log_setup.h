// Process-wide logging set-up for the `tessera` commands: level and format (text for people,
// json — one object per line — for log collectors), always to stderr.
//
// Thread-safety: call once, early, before other threads log.
#pragma once

#include <string>

#include "tessera/util/status.h"

namespace tessera::cli {

// level: trace|debug|info|warn|error|off. format: text|json. InvalidArgument otherwise.
Status SetUpLogging(const std::string& level, const std::string& format);

}  // namespace tessera::cli
