#include "tessera/cli/shell_format.h"

#include <ctime>

#include "fmt/format.h"

namespace tessera::cli::shell {
namespace {

// Length of the valid UTF-8 multi-byte sequence starting at s[i] (2..4), or 0.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  size_t n = 0;
  uint32_t cp = 0;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2;
    cp = b0 & 0x1f;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    cp = b0 & 0x0f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<uint8_t>(s[i + k]);
    if ((b & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3f);
  }
  // Reject overlong forms, surrogates, out-of-range code points and C1 controls.
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
      (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f)) {
    return 0;
  }
  return n;
}

}  // namespace

std::string EscapeBytes(std::string_view bytes, char quote) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    const auto u = static_cast<uint8_t>(c);
    if (c == '\\' || (quote != 0 && c == quote)) {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else if (const size_t n = u >= 0x80 ? Utf8SequenceLength(bytes, i) : 0; n > 0) {
      out.append(bytes.substr(i, n));
      i += n - 1;
    } else {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

std::string QuoteBytes(std::string_view bytes) { return StrCat("\"", EscapeBytes(bytes, '"'), "\""); }

std::string FormatTime(int64_t micros, TimeFormat format) {
  // 253402300800 s = 10000-01-01T00:00:00Z.
  constexpr int64_t kMaxIsoMicros = 253'402'300'800LL * 1'000'000 - 1;
  if (format == TimeFormat::kMicros || micros < 0 || micros > kMaxIsoMicros) {
    return std::to_string(micros);
  }
  const time_t seconds = static_cast<time_t>(micros / 1'000'000);
  const int64_t fraction = micros % 1'000'000;
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  std::string out = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", tm.tm_year + 1900,
                                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  if (fraction % 1000 == 0) {
    out += fmt::format(".{:03}Z", fraction / 1000);
  } else {
    out += fmt::format(".{:06}Z", fraction);
  }
  return out;
}

std::string FormatCell(const model::Cell& cell, const TableInfo& table, TimeFormat format) {
  std::string line =
      StrCat("  ", EscapeBytes(cell.family), ":",
             DisplayQualifier(table.Find(cell.family), cell.qualifier, format), " @ ",
             FormatTime(cell.timestamp_micros, format), "  ", QuoteBytes(cell.value));
  if (!cell.labels.empty()) {
    line += "  [";
    for (size_t i = 0; i < cell.labels.size(); ++i) {
      if (i > 0) line += ",";
      line += EscapeBytes(cell.labels[i]);
    }
    line += "]";
  }
  return line;
}

std::string FormatRow(const model::Row& row, const TableInfo& table, TimeFormat format,
                      bool keys_only) {
  std::string out = EscapeBytes(row.key);
  out += '\n';
  if (keys_only) return out;
  for (const model::Cell& cell : row.cells) {
    out += FormatCell(cell, table, format);
    out += '\n';
  }
  return out;
}

std::string FormatTableInfo(const TableInfo& table) {
  size_t name_width = 6;  // "FAMILY"
  for (const auto& [name, family] : table.families) name_width = std::max(name_width, name.size());
  std::string out = StrCat("table ", table.name,
                           table.deletion_protection ? " (deletion protection on)" : "", "\n");
  if (table.families.empty()) {
    out += "  (no column families)\n";
    return out;
  }
  constexpr size_t kKindWidth = 25;  // "super-columns,time-sorted"
  out += fmt::format("  {:<{}}  {:<{}}  {}\n", "FAMILY", name_width, "KIND", kKindWidth, "GC RULE");
  for (const auto& [name, family] : table.families) {
    std::string kind = "plain";
    if (family.super_columns && family.time_sorted) {
      kind = "super-columns,time-sorted";
    } else if (family.super_columns) {
      kind = "super-columns";
    } else if (family.time_sorted) {
      kind = "time-sorted";
    }
    out += fmt::format("  {:<{}}  {:<{}}  {}\n", name, name_width, kind, kKindWidth,
                       family.gc_text);
  }
  return out;
}

}  // namespace tessera::cli::shell
