// Logging goes through spdlog; this header is the only place code reaches for it. Errors travel
// in Status; logs record state changes (file created, compaction done, recovery summary).
#pragma once

#include "spdlog/spdlog.h"

#define TLOG_DEBUG(...) ::spdlog::debug(__VA_ARGS__)
#define TLOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define TLOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define TLOG_ERROR(...) ::spdlog::error(__VA_ARGS__)
