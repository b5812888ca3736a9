#include "tessera/cli/shell_parser.h"

#include <charconv>
#include <ctime>

namespace tessera::cli::shell {
namespace {

Status Error(std::string_view command, std::string_view what) {
  return absl::InvalidArgumentError(StrCat(command, ": ", what));
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

StatusOr<int64_t> ParseInt(std::string_view command, std::string_view what,
                           std::string_view text, int64_t min) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
    return Error(command, StrCat(what, " must be an integer, got \"", text, "\""));
  }
  if (v < min) return Error(command, StrCat(what, " must be at least ", min, ", got ", v));
  return v;
}

// `family[:rest]`. Family names cannot hold ':', so the first ':' ends the family even when
// quoted.
StatusOr<ColumnRef> ParseColumnRef(std::string_view command, const Word& word,
                                   bool need_qualifier) {
  ColumnRef ref;
  const size_t colon = word.text.find(':');
  ref.family = word.text.substr(0, colon);
  if (colon != std::string::npos) ref.qualifier = word.text.substr(colon + 1);
  if (ref.family.empty()) {
    return Error(command, StrCat("column \"", word.text, "\" has no family (want family:qualifier)"));
  }
  if (need_qualifier && !ref.qualifier.has_value()) {
    return Error(command, StrCat("column \"", word.text, "\" has no qualifier (want family:qualifier)"));
  }
  return ref;
}

StatusOr<std::vector<ColumnRef>> ParseColumnList(std::string_view command, const Word& value) {
  std::vector<ColumnRef> columns;
  for (const Word& item : value.Split(',')) {
    if (item.text.empty()) continue;
    ASSIGN_OR_RETURN(ColumnRef ref, ParseColumnRef(command, item, false));
    // "cf:" means the whole family, as in cbt.
    if (ref.qualifier.has_value() && ref.qualifier->empty()) ref.qualifier.reset();
    columns.push_back(std::move(ref));
  }
  if (columns.empty()) return Error(command, "columns= names no column");
  return columns;
}

// Splits at every `c`, quoted or not.
std::vector<std::string> SplitAll(std::string_view text, char c) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(c, start);
    parts.emplace_back(text.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

// `name[:gc][:super][:time-sorted]` (families= of create table). Names and GC rules hold no
// ',' or ':', so those separate even when quoted.
StatusOr<FamilyDef> ParseFamilyItem(std::string_view command, std::string_view item) {
  std::vector<std::string> parts = SplitAll(item, ':');
  FamilyDef def;
  def.name = parts[0];
  if (def.name.empty()) return Error(command, StrCat("family \"", item, "\" has no name"));
  bool have_gc = false;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    if (p == "super") {
      def.super_columns = true;
    } else if (p == "time-sorted") {
      def.time_sorted = true;
    } else if (have_gc) {
      return Error(command, StrCat("family \"", def.name, "\" has two GC rules"));
    } else {
      StatusOr<model::GcRule> rule = model::GcRule::Parse(p);
      if (!rule.ok()) {
        // The rule's parser quotes the rule: say it once.
        return Error(command,
                     StrCat("family \"", def.name, "\": ", std::string(rule.status().message())));
      }
      def.gc_rule = *std::move(rule);
      have_gc = true;
    }
  }
  return def;
}

// An option word: name=value, the name made of [a-z-] (quoted or not, so that a whole quoted
// "filter=value:a b" is an option too).
struct Option {
  std::string name;
  Word value;
};
std::optional<Option> AsOption(const Word& word) {
  const size_t eq = word.text.find('=');
  if (eq == std::string::npos || eq == 0) return std::nullopt;
  for (size_t i = 0; i < eq; ++i) {
    const char c = word.text[i];
    if (!((c >= 'a' && c <= 'z') || c == '-')) return std::nullopt;
  }
  return Option{word.text.substr(0, eq), word.Substr(eq + 1)};
}

struct Parser {
  std::string_view name;  // the command's name, for messages
  const std::vector<Word>& words;
  size_t next;  // first word not consumed

  bool done() const { return next >= words.size(); }

  StatusOr<std::string> Positional(std::string_view what) {
    if (done()) return Error(name, StrCat("missing ", what, " (usage: ", Usage(), ")"));
    return words[next++].text;
  }
  Status NoMore() {
    if (done()) return absl::OkStatus();
    return Error(name, StrCat("unexpected argument \"", words[next].text, "\" (usage: ", Usage(),
                              ")"));
  }
  std::string Usage() const {
    for (const CommandHelp& c : AllCommands()) {
      if (name == c.name) return c.usage;
    }
    return std::string(name);
  }
  Status UnknownOption(std::string_view option, std::string_view allowed) {
    return Error(name, StrCat("unknown option \"", option, "\" (allowed: ", allowed, ")"));
  }
};

// Options shared by scan, count, truncate: prefix= start= end=.
StatusOr<bool> TakeScopeOption(Parser& p, const Option& o, RowScope* scope) {
  if (o.name == "prefix") {
    scope->prefix = o.value.text;
  } else if (o.name == "start") {
    scope->start = o.value.text;
  } else if (o.name == "end") {
    scope->end = o.value.text;
  } else {
    return false;
  }
  if (scope->prefix.has_value() && (!scope->start.empty() || !scope->end.empty())) {
    return Error(p.name, "prefix= cannot be combined with start= or end=");
  }
  if (!scope->end.empty() && scope->end <= scope->start) {
    return Error(p.name, StrCat("end \"", scope->end, "\" must sort after start \"", scope->start,
                                "\""));
  }
  return true;
}

StatusOr<bool> TakeReadOption(Parser& p, const Option& o, Command* c) {
  if (o.name == "columns") {
    ASSIGN_OR_RETURN(c->columns, ParseColumnList(p.name, o.value));
    return true;
  }
  if (o.name == "versions") {
    ASSIGN_OR_RETURN(const int64_t v, ParseInt(p.name, "versions", o.value.text, 1));
    if (v > 1'000'000) return Error(p.name, "versions must be at most 1000000");
    c->versions = static_cast<int>(v);
    return true;
  }
  return false;
}

StatusOr<RegexFilter> ParseFilter(std::string_view command, std::string_view text) {
  static constexpr std::pair<std::string_view, RegexFilter::Target> kTargets[] = {
      {"row:", RegexFilter::Target::kRow},
      {"family:", RegexFilter::Target::kFamily},
      {"qualifier:", RegexFilter::Target::kQualifier},
      {"value:", RegexFilter::Target::kValue},
  };
  for (const auto& [prefix, target] : kTargets) {
    if (text.starts_with(prefix)) {
      RegexFilter f{target, std::string(text.substr(prefix.size()))};
      if (f.regex.empty()) return Error(command, StrCat("filter \"", text, "\" has an empty regex"));
      return f;
    }
  }
  return Error(command, StrCat("filter \"", text,
                               "\" must start with row:, family:, qualifier: or value:"));
}

StatusOr<CellWrite> ParseCellWrite(std::string_view command, const Word& word) {
  // The value starts after the first unquoted '=' that follows the family; a word without one
  // (quoted whole) splits at its first '=' after the family.
  const size_t colon = word.text.find(':');
  if (colon == std::string::npos) {
    return Error(command, StrCat("\"", word.text, "\" is not family:qualifier=value"));
  }
  size_t eq = word.FindUnquoted('=', colon + 1);
  if (eq == std::string::npos) eq = word.text.find('=', colon + 1);
  if (eq == std::string::npos) {
    return Error(command, StrCat("\"", word.text, "\" has no =value (want family:qualifier=value)"));
  }
  CellWrite write;
  ASSIGN_OR_RETURN(write.column, ParseColumnRef(command, word.Substr(0, eq), true));
  Word value = word.Substr(eq + 1);
  // A trailing unquoted @<time> is the timestamp; otherwise '@' belongs to the value.
  const size_t at = value.RFindUnquoted('@');
  if (at != std::string::npos) {
    StatusOr<int64_t> ts = ParseTimeMicros(std::string_view(value.text).substr(at + 1));
    if (ts.ok()) {
      write.timestamp_micros = *ts;
      value = value.Substr(0, at);
    }
  }
  write.value = value.text;
  return write;
}

}  // namespace

// ---- Word ----

size_t Word::FindUnquoted(char c, size_t from) const {
  for (size_t i = from; i < text.size(); ++i) {
    if (text[i] == c && !literal[i]) return i;
  }
  return std::string::npos;
}

size_t Word::RFindUnquoted(char c) const {
  for (size_t i = text.size(); i > 0; --i) {
    if (text[i - 1] == c && !literal[i - 1]) return i - 1;
  }
  return std::string::npos;
}

Word Word::Substr(size_t pos, size_t n) const {
  Word w;
  pos = std::min(pos, text.size());
  n = std::min(n, text.size() - pos);
  w.text = text.substr(pos, n);
  w.literal.assign(literal.begin() + static_cast<ptrdiff_t>(pos),
                   literal.begin() + static_cast<ptrdiff_t>(pos + n));
  return w;
}

std::vector<Word> Word::Split(char c) const {
  std::vector<Word> parts;
  size_t start = 0;
  while (true) {
    const size_t at = FindUnquoted(c, start);
    if (at == std::string::npos) {
      parts.push_back(Substr(start));
      return parts;
    }
    parts.push_back(Substr(start, at - start));
    start = at + 1;
  }
}

// ---- SplitCommands ----

StatusOr<std::vector<SplitCommand>> SplitCommands(std::string_view text, bool* incomplete) {
  if (incomplete != nullptr) *incomplete = false;
  std::vector<SplitCommand> commands;
  SplitCommand current;
  Word word;
  bool in_word = false;
  int line = 1;
  char quote = 0;  // '\'' or '"' while inside quotes
  int quote_line = 0;

  auto end_word = [&] {
    if (!in_word) return;
    if (current.words.empty()) current.line = line;
    current.words.push_back(std::move(word));
    word = Word();
    in_word = false;
  };
  auto end_command = [&] {
    end_word();
    if (!current.words.empty()) commands.push_back(std::move(current));
    current = SplitCommand();
  };
  auto add = [&](char c, bool literal) {
    if (!in_word && current.words.empty()) current.line = line;
    in_word = true;
    word.text += c;
    word.literal.push_back(literal);
  };

  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == '\'') {
      if (c == '\'') {
        quote = 0;
      } else {
        if (c == '\n') ++line;
        add(c, true);
      }
      continue;
    }
    if (c == '\\') {
      if (i + 1 >= text.size()) {
        return absl::InvalidArgumentError(StrCat("line ", line, ": '\\' at the end of the text"));
      }
      const char e = text[++i];
      switch (e) {
        case 'n': add('\n', true); break;
        case 't': add('\t', true); break;
        case 'r': add('\r', true); break;
        case '0': add('\0', true); break;
        case 'x': {
          const int hi = i + 1 < text.size() ? HexDigit(text[i + 1]) : -1;
          const int lo = i + 2 < text.size() ? HexDigit(text[i + 2]) : -1;
          if (hi < 0 || lo < 0) {
            return absl::InvalidArgumentError(
                StrCat("line ", line, ": \\x must be followed by two hex digits"));
          }
          add(static_cast<char>(hi * 16 + lo), true);
          i += 2;
          break;
        }
        case '\n':  // line continuation
          ++line;
          if (quote == '"') add('\n', true);
          break;
        default: add(e, true); break;
      }
      continue;
    }
    if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else {
        if (c == '\n') ++line;
        add(c, true);
      }
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      quote_line = line;
      add(0, true);  // an empty quoted word still makes a word
      word.text.pop_back();
      word.literal.pop_back();
      continue;
    }
    if (c == '#' && !in_word) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if (c == ';') {
      end_command();
      continue;
    }
    if (c == '\n') {
      end_command();
      ++line;
      continue;
    }
    if (IsBlank(c)) {
      end_word();
      continue;
    }
    add(c, false);
  }
  if (quote != 0) {
    if (incomplete != nullptr) *incomplete = true;
    return absl::InvalidArgumentError(
        StrCat("line ", quote_line, ": unterminated ", quote == '"' ? "\"" : "'", " quote"));
  }
  end_command();
  return commands;
}

// ---- ParseCommand ----

StatusOr<Command> ParseCommand(const std::vector<Word>& words) {
  if (words.empty()) return absl::InvalidArgumentError("empty command");
  Command c;
  const std::string& first = words[0].text;
  std::string name = first;
  size_t next = 1;
  if (first == "create" || first == "drop" || first == "set") {
    const std::string second = words.size() > 1 ? words[1].text : "";
    const bool ok = first == "set" ? second == "gc" : (second == "table" || second == "family");
    if (!ok) {
      return absl::InvalidArgumentError(
          first == "set" ? StrCat("unknown command \"set ", second, "\" (did you mean \"set gc\"?)")
                         : StrCat("unknown command \"", first, " ", second, "\" (\"", first,
                                  " table\" or \"", first, " family\")"));
    }
    name = StrCat(first, " ", second);
    next = 2;
  }
  Parser p{name, words, next};

  static const std::pair<std::string_view, CommandKind> kKinds[] = {
      {"help", CommandKind::kHelp},           {"?", CommandKind::kHelp},
      {"ls", CommandKind::kLs},               {"describe", CommandKind::kDescribe},
      {"create table", CommandKind::kCreateTable}, {"drop table", CommandKind::kDropTable},
      {"create family", CommandKind::kCreateFamily}, {"drop family", CommandKind::kDropFamily},
      {"set gc", CommandKind::kSetGc},        {"put", CommandKind::kPut},
      {"get", CommandKind::kGet},             {"scan", CommandKind::kScan},
      {"delete", CommandKind::kDelete},       {"count", CommandKind::kCount},
      {"truncate", CommandKind::kTruncate},   {"increment", CommandKind::kIncrement},
      {"append", CommandKind::kAppend},       {"quit", CommandKind::kQuit},
      {"exit", CommandKind::kQuit},
  };
  bool known = false;
  for (const auto& [n, kind] : kKinds) {
    if (n == name) {
      c.kind = kind;
      known = true;
    }
  }
  if (!known) {
    return absl::InvalidArgumentError(StrCat("unknown command \"", first, "\" (try \"help\")"));
  }

  switch (c.kind) {
    case CommandKind::kHelp: {
      std::string topic;
      for (size_t i = 1; i < words.size(); ++i) topic += (i > 1 ? " " : "") + words[i].text;
      if (!topic.empty() && FindHelp(topic).empty()) {
        return Error("help", StrCat("no command \"", topic, "\" (try \"help\")"));
      }
      c.topic = topic;
      return c;
    }
    case CommandKind::kLs:
    case CommandKind::kQuit: {
      RETURN_IF_ERROR(p.NoMore());
      return c;
    }
    case CommandKind::kDescribe:
    case CommandKind::kDropTable: {
      ASSIGN_OR_RETURN(c.table, p.Positional("table name"));
      RETURN_IF_ERROR(p.NoMore());
      return c;
    }
    case CommandKind::kCreateTable: {
      ASSIGN_OR_RETURN(c.table, p.Positional("table name"));
      for (; !p.done(); ++p.next) {
        std::optional<Option> o = AsOption(words[p.next]);
        if (!o.has_value()) {
          return p.UnknownOption(words[p.next].text, "families=, splits=, compaction=");
        }
        if (o->name == "families") {
          for (const std::string& item : SplitAll(o->value.text, ',')) {
            if (item.empty()) continue;
            ASSIGN_OR_RETURN(FamilyDef def, ParseFamilyItem(name, item));
            for (const FamilyDef& d : c.families) {
              if (d.name == def.name) {
                return Error(name, StrCat("family \"", def.name, "\" given twice"));
              }
            }
            c.families.push_back(std::move(def));
          }
        } else if (o->name == "splits") {
          for (const Word& item : o->value.Split(',')) {
            if (!item.text.empty()) c.splits.push_back(item.text);
          }
        } else if (o->name == "compaction") {
          if (o->value.text != "leveled" && o->value.text != "size_tiered") {
            return Error(name,
                         StrCat("compaction=", o->value.text, ": expected leveled or size_tiered"));
          }
          c.compaction = o->value.text;
        } else {
          return p.UnknownOption(o->name + "=", "families=, splits=, compaction=");
        }
      }
      return c;
    }
    case CommandKind::kCreateFamily: {
      ASSIGN_OR_RETURN(c.table, p.Positional("table name"));
      FamilyDef def;
      ASSIGN_OR_RETURN(def.name, p.Positional("family name"));
      std::string gc;
      for (; !p.done(); ++p.next) {
        const std::string& w = words[p.next].text;
        if (w == "super") {
          def.super_columns = true;
        } else if (w == "time-sorted") {
          def.time_sorted = true;
        } else {
          gc += (gc.empty() ? "" : " ") + w;
        }
      }
      if (!gc.empty()) {
        StatusOr<model::GcRule> rule = model::GcRule::Parse(gc);
        if (!rule.ok()) {
          return Error(name, std::string(rule.status().message()));
        }
        def.gc_rule = *std::move(rule);
      }
      c.families.push_back(std::move(def));
      return c;
    }
    case CommandKind::kDropFamily: {
      ASSIGN_OR_RETURN(c.table, p.Positional("table name"));
      ASSIGN_OR_RETURN(c.family, p.Positional("family name"));
      RETURN_IF_ERROR(p.NoMore());
      return c;
    }
    case CommandKind::kSetGc: {
      ASSIGN_OR_RETURN(c.table, p.Positional("table name"));
      ASSIGN_OR_RETURN(c.family, p.Positional("family name"));
      std::string gc;
      for (; !p.done(); ++p.next) gc += (gc.empty() ? "" : " ") + words[p.next].text;
      if (gc.empty()) return Error(name, StrCat("missing GC rule (usage: ", p.Usage(), ")"));
      StatusOr<model::GcRule> rule = model::GcRule::Parse(gc);
      if (!rule.ok()) {
        return Error(name, std::string(rule.status().message()));
      }
      c.gc_rule = *std::move(rule);
      return c;
    }
    case CommandKind::kPut: {
      ASSIGN_OR_RETURN(c.table, p.Positional("table name"));
      ASSIGN_OR_RETURN(c.row, p.Positional("row key"));
      if (p.done()) return Error(name, StrCat("missing family:qualifier=value (usage: ", p.Usage(), ")"));
      for (; !p.done(); ++p.next) {
        ASSIGN_OR_RETURN(CellWrite w, ParseCellWrite(name, words[p.next]));
        c.writes.push_back(std::move(w));
      }
      return c;
    }
    case CommandKind::kGet: {
      ASSIGN_OR_RETURN(c.table, p.Positional("table name"));
      ASSIGN_OR_RETURN(c.row, p.Positional("row key"));
      for (; !p.done(); ++p.next) {
        std::optional<Option> o = AsOption(words[p.next]);
        StatusOr<bool> taken = false;
        if (o.has_value()) taken = TakeReadOption(p, *o, &c);
        RETURN_IF_ERROR(taken.status());
        if (!*taken) return p.UnknownOption(words[p.next].text, "columns=, versions=");
      }
      return c;
    }
    case CommandKind::kScan: {
      ASSIGN_OR_RETURN(c.table, p.Positional("table name"));
      for (; !p.done(); ++p.next) {
        const Word& w = words[p.next];
        if (w.text == "reverse") {
          c.reverse = true;
          continue;
        }
        if (w.text == "keys-only") {
          c.keys_only = true;
          continue;
        }
        constexpr std::string_view kAllowed =
            "prefix=, start=, end=, limit=, columns=, versions=, filter=, reverse, keys-only";
        std::optional<Option> o = AsOption(w);
        if (!o.has_value()) return p.UnknownOption(w.text, kAllowed);
        StatusOr<bool> taken = TakeScopeOption(p, *o, &c.scope);
        if (taken.ok() && !*taken) taken = TakeReadOption(p, *o, &c);
        RETURN_IF_ERROR(taken.status());
        if (*taken) continue;
        if (o->name == "limit") {
          ASSIGN_OR_RETURN(c.limit, ParseInt(name, "limit", o->value.text, 0));
        } else if (o->name == "filter") {
          ASSIGN_OR_RETURN(RegexFilter f, ParseFilter(name, o->value.text));
          c.filters.push_back(std::move(f));
        } else {
          return p.UnknownOption(o->name + "=", kAllowed);
        }
      }
      return c;
    }
    case CommandKind::kCount:
    case CommandKind::kTruncate: {
      ASSIGN_OR_RETURN(c.table, p.Positional("table name"));
      const std::string_view allowed =
          c.kind == CommandKind::kCount ? "prefix=, start=, end=" : "prefix=";
      for (; !p.done(); ++p.next) {
        std::optional<Option> o = AsOption(words[p.next]);
        if (!o.has_value()) return p.UnknownOption(words[p.next].text, allowed);
        if (c.kind == CommandKind::kTruncate && o->name != "prefix") {
          return p.UnknownOption(o->name + "=", allowed);
        }
        ASSIGN_OR_RETURN(const bool taken, TakeScopeOption(p, *o, &c.scope));
        if (!taken) return p.UnknownOption(o->name + "=", allowed);
      }
      if (c.kind == CommandKind::kTruncate && c.scope.prefix.has_value() && c.scope.prefix->empty()) {
        return Error(name, "prefix= is empty (to delete every row, give no prefix)");
      }
      return c;
    }
    case CommandKind::kDelete: {
      ASSIGN_OR_RETURN(c.table, p.Positional("table name"));
      ASSIGN_OR_RETURN(c.row, p.Positional("row key"));
      if (!p.done()) {
        ASSIGN_OR_RETURN(ColumnRef ref, ParseColumnRef(name, words[p.next++], false));
        if (ref.qualifier.has_value() && ref.qualifier->empty()) ref.qualifier.reset();
        c.columns.push_back(std::move(ref));
      }
      RETURN_IF_ERROR(p.NoMore());
      return c;
    }
    case CommandKind::kIncrement:
    case CommandKind::kAppend: {
      ASSIGN_OR_RETURN(c.table, p.Positional("table name"));
      ASSIGN_OR_RETURN(c.row, p.Positional("row key"));
      if (p.done()) return Error(name, StrCat("missing family:qualifier (usage: ", p.Usage(), ")"));
      ASSIGN_OR_RETURN(ColumnRef ref, ParseColumnRef(name, words[p.next++], true));
      c.columns.push_back(std::move(ref));
      if (c.kind == CommandKind::kIncrement) {
        if (!p.done()) {
          ASSIGN_OR_RETURN(c.amount, ParseInt(name, "the amount", words[p.next++].text,
                                              std::numeric_limits<int64_t>::min()));
        }
      } else {
        ASSIGN_OR_RETURN(c.value, p.Positional("value"));
      }
      RETURN_IF_ERROR(p.NoMore());
      return c;
    }
  }
  return absl::InternalError("unhandled command");
}

StatusOr<int64_t> ParseTimeMicros(std::string_view text) {
  if (text.empty()) return absl::InvalidArgumentError("empty time");
  if (text.find_first_not_of("0123456789") == std::string_view::npos) {
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc()) return absl::InvalidArgumentError(StrCat("time \"", text, "\" is too large"));
    return v;
  }
  // YYYY-MM-DD[THH:MM[:SS[.fraction]]][Z]
  auto bad = [&] {
    return absl::InvalidArgumentError(StrCat(
        "bad time \"", text, "\" (want microseconds or YYYY-MM-DD[THH:MM[:SS[.ffffff]]][Z])"));
  };
  std::string_view s = text;
  if (s.ends_with('Z')) s.remove_suffix(1);
  auto number = [&](size_t pos, size_t len, int* out) {
    if (pos + len > s.size()) return false;
    int v = 0;
    for (size_t i = pos; i < pos + len; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
  };
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  int64_t micros = 0;
  if (!number(0, 4, &year) || s.size() < 10 || s[4] != '-' || !number(5, 2, &month) ||
      s[7] != '-' || !number(8, 2, &day)) {
    return bad();
  }
  size_t pos = 10;
  if (pos < s.size()) {
    if ((s[pos] != 'T' && s[pos] != ' ') || !number(pos + 1, 2, &hour) || pos + 3 >= s.size() ||
        s[pos + 3] != ':' || !number(pos + 4, 2, &minute)) {
      return bad();
    }
    pos += 6;
    if (pos < s.size()) {
      if (s[pos] != ':' || !number(pos + 1, 2, &second)) return bad();
      pos += 3;
      if (pos < s.size()) {
        if (s[pos] != '.' || pos + 1 >= s.size() || s.size() - pos - 1 > 6) return bad();
        int digits = 0;
        for (size_t i = pos + 1; i < s.size(); ++i, ++digits) {
          if (s[i] < '0' || s[i] > '9') return bad();
          micros = micros * 10 + (s[i] - '0');
        }
        for (; digits < 6; ++digits) micros *= 10;
      }
    }
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return bad();
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const time_t t = timegm(&tm);
  if (t < 0) return absl::InvalidArgumentError(StrCat("time \"", text, "\" is before 1970"));
  return static_cast<int64_t>(t) * 1'000'000 + micros;
}

// ---- help ----

const std::vector<CommandHelp>& AllCommands() {
  static const auto* const commands = new std::vector<CommandHelp>{
      {"help", "help [command]", "list the commands, or describe one", ""},
      {"ls", "ls", "list the tables", ""},
      {"describe", "describe <table>", "show a table's families, their kinds and GC rules", ""},
      {"create table",
       "create table <table> [families=<family>,...] [splits=<key>,...] "
       "[compaction=leveled|size_tiered]",
       "create a table",
       "  <family> is name[:gc][:super][:time-sorted], e.g. families=cf1:maxversions=2,cf2\n"
       "  splits are row keys where the table is split into tablets.\n"
       "  compaction: leveled (a read touches one file per level) or size_tiered (fewer\n"
       "  rewrites, for write-heavy tables); the node's --compaction when not given.\n"
       "  Quote a families= list whose GC rules hold blanks:\n"
       "    create table t \"families=cf1:maxage=1d or maxversions=2,cf2\""},
      {"drop table", "drop table <table>", "delete a table and all its data", ""},
      {"create family", "create family <table> <family> [gc rule] [super] [time-sorted]",
       "add a column family",
       "  super:       qualifiers are super:column; get/scan columns=fam:super reads a whole\n"
       "               super column\n"
       "  time-sorted: qualifiers are 8-byte big-endian times, newest first; written and shown\n"
       "               as times"},
      {"drop family", "drop family <table> <family>", "delete a column family and its data", ""},
      {"set gc", "set gc <table> <family> <rule>", "change a family's garbage-collection rule",
       "  rules: maxversions=N, maxage=<duration> (1d, 12h, 30m, 10s, 250ms), never,\n"
       "         <rule> and <rule>, <rule> or <rule>, parentheses ('and' binds tighter)"},
      {"put", "put <table> <row> <family>:<qualifier>=<value>[@<time>] ...",
       "write cells (one atomic row mutation)",
       "  <time> is microseconds or YYYY-MM-DDTHH:MM:SS[.ffffff]Z; without it the server's\n"
       "  clock is used. Quote a value to keep a literal @: cf:q=\"a@5\"."},
      {"get", "get <table> <row> [columns=<family>[:<qualifier>],...] [versions=N]",
       "read one row", ""},
      {"scan",
       "scan <table> [prefix=<p> | start=<key> end=<key>] [limit=N] [columns=...] [versions=N] "
       "[filter=<row|family|qualifier|value>:<regex> ...] [reverse] [keys-only]",
       "read rows in key order",
       "  Regexes are RE2, matching whole keys/names/values; a filter drops non-matching cells,\n"
       "  and rows left with no cells. Several filters must all match."},
      {"delete", "delete <table> <row> [<family>[:<qualifier>]]",
       "delete a row, a family of a row, or one column of a row",
       "  In a super-column family, <family>:<super> deletes the whole super column."},
      {"count", "count <table> [prefix=<p> | start=<key> end=<key>]", "count rows", ""},
      {"truncate", "truncate <table> [prefix=<p>]",
       "delete every row, or every row starting with a prefix", ""},
      {"increment", "increment <table> <row> <family>:<qualifier> [N]",
       "add N (default 1) to a 64-bit big-endian counter; prints the new value", ""},
      {"append", "append <table> <row> <family>:<qualifier> <value>",
       "append bytes to a cell's value; prints the new value", ""},
      {"quit", "quit", "leave the shell (also: exit, Ctrl-D)", ""},
  };
  return *commands;
}

std::vector<const CommandHelp*> FindHelp(std::string_view topic) {
  std::vector<const CommandHelp*> found;
  if (topic == "exit") topic = "quit";
  for (const CommandHelp& c : AllCommands()) {
    const std::string_view name = c.name;
    if (name == topic || (name.starts_with(topic) && name.size() > topic.size() &&
                          name[topic.size()] == ' ')) {
      found.push_back(&c);
    }
  }
  return found;
}

}  // namespace tessera::cli::shell
