#include "tessera/cli/shell_parser.h"

#include <gtest/gtest.h>

namespace tessera::cli::shell {
namespace {

std::vector<std::string> Texts(const SplitCommand& c) {
  std::vector<std::string> out;
  for (const Word& w : c.words) out.push_back(w.text);
  return out;
}

StatusOr<Command> Parse(std::string_view text) {
  auto split = SplitCommands(text);
  if (!split.ok()) return split.status();
  if (split->size() != 1) return absl::InternalError("want exactly one command");
  return ParseCommand((*split)[0].words);
}

// The error message of parsing `text`, which must fail.
std::string ErrorOf(std::string_view text) {
  auto c = Parse(text);
  EXPECT_FALSE(c.ok()) << text;
  return c.ok() ? "" : std::string(c.status().message());
}

TEST(ShellSplitTest, CommandsEndAtSemicolonsAndNewlines) {
  auto split = SplitCommands("ls; describe t\n\n  scan t limit=3 ;;\n# comment\nquit # bye");
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_EQ(split->size(), 4u);
  EXPECT_EQ(Texts((*split)[0]), (std::vector<std::string>{"ls"}));
  EXPECT_EQ(Texts((*split)[1]), (std::vector<std::string>{"describe", "t"}));
  EXPECT_EQ(Texts((*split)[2]), (std::vector<std::string>{"scan", "t", "limit=3"}));
  EXPECT_EQ((*split)[2].line, 3);
  EXPECT_EQ(Texts((*split)[3]), (std::vector<std::string>{"quit"}));
  EXPECT_EQ((*split)[3].line, 5);
}

TEST(ShellSplitTest, QuotesAndEscapes) {
  auto split = SplitCommands(R"(put t 'a b;c' cf:q="x y\n\x00\"" it\'s '' a#b #comment)");
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_EQ(split->size(), 1u);
  const std::vector<Word>& w = (*split)[0].words;
  ASSERT_EQ(w.size(), 7u);
  EXPECT_EQ(w[2].text, "a b;c");
  EXPECT_EQ(w[3].text, std::string("cf:q=x y\n\0\"", 11));
  EXPECT_FALSE(w[3].literal[4]);  // the '=' was not quoted
  EXPECT_TRUE(w[3].literal[5]);
  EXPECT_EQ(w[4].text, "it's");
  EXPECT_EQ(w[5].text, "");  // an empty quoted word is a word
  EXPECT_EQ(w[6].text, "a#b");  // '#' starts a comment only at a word's start
}

TEST(ShellSplitTest, Errors) {
  bool incomplete = false;
  auto split = SplitCommands("put t r 'open", &incomplete);
  EXPECT_FALSE(split.ok());
  EXPECT_TRUE(incomplete);
  EXPECT_NE(split.status().message().find("unterminated"), std::string::npos);
  split = SplitCommands("get t \\xZZ", &incomplete);
  EXPECT_FALSE(split.ok());
  EXPECT_FALSE(incomplete);
  EXPECT_NE(split.status().message().find("hex"), std::string::npos);
  EXPECT_FALSE(SplitCommands("ls \\").ok());
  // A backslash-newline continues the line.
  split = SplitCommands("scan t \\\n limit=1");
  ASSERT_TRUE(split.ok());
  ASSERT_EQ(split->size(), 1u);
  EXPECT_EQ((*split)[0].words.size(), 3u);
}

TEST(ShellParseTest, UnknownCommandsAndArguments) {
  EXPECT_NE(ErrorOf("frobnicate").find("unknown command \"frobnicate\""), std::string::npos);
  EXPECT_NE(ErrorOf("create index x").find("\"create table\" or \"create family\""),
            std::string::npos);
  EXPECT_NE(ErrorOf("set policy t f").find("set gc"), std::string::npos);
  EXPECT_NE(ErrorOf("ls extra").find("unexpected argument \"extra\""), std::string::npos);
  EXPECT_NE(ErrorOf("describe").find("missing table name"), std::string::npos);
  EXPECT_NE(ErrorOf("get t").find("missing row key"), std::string::npos);
  EXPECT_NE(ErrorOf("scan t bogus=1").find("unknown option \"bogus=\""), std::string::npos);
  EXPECT_NE(ErrorOf("scan t limit=-1").find("limit must be at least 0"), std::string::npos);
  EXPECT_NE(ErrorOf("scan t limit=x").find("limit must be an integer"), std::string::npos);
  EXPECT_NE(ErrorOf("scan t prefix=a start=b").find("cannot be combined"), std::string::npos);
  EXPECT_NE(ErrorOf("scan t start=b end=a").find("must sort after"), std::string::npos);
  EXPECT_NE(ErrorOf("get t r versions=0").find("versions must be at least 1"), std::string::npos);
  EXPECT_NE(ErrorOf("help nothing").find("no command \"nothing\""), std::string::npos);
}

TEST(ShellParseTest, Admin) {
  auto c = Parse("create table t1 \"families=cf1:maxversions=2,cf2,s:super:time-sorted\" splits=g,p");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, CommandKind::kCreateTable);
  EXPECT_EQ(c->table, "t1");
  ASSERT_EQ(c->families.size(), 3u);
  EXPECT_EQ(c->families[0], (FamilyDef{"cf1", model::GcRule::MaxNumVersions(2), false, false}));
  EXPECT_EQ(c->families[1], (FamilyDef{"cf2", model::GcRule::None(), false, false}));
  EXPECT_EQ(c->families[2], (FamilyDef{"s", model::GcRule::None(), true, true}));
  EXPECT_EQ(c->splits, (std::vector<std::string>{"g", "p"}));

  c = Parse("create table t \"families=cf:maxage=1d or maxversions=3\"");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->families[0].gc_rule.kind(), model::GcRule::Kind::kUnion);
  EXPECT_NE(ErrorOf("create table t families=cf:maxversions=0").find("bad GC rule"),
            std::string::npos);
  EXPECT_NE(ErrorOf("create table t families=a,a").find("given twice"), std::string::npos);
  EXPECT_NE(ErrorOf("create table t cf1").find("unknown option"), std::string::npos);
  c = Parse("create table t families=cf compaction=size_tiered");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->compaction, "size_tiered");
  EXPECT_EQ(Parse("create table t")->compaction, "");
  EXPECT_NE(ErrorOf("create table t compaction=tiered").find("expected leveled or size_tiered"),
            std::string::npos);

  c = Parse("create family t f maxage=7d and maxversions=2 super");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, CommandKind::kCreateFamily);
  ASSERT_EQ(c->families.size(), 1u);
  EXPECT_EQ(c->families[0].name, "f");
  EXPECT_TRUE(c->families[0].super_columns);
  EXPECT_FALSE(c->families[0].time_sorted);
  EXPECT_EQ(c->families[0].gc_rule.kind(), model::GcRule::Kind::kIntersection);

  c = Parse("set gc t f maxversions=1");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->gc_rule, model::GcRule::MaxNumVersions(1));
  EXPECT_EQ(c->family, "f");
  EXPECT_NE(ErrorOf("set gc t f").find("missing GC rule"), std::string::npos);
  EXPECT_NE(ErrorOf("set gc t f maxversions=").find("bad GC rule"), std::string::npos);
  // Issue 9: each error says its thing once (was: bad GC rule "x": bad gc rule "x" at ...).
  EXPECT_EQ(ErrorOf("set gc t f maxversions=0"),
            "set gc: bad GC rule \"maxversions=0\" at position 12: expected a number of versions "
            ">= 1 near \"0\"");
  EXPECT_EQ(ErrorOf("set gc t f maxage=0"),
            "set gc: bad GC rule \"maxage=0\" at position 7: bad duration \"0\": missing unit "
            "(d, h, m, s, ms, us)");
  EXPECT_EQ(ErrorOf("create family t f bogus"),
            "create family: bad GC rule \"bogus\" at position 0: expected a rule (maxversions=N, "
            "maxage=D, never, or parentheses) near \"bogus\"");
  EXPECT_EQ(ErrorOf("create table t families=cf:maxversions=0"),
            "create table: family \"cf\": bad GC rule \"maxversions=0\" at position 12: expected a "
            "number of versions >= 1 near \"0\"");

  c = Parse("drop family t f");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, CommandKind::kDropFamily);
  c = Parse("drop table t");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, CommandKind::kDropTable);
  c = Parse("truncate t prefix=user#");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->scope.prefix, "user#");
  EXPECT_NE(ErrorOf("truncate t prefix=").find("is empty"), std::string::npos);
  EXPECT_NE(ErrorOf("truncate t start=a").find("unknown option"), std::string::npos);
}

TEST(ShellParseTest, Put) {
  auto c = Parse(R"(put t r1 cf:a=v1 cf:b=v2@5000 cf:c="x@5" cf:"q=1"=v cf:e=user@example.com)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->row, "r1");
  ASSERT_EQ(c->writes.size(), 5u);
  EXPECT_EQ(c->writes[0], (CellWrite{{"cf", "a"}, "v1", std::nullopt}));
  EXPECT_EQ(c->writes[1], (CellWrite{{"cf", "b"}, "v2", 5000}));
  EXPECT_EQ(c->writes[2], (CellWrite{{"cf", "c"}, "x@5", std::nullopt}));  // quoted '@'
  EXPECT_EQ(c->writes[3], (CellWrite{{"cf", "q=1"}, "v", std::nullopt}));  // quoted '='
  EXPECT_EQ(c->writes[4].value, "user@example.com");  // not a time: part of the value
  c = Parse("put t r \"cf:a=hello world\" cf:t=x@2024-01-02T03:04:05.5Z cf:s=super:col=v");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->writes[0], (CellWrite{{"cf", "a"}, "hello world", std::nullopt}));
  EXPECT_EQ(c->writes[1].timestamp_micros, 1704164645500000);
  EXPECT_EQ(c->writes[2].column, (ColumnRef{"cf", "s"}));
  EXPECT_EQ(c->writes[2].value, "super:col=v");
  c = Parse("put t r cf:=empty cf:q=");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->writes[0].column, (ColumnRef{"cf", ""}));
  EXPECT_EQ(c->writes[1].value, "");
  EXPECT_NE(ErrorOf("put t r").find("missing family:qualifier=value"), std::string::npos);
  EXPECT_NE(ErrorOf("put t r novalue").find("is not family:qualifier=value"), std::string::npos);
  EXPECT_NE(ErrorOf("put t r cf:q").find("has no =value"), std::string::npos);
  EXPECT_NE(ErrorOf("put t r :q=v").find("has no family"), std::string::npos);
}

TEST(ShellParseTest, GetAndScan) {
  auto c = Parse("get t r columns=cf1:a,cf2,cf3:,s:super1 versions=2");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, CommandKind::kGet);
  EXPECT_EQ(c->columns, (std::vector<ColumnRef>{{"cf1", "a"}, {"cf2", std::nullopt},
                                                {"cf3", std::nullopt}, {"s", "super1"}}));
  EXPECT_EQ(c->versions, 2);
  EXPECT_NE(ErrorOf("get t r limit=1").find("unknown option \"limit=1\""), std::string::npos);

  c = Parse("scan t prefix=user# limit=10 filter=value:a.* \"filter=qualifier:x y\" reverse "
            "keys-only");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->scope.prefix, "user#");
  EXPECT_EQ(c->limit, 10);
  ASSERT_EQ(c->filters.size(), 2u);
  EXPECT_EQ(c->filters[0], (RegexFilter{RegexFilter::Target::kValue, "a.*"}));
  EXPECT_EQ(c->filters[1], (RegexFilter{RegexFilter::Target::kQualifier, "x y"}));
  EXPECT_TRUE(c->reverse);
  EXPECT_TRUE(c->keys_only);
  c = Parse("scan t start=a end=b filter=row:a.");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->scope, (RowScope{std::nullopt, "a", "b"}));
  EXPECT_NE(ErrorOf("scan t filter=a.*").find("must start with row:"), std::string::npos);
  EXPECT_NE(ErrorOf("scan t filter=value:").find("empty regex"), std::string::npos);
  EXPECT_NE(ErrorOf("scan t columns=,").find("names no column"), std::string::npos);
  c = Parse("count t start=k");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->scope.start, "k");
}

TEST(ShellParseTest, DeleteIncrementAppend) {
  auto c = Parse("delete t r");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->columns.empty());
  c = Parse("delete t r cf");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->columns, (std::vector<ColumnRef>{{"cf", std::nullopt}}));
  c = Parse("delete t r cf:q");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->columns, (std::vector<ColumnRef>{{"cf", "q"}}));
  EXPECT_NE(ErrorOf("delete t r cf:q extra").find("unexpected argument"), std::string::npos);

  c = Parse("increment t r cf:n");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->amount, 1);
  c = Parse("increment t r cf:n -5");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->amount, -5);
  EXPECT_NE(ErrorOf("increment t r cf").find("has no qualifier"), std::string::npos);
  EXPECT_NE(ErrorOf("increment t r cf:n x").find("must be an integer"), std::string::npos);
  c = Parse("append t r cf:s 'more text'");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->value, "more text");
  EXPECT_NE(ErrorOf("append t r cf:s").find("missing value"), std::string::npos);
}

TEST(ShellParseTest, HelpAndQuit) {
  auto c = Parse("help");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->topic, "");
  c = Parse("help create");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->topic, "create");
  EXPECT_EQ(FindHelp("create").size(), 2u);
  EXPECT_EQ(FindHelp("create table").size(), 1u);
  EXPECT_EQ(FindHelp("exit").size(), 1u);
  EXPECT_EQ(Parse("exit")->kind, CommandKind::kQuit);
  // Every command has help, and every help entry parses as a command name.
  for (const CommandHelp& h : AllCommands()) {
    EXPECT_EQ(FindHelp(h.name).size(), 1u) << h.name;
    EXPECT_TRUE(std::string_view(h.usage).starts_with(h.name)) << h.name;
  }
}

TEST(ShellParseTest, Times) {
  EXPECT_EQ(*ParseTimeMicros("1234"), 1234);
  EXPECT_EQ(*ParseTimeMicros("1970-01-02"), 86'400'000'000LL);
  EXPECT_EQ(*ParseTimeMicros("2024-01-02T03:04:05Z"), 1704164645000000LL);
  EXPECT_EQ(*ParseTimeMicros("2024-01-02T03:04:05.000123Z"), 1704164645000123LL);
  EXPECT_EQ(*ParseTimeMicros("2024-01-02T03:04"), 1704164640000000LL);
  EXPECT_FALSE(ParseTimeMicros("").ok());
  EXPECT_FALSE(ParseTimeMicros("2024-13-01").ok());
  EXPECT_FALSE(ParseTimeMicros("2024-01-02T03:04:05.1234567Z").ok());
  EXPECT_FALSE(ParseTimeMicros("yesterday").ok());
  EXPECT_FALSE(ParseTimeMicros("99999999999999999999").ok());
}

}  // namespace
}  // namespace tessera::cli::shell
