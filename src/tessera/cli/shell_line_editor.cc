#include "tessera/cli/shell_line_editor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// libedit's readline compatibility layer.
#include <editline/readline.h>

namespace tessera::cli::shell {
namespace {

const std::vector<std::string>& CommandWords() {
  static const auto* const words = new std::vector<std::string>{
      "append", "count", "create",    "delete", "describe", "drop", "exit",     "get",
      "help",   "increment", "ls",    "put",    "quit",     "scan", "set",      "truncate"};
  return *words;
}

bool Is(std::string_view a, std::initializer_list<std::string_view> any) {
  return std::find(any.begin(), any.end(), a) != any.end();
}

// The completion source and candidates of the editor in use (libedit calls plain functions).
// Only touched by the thread running LineEditor::ReadLine.
const CompletionSource* g_source = nullptr;
std::vector<std::string>* g_candidates = nullptr;

char* CandidateGenerator(const char* /*text*/, int state) {
  static size_t next = 0;
  if (state == 0) next = 0;
  if (g_candidates == nullptr || next >= g_candidates->size()) return nullptr;
  return strdup((*g_candidates)[next++].c_str());
}

char** Complete(const char* text, int /*start*/, int end) {
  rl_attempted_completion_over = 1;  // never fall back to file names
  if (g_source == nullptr || g_candidates == nullptr) return nullptr;
  const std::string line(rl_line_buffer, static_cast<size_t>(std::max(0, end)));
  *g_candidates = CompleteWord(line, *g_source);
  // Option words ending in '=' should not get a blank appended.
  rl_completion_append_character =
      g_candidates->size() == 1 && (g_candidates->front().ends_with('=') ||
                                    g_candidates->front().ends_with(':'))
          ? '\0'
          : ' ';
  if (g_candidates->empty()) return nullptr;
  return rl_completion_matches(text, CandidateGenerator);
}

}  // namespace

std::vector<std::string> CompleteWord(std::string_view line, const CompletionSource& source) {
  const size_t semi = line.rfind(';');
  if (semi != std::string_view::npos) line.remove_prefix(semi + 1);
  std::vector<std::string> words;
  std::string current;
  for (char c : line) {
    if (c == ' ' || c == '\t') {
      if (!current.empty()) words.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  const size_t n = words.size();  // complete words before the partial one
  std::vector<std::string> options;
  auto add_all = [&](const std::vector<std::string>& v) {
    options.insert(options.end(), v.begin(), v.end());
  };
  auto tables = [&] {
    if (source.tables) add_all(source.tables());
  };
  auto families = [&](const std::string& table, bool with_colon) {
    if (!source.families) return;
    for (const std::string& f : source.families(table)) options.push_back(with_colon ? f + ":" : f);
  };

  if (n == 0) {
    add_all(CommandWords());
  } else {
    const std::string& cmd = words[0];
    const std::string sub = n >= 2 ? words[1] : "";
    if (cmd == "help") {
      if (n == 1) add_all(CommandWords());
      if (n == 2 && Is(sub, {"create", "drop"})) options = {"family", "table"};
      if (n == 2 && sub == "set") options = {"gc"};
    } else if (Is(cmd, {"create", "drop"}) && n == 1) {
      options = {"family", "table"};
    } else if (cmd == "set" && n == 1) {
      options = {"gc"};
    } else if (Is(cmd, {"describe", "put", "get", "scan", "delete", "count", "truncate",
                        "increment", "append"}) &&
               n == 1) {
      tables();
    } else if ((cmd == "drop" || cmd == "set" || (cmd == "create" && sub == "family")) && n == 2) {
      tables();
    } else if (((cmd == "drop" && sub == "family") || cmd == "set") && n == 3) {
      families(words[2], false);
    } else if (cmd == "create" && sub == "family" && n >= 4) {
      options = {"super", "time-sorted", "maxversions=", "maxage=", "never", "and", "or"};
    } else if (cmd == "create" && sub == "table" && n >= 3) {
      options = {"families=", "splits="};
    } else if ((Is(cmd, {"delete", "increment", "append"}) && n == 3) ||
               (cmd == "put" && n >= 3)) {
      families(words[1], true);
    } else if (Is(cmd, {"get", "scan"}) && n >= (cmd == "get" ? 3u : 2u) &&
               current.starts_with("columns=")) {
      // columns=<family>[:<qualifier>],...: the families of the table, after the last ','.
      const size_t comma = current.rfind(',');
      const std::string before =
          comma == std::string::npos ? std::string("columns=") : current.substr(0, comma + 1);
      if (source.families) {
        for (const std::string& f : source.families(words[1])) {
          // Not a family listed already ("columns=info,inbox:q,<TAB>").
          const std::string listed = "," + before.substr(8);
          if (listed.find("," + f + ",") != std::string::npos ||
              listed.find("," + f + ":") != std::string::npos) {
            continue;
          }
          options.push_back(before + f);
        }
      }
    } else if (cmd == "get" && n >= 3) {
      options = {"columns=", "versions="};
    } else if (cmd == "scan" && n >= 2) {
      options = {"prefix=",   "start=",    "end=",    "limit=",  "columns=",
                 "versions=", "filter=",   "reverse", "keys-only"};
    } else if (cmd == "count" && n >= 2) {
      options = {"prefix=", "start=", "end="};
    } else if (cmd == "truncate" && n >= 2) {
      options = {"prefix="};
    }
  }
  std::vector<std::string> out;
  for (std::string& o : options) {
    if (o.starts_with(current)) out.push_back(std::move(o));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

LineEditor::LineEditor(std::string history_path, CompletionSource source)
    : history_path_(std::move(history_path)), source_(std::move(source)) {
  rl_readline_name = "tessera";
  // Only blanks and ';' separate words, so "prefix=" and "cf:q" complete as one word.
  static char kBreaks[] = " \t\n;";
  rl_completer_word_break_characters = kBreaks;
  rl_basic_word_break_characters = kBreaks;
  rl_attempted_completion_function = Complete;
  g_source = &source_;
  g_candidates = new std::vector<std::string>();
  using_history();
  stifle_history(kMaxHistory);
  if (!history_path_.empty()) (void)read_history(history_path_.c_str());
}

LineEditor::~LineEditor() {
  if (!history_path_.empty()) (void)write_history(history_path_.c_str());
  rl_attempted_completion_function = nullptr;
  g_source = nullptr;
  delete g_candidates;
  g_candidates = nullptr;
}

std::optional<std::string> LineEditor::ReadLine(const std::string& prompt) {
  char* line = readline(prompt.c_str());
  if (line == nullptr) return std::nullopt;
  std::string out(line);
  std::free(line);
  return out;
}

void LineEditor::AddHistory(const std::string& line) {
  if (line.find_first_not_of(" \t") == std::string::npos || line == last_added_) return;
  add_history(line.c_str());
  last_added_ = line;
}

}  // namespace tessera::cli::shell
