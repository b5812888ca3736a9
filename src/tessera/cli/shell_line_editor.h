// Line editing for the interactive `tessera shell`: libedit (through its readline-compatible
// interface) with history kept in a file and tab completion of command words, option names,
// table names and family names.
//
// CompleteWord is the completion logic, separate from libedit so it can be tested. It splits
// the text after the last ';' on blanks (quotes are not interpreted there) and completes the
// last, partial word from its position in the command:
//   first word            command names
//   create|drop <_>       table, family        set <_>   gc
//   <table> positions     table names (describe, put, get, scan, delete, count, truncate,
//                         increment, append; drop table, create/drop family, set gc)
//   <family> positions    family names (drop family, set gc) or "family:" (put, delete,
//                         increment, append)
//   options               "prefix=", "limit=", "reverse", ... for the command
//   columns=<_>           family names of the table (get, scan), after the last ',' too:
//                         "columns=in" -> "columns=inbox", "columns=info"
//
// Thread-safety: LineEditor drives libedit's process-wide readline state: at most one may
// exist at a time, used by one thread. CompleteWord is pure.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::cli::shell {

struct CompletionSource {
  std::function<std::vector<std::string>()> tables;
  std::function<std::vector<std::string>(const std::string& table)> families;
};

// Candidates (whole words) for the last word of `line` (the text before the cursor), sorted,
// each starting with that partial word.
std::vector<std::string> CompleteWord(std::string_view line, const CompletionSource& source);

class LineEditor {
 public:
  // Loads history from `history_path` (if it exists; empty path = no history file) and
  // installs completion from `source`, which must stay valid while the editor exists.
  LineEditor(std::string history_path, CompletionSource source);
  // Saves the history (the last kMaxHistory lines).
  ~LineEditor();
  LineEditor(const LineEditor&) = delete;
  LineEditor& operator=(const LineEditor&) = delete;

  static constexpr int kMaxHistory = 1000;

  // The next line without its newline; nullopt at the end of input (Ctrl-D).
  std::optional<std::string> ReadLine(const std::string& prompt);
  // Adds a non-blank line to the history (not twice in a row).
  void AddHistory(const std::string& line);

 private:
  const std::string history_path_;
  CompletionSource source_;
  std::string last_added_;
};

}  // namespace tessera::cli::shell
