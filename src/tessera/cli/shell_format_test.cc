// Formatting, schema resolution and the progress display of `tessera shell`.
#include "tessera/cli/shell_format.h"

#include <gtest/gtest.h>

#include "tessera/cli/shell_progress.h"
#include "tessera/cli/shell_schema.h"
#include "tessera/client/bigtable_client.h"

namespace tessera::cli::shell {
namespace {

namespace btadmin = ::google::bigtable::admin::v2;

TEST(ShellFormatTest, EscapeBytes) {
  EXPECT_EQ(EscapeBytes("plain text"), "plain text");
  EXPECT_EQ(EscapeBytes(std::string("a\0b\n\t\r\\\x7f\xff", 9)), "a\\x00b\\n\\t\\r\\\\\\x7f\\xff");
  EXPECT_EQ(EscapeBytes("caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac");  // valid UTF-8
  EXPECT_EQ(EscapeBytes("\xc3"), "\\xc3");          // truncated sequence
  EXPECT_EQ(EscapeBytes("\xc0\xaf"), "\\xc0\\xaf");  // overlong form
  EXPECT_EQ(EscapeBytes("\xc2\x85"), "\\xc2\\x85");  // C1 control
  EXPECT_EQ(QuoteBytes("say \"hi\""), "\"say \\\"hi\\\"\"");
  EXPECT_EQ(QuoteBytes(""), "\"\"");
}

TEST(ShellFormatTest, FormatTime) {
  EXPECT_EQ(FormatTime(0, TimeFormat::kIso), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatTime(1704164645123000, TimeFormat::kIso), "2024-01-02T03:04:05.123Z");
  EXPECT_EQ(FormatTime(1704164645000123, TimeFormat::kIso), "2024-01-02T03:04:05.000123Z");
  EXPECT_EQ(FormatTime(1704164645123000, TimeFormat::kMicros), "1704164645123000");
  EXPECT_EQ(FormatTime(-1, TimeFormat::kIso), "-1");
  EXPECT_EQ(FormatTime(std::numeric_limits<int64_t>::max(), TimeFormat::kIso),
            "9223372036854775807");
  // Round trip through the parser.
  EXPECT_EQ(*ParseTimeMicros(FormatTime(1704164645000123, TimeFormat::kIso)), 1704164645000123);
}

TableInfo SampleTable() {
  btadmin::Table t;
  auto& families = *t.mutable_column_families();
  families["cf"].mutable_gc_rule()->set_max_num_versions(2);
  families["s"].mutable_tessera_options()->set_super_columns(true);
  families["ts"].mutable_tessera_options()->set_time_sorted(true);
  families["sts"].mutable_tessera_options()->set_super_columns(true);
  families["sts"].mutable_tessera_options()->set_time_sorted(true);
  auto* u = families["sts"].mutable_gc_rule()->mutable_union_();
  u->add_rules()->mutable_max_age()->set_seconds(86400);
  u->add_rules()->set_max_num_versions(3);
  return TableInfoFromProto("t", t);
}

TEST(ShellFormatTest, TableInfo) {
  const TableInfo info = SampleTable();
  ASSERT_NE(info.Find("cf"), nullptr);
  EXPECT_EQ(info.Find("cf")->gc_text, "versions() > 2");
  EXPECT_EQ(info.Find("s")->gc_text, "never");
  EXPECT_EQ(info.Find("sts")->gc_text, "(age() > 1d || versions() > 3)");
  EXPECT_EQ(info.Find("nope"), nullptr);
  EXPECT_EQ(FormatTableInfo(info),
            "table t\n"
            "  FAMILY  KIND                       GC RULE\n"
            "  cf      plain                      versions() > 2\n"
            "  s       super-columns              never\n"
            "  sts     super-columns,time-sorted  (age() > 1d || versions() > 3)\n"
            "  ts      time-sorted                never\n");
  EXPECT_EQ(FormatTableInfo(TableInfoFromProto("e", btadmin::Table())),
            "table e\n  (no column families)\n");
}

TEST(ShellFormatTest, FormatRow) {
  const TableInfo info = SampleTable();
  const std::string t8 = client::EncodeBigEndianInt64(1704164645123000);
  model::Row row;
  row.key = "row\x01";
  row.cells.push_back({"cf", "a", 1000, "v\n1", {}});
  row.cells.push_back({"ts", t8, 2000, "x", {"lbl"}});
  row.cells.push_back({"sts", "sup:" + t8, 3000, "", {}});
  row.cells.push_back({"ts", "short", 4000, "y", {}});  // not 8 bytes: shown escaped
  EXPECT_EQ(FormatRow(row, info, TimeFormat::kIso),
            "row\\x01\n"
            "  cf:a @ 1970-01-01T00:00:00.001Z  \"v\\n1\"\n"
            "  ts:2024-01-02T03:04:05.123Z @ 1970-01-01T00:00:00.002Z  \"x\"  [lbl]\n"
            "  sts:sup:2024-01-02T03:04:05.123Z @ 1970-01-01T00:00:00.003Z  \"\"\n"
            "  ts:short @ 1970-01-01T00:00:00.004Z  \"y\"\n");
  EXPECT_EQ(FormatRow(row, info, TimeFormat::kMicros, /*keys_only=*/true), "row\\x01\n");
  EXPECT_EQ(FormatCell(row.cells[0], info, TimeFormat::kMicros), "  cf:a @ 1000  \"v\\n1\"");
}

TEST(ShellSchemaTest, ResolveColumns) {
  const TableInfo info = SampleTable();
  const std::string t8 = client::EncodeBigEndianInt64(1704164645123000);
  using What = ResolvedColumn::What;
  auto r = ResolveColumn(info, {"cf", "a:b"}, true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->what, What::kQualifier);
  EXPECT_EQ(r->qualifier, "a:b");
  r = ResolveColumn(info, {"cf", std::nullopt}, false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->what, What::kFamily);
  EXPECT_EQ(ResolveColumn(info, {"cf", std::nullopt}, true).status().code(),
            absl::StatusCode::kInvalidArgument);
  r = ResolveColumn(info, {"nope", "q"}, false);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("has no family \"nope\""), std::string::npos);

  // Super columns: "super" reads the whole super column; writes need super:column.
  r = ResolveColumn(info, {"s", "inbox"}, false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->what, What::kSuperColumn);
  EXPECT_EQ(r->qualifier, "inbox");
  EXPECT_FALSE(ResolveColumn(info, {"s", "inbox"}, true).ok());
  r = ResolveColumn(info, {"s", "inbox:msg1"}, true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->qualifier, "inbox:msg1");
  EXPECT_FALSE(ResolveColumn(info, {"s", ":x"}, false).ok());

  // Time-sorted: times become 8 bytes; raw 8 bytes pass; other text is an error.
  r = ResolveColumn(info, {"ts", "2024-01-02T03:04:05.123Z"}, true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->qualifier, t8);
  r = ResolveColumn(info, {"ts", "1704164645123000"}, true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->qualifier, t8);
  r = ResolveColumn(info, {"ts", "abcdefgh"}, true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->qualifier, "abcdefgh");
  r = ResolveColumn(info, {"ts", "soon"}, true);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("time-sorted"), std::string::npos);
  r = ResolveColumn(info, {"sts", "sup:1704164645123000"}, true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->qualifier, "sup:" + t8);
}

TEST(ShellSchemaTest, ColumnFilters) {
  ResolvedColumn family{"cf", ResolvedColumn::What::kFamily, ""};
  EXPECT_EQ(ColumnFilter(family).family_name_regex_filter(), "cf");
  ResolvedColumn exact{"cf.x", ResolvedColumn::What::kQualifier, std::string("a*\0", 3)};
  auto f = ColumnFilter(exact);
  ASSERT_EQ(f.chain().filters_size(), 2);
  EXPECT_EQ(f.chain().filters(0).family_name_regex_filter(), "cf\\.x");
  EXPECT_EQ(f.chain().filters(1).column_qualifier_regex_filter(), "a\\*\\x00");
  ResolvedColumn super{"s", ResolvedColumn::What::kSuperColumn, "in.box"};
  f = ColumnFilter(super);
  EXPECT_EQ(f.chain().filters(1).column_qualifier_regex_filter(), "in\\.box\\:(?s:.*)");

  EXPECT_FALSE(ChainFilters({}).has_value());
  google::bigtable::v2::RowFilter one;
  one.set_strip_value_transformer(true);
  EXPECT_TRUE(ChainFilters({one})->strip_value_transformer());
  EXPECT_EQ(ChainFilters({one, one})->chain().filters_size(), 2);
  EXPECT_EQ(InterleaveFilters({one, one, one})->interleave().filters_size(), 3);
}

TEST(ShellProgressTest, ThrottledAndErased) {
  using namespace std::chrono_literals;
  Progress::Clock::time_point now{};
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  ASSERT_NE(out, nullptr);
  {
    Progress p(out, {.enabled = true, .start_delay = 500ms, .interval = 200ms,
                     .now = [&] { return now; }});
    for (int i = 0; i < 100; ++i) {
      now += 10ms;  // 1 s in all
      p.Add();
    }
    // Drawn at 500 ms, 700 ms and 900 ms only.
    EXPECT_EQ(p.draws(), 3);
    EXPECT_EQ(p.count(), 100);
  }
  std::fclose(out);
  const std::string text(buffer, size);
  std::free(buffer);
  EXPECT_NE(text.find("50 rows  (100 rows/s)"), std::string::npos) << text;
  EXPECT_TRUE(text.ends_with("\r\x1b[K")) << text;  // erased at the end

  // Disabled, or shorter than the delay: nothing written.
  out = open_memstream(&buffer, &size);
  {
    Progress quiet(out, {.enabled = false});
    for (int i = 0; i < 10; ++i) quiet.Add();
    Progress quick(out, {.enabled = true, .start_delay = 500ms, .now = [&] { return now; }});
    quick.Add(5);
    quick.Finish();
  }
  std::fclose(out);
  EXPECT_EQ(size, 0u);
  std::free(buffer);

  EXPECT_EQ(GroupThousands(0), "0");
  EXPECT_EQ(GroupThousands(1234567), "1,234,567");
  EXPECT_EQ(GroupThousands(-1000), "-1,000");
  EXPECT_EQ(Progress::Text(12345, 2s), "12,345 rows  (6,172 rows/s)");
}

}  // namespace
}  // namespace tessera::cli::shell
