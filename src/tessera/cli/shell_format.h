// How `tessera shell` prints bytes, times, rows and schemas. Everything returns text; nothing
// here writes to a stream.
//
// A row prints as a block: the key on its own line, then one line per cell,
//
//   <key>
//     <family>:<qualifier> @ <time>  "<value>"   [labels]
//
// with bytes escaped by EscapeBytes (values additionally quoted). Qualifiers of time-sorted
// families print as times, super-column qualifiers as super:column (shell_schema.h).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tessera/cli/shell_schema.h"
#include "tessera/client/row_merger.h"

namespace tessera::cli::shell {

// Printable ASCII and valid multi-byte UTF-8 as they are; '\\' as "\\\\", newline, tab and
// carriage return as \n \t \r, every other byte as \xHH. Also escapes `quote` (if not 0) as
// \<quote>. The result contains no control characters, so a terminal shows it safely.
std::string EscapeBytes(std::string_view bytes, char quote = 0);
// "..." around EscapeBytes(bytes, '"').
std::string QuoteBytes(std::string_view bytes);

// kIso: 2024-01-02T03:04:05.123Z (milliseconds; microseconds when not whole milliseconds);
// times outside years 1970..9999 print as plain microseconds. kMicros: the integer.
std::string FormatTime(int64_t micros, TimeFormat format);

// The cell line (without the trailing newline), e.g.  "  cf1:a @ 2024-...Z  \"v\"".
std::string FormatCell(const model::Cell& cell, const TableInfo& table, TimeFormat format);
// The whole block, ending in a newline; keys_only prints only the key line.
std::string FormatRow(const model::Row& row, const TableInfo& table, TimeFormat format,
                      bool keys_only = false);

// describe's output: a header line, then a line per family: name, kind, GC rule (cbt's
// notation), aligned in columns.
std::string FormatTableInfo(const TableInfo& table);

}  // namespace tessera::cli::shell
