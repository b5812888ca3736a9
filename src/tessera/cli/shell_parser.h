// The `tessera shell` command language: splitting text into commands and words, and parsing a
// command's words into a Command. No I/O and no server: a Command still names columns as typed
// (ColumnRef); the executor resolves them against the table's schema (super columns,
// time-sorted qualifiers). docs/shell.md is the user's description of the syntax.
//
// Lexical rules:
//   * Commands end at ';' or a newline. Words are separated by blanks.
//   * '...' quotes literally; "..." and bare text take escapes \\ \" \' \n \t \r \0 \xHH and
//     \<any char> (that char). Quotes may sit inside a word: cf:q="a b" is one word.
//   * '#' at the start of a word comments out the rest of the line.
//   * Quoted characters are never separators: in `cf:"a=b"=v` the qualifier is "a=b", and in
//     `cf:q="x@5"` the value is "x@5" (no timestamp).
//
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/model/gc_rule.h"
#include "tessera/util/status.h"

namespace tessera::cli::shell {

// One word of a command, with which of its bytes were quoted or escaped (those never act as
// separators). literal.size() == text.size().
struct Word {
  std::string text;
  std::vector<bool> literal;

  // Position of the first (last) unquoted `c` at or after `from`; npos if none.
  size_t FindUnquoted(char c, size_t from = 0) const;
  size_t RFindUnquoted(char c) const;
  Word Substr(size_t pos, size_t n = std::string::npos) const;
  // Splits at every unquoted `c`.
  std::vector<Word> Split(char c) const;
};

struct SplitCommand {
  std::vector<Word> words;
  int line = 1;  // 1-based line of the command's first word in the text
};

// Splits `text` into commands. InvalidArgument naming the line for an unterminated quote or a
// bad escape; `*incomplete` (if given) is set when the only problem is a quote still open at
// the end of the text, so an interactive reader can ask for another line.
StatusOr<std::vector<SplitCommand>> SplitCommands(std::string_view text,
                                                  bool* incomplete = nullptr);

enum class CommandKind {
  kHelp,
  kLs,
  kDescribe,
  kCreateTable,
  kDropTable,
  kCreateFamily,
  kDropFamily,
  kSetGc,
  kPut,
  kGet,
  kScan,
  kDelete,
  kCount,
  kTruncate,
  kIncrement,
  kAppend,
  kQuit,
};

// A column as typed: `family` alone, or `family:rest` where rest is a qualifier — or, in a
// super-column family, `super` or `super:column`; in a time-sorted family, a time.
struct ColumnRef {
  std::string family;
  std::optional<std::string> qualifier;  // nullopt: the whole family

  bool operator==(const ColumnRef&) const = default;
};

struct FamilyDef {
  std::string name;
  model::GcRule gc_rule;
  bool super_columns = false;
  bool time_sorted = false;

  bool operator==(const FamilyDef&) const = default;
};

struct CellWrite {
  ColumnRef column;                   // qualifier always set
  std::string value;
  std::optional<int64_t> timestamp_micros;  // nullopt: the server's time

  bool operator==(const CellWrite&) const = default;
};

// Which rows: a prefix, or [start, end) (either bound may be empty), or everything.
struct RowScope {
  std::optional<std::string> prefix;
  std::string start;
  std::string end;  // empty: to the end of the table

  bool operator==(const RowScope&) const = default;
};

struct RegexFilter {
  enum class Target { kRow, kFamily, kQualifier, kValue };
  Target target;
  std::string regex;

  bool operator==(const RegexFilter&) const = default;
};

struct Command {
  CommandKind kind = CommandKind::kHelp;
  std::string table;
  std::string row;
  std::string topic;                    // help
  std::vector<FamilyDef> families;      // create table; create family (one)
  std::vector<std::string> splits;      // create table
  std::string compaction;               // create table: "", "leveled" or "size_tiered"
  std::string family;                   // drop family, set gc
  model::GcRule gc_rule;                // set gc
  std::vector<CellWrite> writes;        // put
  std::vector<ColumnRef> columns;       // get, scan; delete / increment / append (one)
  int versions = 0;                     // get, scan: newest N per column; 0 = all
  int64_t limit = 0;                    // scan: at most N rows; 0 = all
  RowScope scope;                       // scan, count, truncate (prefix only)
  std::vector<RegexFilter> filters;     // scan
  bool reverse = false;                 // scan
  bool keys_only = false;               // scan
  int64_t amount = 1;                   // increment
  std::string value;                    // append
};

// Parses one command's words. InvalidArgument naming the command and the problem (unknown
// command, missing or extra arguments, unknown option, bad number, bad GC rule).
StatusOr<Command> ParseCommand(const std::vector<Word>& words);

// Parses a time: integer microseconds since the epoch, or an ISO-8601 UTC time
// YYYY-MM-DD[THH:MM[:SS[.fraction]]][Z].
StatusOr<int64_t> ParseTimeMicros(std::string_view text);

// The commands, for help and completion.
struct CommandHelp {
  const char* name;     // "create table"
  const char* usage;    // "create table <table> [families=f1[:gc][:super][:time-sorted],...] ..."
  const char* summary;  // one line
  const char* details;  // more lines, may be ""
};
const std::vector<CommandHelp>& AllCommands();
// The command named by `topic` ("scan", "create table"; "create" matches both create
// commands), or an empty vector.
std::vector<const CommandHelp*> FindHelp(std::string_view topic);

}  // namespace tessera::cli::shell
