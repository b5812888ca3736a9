// BigtableClient against real servers: the official emulator (cbtemulator) and, when built,
// `tessera serve`. Each backend is a test parameter; a missing backend skips loudly. One
// server per backend serves every test (each test uses its own tables).
#include "tessera/client/bigtable_client.h"

#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "tessera/testing/test_servers.h"

namespace tessera::client {
namespace {

using std::chrono::milliseconds;

// ---- Pure helpers (no server). ----

TEST(ClientHelpersTest, PrefixSuccessor) {
  EXPECT_EQ(PrefixSuccessor("abc"), "abd");
  EXPECT_EQ(PrefixSuccessor(std::string("a\xff\xff", 3)), "b");
  EXPECT_EQ(PrefixSuccessor(std::string("\xff", 1)), "");
  EXPECT_EQ(PrefixSuccessor(""), "");
}

TEST(ClientHelpersTest, RowSets) {
  btv2::RowSet prefix = RowPrefixSet("user#");
  ASSERT_EQ(prefix.row_ranges_size(), 1);
  EXPECT_EQ(prefix.row_ranges(0).start_key_closed(), "user#");
  EXPECT_EQ(prefix.row_ranges(0).end_key_open(), "user$");
  btv2::RowSet open = RowRangeSet("a", "");
  EXPECT_FALSE(open.row_ranges(0).has_end_key_open());
  EXPECT_EQ(RowKeysSet({"x", "y"}).row_keys_size(), 2);
}

TEST(ClientHelpersTest, RegexEscape) {
  EXPECT_EQ(RegexEscape("abc_09"), "abc_09");
  EXPECT_EQ(RegexEscape("a.b*c:"), "a\\.b\\*c\\:");
  EXPECT_EQ(RegexEscape(std::string("\x00\xff \n", 4)), "\\x00\\xff\\x20\\x0a");
}

TEST(ClientHelpersTest, BigEndian) {
  EXPECT_EQ(EncodeBigEndianInt64(1), std::string("\0\0\0\0\0\0\0\x01", 8));
  EXPECT_EQ(*DecodeBigEndianInt64(EncodeBigEndianInt64(-42)), -42);
  EXPECT_EQ(DecodeBigEndianInt64("abc").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ClientHelpersTest, CreateValidatesOptions) {
  EXPECT_EQ(BigtableClient::Create(ClientOptions{}).status().code(),
            absl::StatusCode::kInvalidArgument);
  ClientOptions options;
  options.endpoint = "127.0.0.1:1";
  options.read_timeout = milliseconds(0);
  EXPECT_EQ(BigtableClient::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ClientHelpersTest, NobodyListeningIsUnavailable) {
  ClientOptions options;
  options.endpoint = "127.0.0.1:1";  // reserved port, nothing listens
  options.admin_timeout = milliseconds(2000);
  auto client = BigtableClient::Create(options);
  ASSERT_TRUE(client.ok());
  const auto tables = (*client)->ListTables();
  EXPECT_EQ(tables.status().code(), absl::StatusCode::kUnavailable) << tables.status();
}

// ---- Against servers. ----

class ClientTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void TearDownTestSuite() { servers().clear(); }

  void SetUp() override {
    auto& slot = servers()[GetParam()];
    if (slot == nullptr) {
      auto server = testing::TestServer::Start(GetParam(), TESSERA_BINARY_PATH);
      if (server.status().code() == absl::StatusCode::kNotFound) {
        GTEST_SKIP() << "SKIPPED: backend " << GetParam() << " unavailable: " << server.status();
      }
      ASSERT_TRUE(server.ok()) << server.status();
      slot = std::move(server).value();
    }
    ClientOptions options;
    options.endpoint = slot->endpoint();
    options.admin_timeout = milliseconds(10'000);
    options.mutate_timeout = milliseconds(10'000);
    options.read_timeout = milliseconds(20'000);
    auto client = BigtableClient::Create(options);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(client).value();
  }

  bool is_tessera() const { return GetParam() == "serve"; }

  // A table named after the test, created fresh with families cf1 (max 2 versions) and cf2.
  std::string MakeTable(const std::vector<std::string>& splits = {}) {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    (void)client_->DeleteTable(name);
    FamilySpec cf1{"cf1", {}};
    cf1.gc_rule.set_max_num_versions(2);
    FamilySpec cf2{"cf2", {}};
    const Status s = client_->CreateTable(name, {cf1, cf2}, splits);
    EXPECT_TRUE(s.ok()) << s;
    return name;
  }

  void Put(const std::string& table, const std::string& row, const std::string& family,
           const std::string& qualifier, const std::string& value, int64_t ts = 1000) {
    const Status s = client_->MutateRow(table, row, {SetCellMutation(family, qualifier, value, ts)});
    ASSERT_TRUE(s.ok()) << s;
  }

  std::vector<std::string> Keys(const std::string& table, const ReadRowsOptions& options) {
    std::vector<std::string> keys;
    const Status s = client_->ReadRows(table, options, [&](model::Row&& row) {
      keys.push_back(row.key);
      return true;
    });
    EXPECT_TRUE(s.ok()) << s;
    return keys;
  }

  static std::map<std::string, std::unique_ptr<testing::TestServer>>& servers() {
    static auto* const map = new std::map<std::string, std::unique_ptr<testing::TestServer>>();
    return *map;
  }

  std::unique_ptr<BigtableClient> client_;
};

TEST_P(ClientTest, TableAdminLifecycle) {
  const std::string table = MakeTable({"m", "t"});
  auto tables = client_->ListTables();
  ASSERT_TRUE(tables.ok()) << tables.status();
  EXPECT_NE(std::find(tables->begin(), tables->end(), table), tables->end());
  EXPECT_TRUE(std::is_sorted(tables->begin(), tables->end()));

  auto schema = client_->GetTable(table);
  ASSERT_TRUE(schema.ok()) << schema.status();
  ASSERT_EQ(schema->column_families().count("cf1"), 1u);
  EXPECT_EQ(schema->column_families().at("cf1").gc_rule().max_num_versions(), 2);
  EXPECT_EQ(schema->column_families().count("cf2"), 1u);

  // Families: create (with a union rule and Tessera options), update the GC rule, drop.
  FamilySpec cf3{"cf3", {}, /*super_columns=*/true, /*time_sorted=*/false};
  cf3.gc_rule.mutable_union_()->add_rules()->set_max_num_versions(3);
  cf3.gc_rule.mutable_union_()->add_rules()->mutable_max_age()->set_seconds(86400);
  ASSERT_TRUE(client_->CreateFamily(table, cf3).ok());
  schema = client_->GetTable(table);
  ASSERT_TRUE(schema.ok());
  ASSERT_EQ(schema->column_families().count("cf3"), 1u);
  EXPECT_EQ(schema->column_families().at("cf3").gc_rule().union_().rules_size(), 2);
  if (is_tessera()) {
    EXPECT_TRUE(schema->column_families().at("cf3").tessera_options().super_columns());
  }
  btadmin::GcRule one;
  one.set_max_num_versions(1);
  ASSERT_TRUE(client_->UpdateGcRule(table, "cf3", one).ok());
  schema = client_->GetTable(table);
  ASSERT_TRUE(schema.ok());
  EXPECT_EQ(schema->column_families().at("cf3").gc_rule().max_num_versions(), 1);
  ASSERT_TRUE(client_->DropFamily(table, "cf3").ok());
  schema = client_->GetTable(table);
  ASSERT_TRUE(schema.ok());
  EXPECT_EQ(schema->column_families().count("cf3"), 0u);

  // Errors keep the server's code.
  EXPECT_EQ(client_->CreateTable(table, {}, {}).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(client_->DeleteTable(table).ok());
  const auto gone = client_->GetTable(table);
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound) << gone.status();
  EXPECT_NE(gone.status().message().find(table), std::string::npos) << gone.status();
  EXPECT_EQ(client_->DeleteTable(table).code(), absl::StatusCode::kNotFound);
}

TEST_P(ClientTest, MutateRowAndReadRow) {
  const std::string table = MakeTable();
  ASSERT_TRUE(client_
                  ->MutateRow(table, "r1",
                              {SetCellMutation("cf1", "a", "v1", 1000),
                               SetCellMutation("cf1", "a", "v2", 2000),
                               SetCellMutation("cf2", "b", std::string("\0x", 2), 3000)})
                  .ok());
  auto row = client_->ReadRow(table, "r1");
  ASSERT_TRUE(row.ok()) << row.status();
  ASSERT_TRUE(row->has_value());
  EXPECT_EQ((*row)->key, "r1");
  ASSERT_EQ((*row)->cells.size(), 3u);
  // Within a column, newest first.
  std::vector<model::Cell> cf1;
  for (const model::Cell& c : (*row)->cells) {
    if (c.family == "cf1") cf1.push_back(c);
    if (c.family == "cf2") {
      EXPECT_EQ(c.value, std::string("\0x", 2));
    }
  }
  ASSERT_EQ(cf1.size(), 2u);
  EXPECT_EQ(cf1[0].value, "v2");
  EXPECT_EQ(cf1[0].timestamp_micros, 2000);

  // Filtered read: latest version of cf1 only.
  btv2::RowFilter filter;
  filter.mutable_chain()->add_filters()->set_family_name_regex_filter("cf1");
  filter.mutable_chain()->add_filters()->set_cells_per_column_limit_filter(1);
  row = client_->ReadRow(table, "r1", filter);
  ASSERT_TRUE(row.ok());
  ASSERT_TRUE(row->has_value());
  ASSERT_EQ((*row)->cells.size(), 1u);
  EXPECT_EQ((*row)->cells[0].value, "v2");

  // Deletes: one column, one family, the row.
  ASSERT_TRUE(client_->MutateRow(table, "r1", {DeleteColumnMutation("cf1", "a")}).ok());
  row = client_->ReadRow(table, "r1");
  ASSERT_TRUE(row.ok());
  ASSERT_TRUE(row->has_value());
  EXPECT_EQ((*row)->cells.size(), 1u);
  ASSERT_TRUE(client_->MutateRow(table, "r1", {DeleteFamilyMutation("cf2")}).ok());
  row = client_->ReadRow(table, "r1");
  ASSERT_TRUE(row.ok());
  EXPECT_FALSE(row->has_value());
  Put(table, "r2", "cf1", "q", "x");
  ASSERT_TRUE(client_->MutateRow(table, "r2", {DeleteRowMutation()}).ok());
  row = client_->ReadRow(table, "r2");
  ASSERT_TRUE(row.ok());
  EXPECT_FALSE(row->has_value());

  // Missing row; unknown family; unknown table.
  row = client_->ReadRow(table, "nope");
  ASSERT_TRUE(row.ok());
  EXPECT_FALSE(row->has_value());
  EXPECT_FALSE(client_->MutateRow(table, "r1", {SetCellMutation("nofam", "a", "v", 1000)}).ok());
  const Status missing = client_->MutateRow("no_such_table", "r", {DeleteRowMutation()});
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound) << missing;
}

TEST_P(ClientTest, ReadRowsRangesLimitsFiltersReversed) {
  const std::string table = MakeTable({"k050"});
  std::vector<BigtableClient::BulkEntry> entries;
  for (int i = 0; i < 100; ++i) {
    char key[8];
    std::snprintf(key, sizeof(key), "k%03d", i);
    entries.push_back({key, {SetCellMutation("cf1", "q", std::string(100, 'a' + i % 26), 1000)}});
  }
  auto statuses = client_->MutateRows(table, entries);
  ASSERT_TRUE(statuses.ok()) << statuses.status();
  ASSERT_EQ(statuses->size(), 100u);
  for (const Status& s : *statuses) ASSERT_TRUE(s.ok()) << s;

  ReadRowsOptions all;
  std::vector<std::string> keys = Keys(table, all);
  ASSERT_EQ(keys.size(), 100u);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));

  ReadRowsOptions range;
  range.rows = RowRangeSet("k010", "k020");
  EXPECT_EQ(Keys(table, range).size(), 10u);

  ReadRowsOptions prefix;
  prefix.rows = RowPrefixSet("k09");
  EXPECT_EQ(Keys(table, prefix), (std::vector<std::string>{"k090", "k091", "k092", "k093", "k094",
                                                           "k095", "k096", "k097", "k098", "k099"}));

  ReadRowsOptions limited;
  limited.limit = 7;
  EXPECT_EQ(Keys(table, limited).size(), 7u);

  ReadRowsOptions reversed;
  reversed.reversed = true;
  reversed.limit = 3;
  EXPECT_EQ(Keys(table, reversed), (std::vector<std::string>{"k099", "k098", "k097"}));

  ReadRowsOptions by_key;
  by_key.rows = RowKeysSet({"k005", "k001", "k005", "zzz"});
  EXPECT_EQ(Keys(table, by_key), (std::vector<std::string>{"k001", "k005"}));

  ReadRowsOptions filtered;
  filtered.filter.emplace().set_row_key_regex_filter("k0[0-4]7");
  EXPECT_EQ(Keys(table, filtered).size(), 5u);

  // The iterator form, and stopping early from the callback.
  std::unique_ptr<RowReader> reader = client_->ReadRows(table, all);
  model::Row row;
  int n = 0;
  while (true) {
    auto more = reader->Next(&row);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    EXPECT_EQ(row.cells.size(), 1u);
    ASSERT_LT(++n, 1000);
  }
  EXPECT_EQ(n, 100);
  n = 0;
  ASSERT_TRUE(client_->ReadRows(table, all, [&](model::Row&&) { return ++n < 5; }).ok());
  EXPECT_EQ(n, 5);
  reader = client_->ReadRows(table, all);
  ASSERT_TRUE(*reader->Next(&row));
  reader->Cancel();
  EXPECT_FALSE(*reader->Next(&row));

  // TryCancel from another thread ends the stream with Cancelled.
  reader = client_->ReadRows(table, all);
  std::thread([&] { reader->TryCancel(); }).join();
  StatusOr<bool> after = true;
  for (int i = 0; i < 1000 && after.ok() && *after; ++i) after = reader->Next(&row);
  EXPECT_EQ(after.status().code(), absl::StatusCode::kCancelled) << after.status();

  // Errors from the stream: bad regex, unknown table, negative limit.
  ReadRowsOptions bad;
  bad.filter.emplace().set_value_regex_filter("(");
  reader = client_->ReadRows(table, bad);
  auto r = reader->Next(&row);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  reader = client_->ReadRows("no_such_table", all);
  r = reader->Next(&row);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
  ReadRowsOptions negative;
  negative.limit = -1;
  reader = client_->ReadRows(table, negative);
  EXPECT_EQ(reader->Next(&row).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(ClientTest, MutateRowsReportsEachEntry) {
  const std::string table = MakeTable();
  std::vector<BigtableClient::BulkEntry> entries = {
      {"a", {SetCellMutation("cf1", "q", "1", 1000)}},
      {"b", {SetCellMutation("nofam", "q", "2", 1000)}},
      {"c", {SetCellMutation("cf2", "q", "3", 1000)}},
  };
  auto statuses = client_->MutateRows(table, entries);
  ASSERT_TRUE(statuses.ok()) << statuses.status();
  ASSERT_EQ(statuses->size(), 3u);
  EXPECT_TRUE((*statuses)[0].ok());
  EXPECT_FALSE((*statuses)[1].ok());
  EXPECT_TRUE((*statuses)[2].ok());
  EXPECT_EQ(Keys(table, {}), (std::vector<std::string>{"a", "c"}));
  auto empty = client_->MutateRows(table, {});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_EQ(client_->MutateRows("no_such_table", entries).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(ClientTest, CheckAndMutateRow) {
  const std::string table = MakeTable();
  Put(table, "r", "cf1", "flag", "on");
  btv2::RowFilter on;
  on.set_value_regex_filter("on");
  auto matched = client_->CheckAndMutateRow(table, "r", on,
                                            {SetCellMutation("cf2", "t", "yes", 1000)},
                                            {SetCellMutation("cf2", "f", "yes", 1000)});
  ASSERT_TRUE(matched.ok()) << matched.status();
  EXPECT_TRUE(*matched);
  btv2::RowFilter off;
  off.set_value_regex_filter("off");
  matched = client_->CheckAndMutateRow(table, "r", off, {SetCellMutation("cf2", "t2", "y", 1000)},
                                       {SetCellMutation("cf2", "f2", "y", 1000)});
  ASSERT_TRUE(matched.ok());
  EXPECT_FALSE(*matched);
  // No predicate: whether the row has cells.
  matched = client_->CheckAndMutateRow(table, "empty", std::nullopt, {},
                                       {SetCellMutation("cf1", "new", "y", 1000)});
  ASSERT_TRUE(matched.ok());
  EXPECT_FALSE(*matched);
  auto row = client_->ReadRow(table, "r");
  ASSERT_TRUE(row.ok() && row->has_value());
  std::vector<std::string> qualifiers;
  for (const model::Cell& c : (*row)->cells) qualifiers.push_back(c.family + ":" + c.qualifier);
  std::sort(qualifiers.begin(), qualifiers.end());
  EXPECT_EQ(qualifiers, (std::vector<std::string>{"cf1:flag", "cf2:f2", "cf2:t"}));
  row = client_->ReadRow(table, "empty");
  ASSERT_TRUE(row.ok());
  EXPECT_TRUE(row->has_value());
}

TEST_P(ClientTest, ReadModifyWriteRow) {
  const std::string table = MakeTable();
  auto row = client_->ReadModifyWriteRow(table, "r", {IncrementRule("cf1", "n", 5)});
  ASSERT_TRUE(row.ok()) << row.status();
  ASSERT_EQ(row->cells.size(), 1u);
  EXPECT_EQ(*DecodeBigEndianInt64(row->cells[0].value), 5);
  row = client_->ReadModifyWriteRow(table, "r",
                                    {IncrementRule("cf1", "n", -7), AppendRule("cf2", "s", "ab"),
                                     AppendRule("cf2", "s", "cd")});
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_EQ(row->key, "r");
  std::map<std::string, std::string> values;
  for (const model::Cell& c : row->cells) values[c.family + ":" + c.qualifier] = c.value;
  EXPECT_EQ(*DecodeBigEndianInt64(values["cf1:n"]), -2);
  EXPECT_EQ(values["cf2:s"], "abcd");
  // Incrementing a value that is not 8 bytes fails.
  row = client_->ReadModifyWriteRow(table, "r", {IncrementRule("cf2", "s", 1)});
  EXPECT_FALSE(row.ok());
}

TEST_P(ClientTest, SampleRowKeysAndDropRowRange) {
  const std::string table = MakeTable({"b"});
  for (const char* key : {"a1", "a2", "b1", "b2", "c1"}) Put(table, key, "cf1", "q", "v");
  auto samples = client_->SampleRowKeys(table);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_FALSE(samples->empty());
  EXPECT_EQ(samples->back().row_key, "");
  for (size_t i = 1; i < samples->size(); ++i) {
    EXPECT_GE((*samples)[i].offset_bytes, (*samples)[i - 1].offset_bytes);
  }

  ASSERT_TRUE(client_->DropRowsWithPrefix(table, "b").ok());
  EXPECT_EQ(Keys(table, {}), (std::vector<std::string>{"a1", "a2", "c1"}));
  EXPECT_EQ(client_->DropRowsWithPrefix(table, "").code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(client_->DropAllRows(table).ok());
  EXPECT_TRUE(Keys(table, {}).empty());
}

TEST_P(ClientTest, ConcurrentCallsShareOneClient) {
  const std::string table = MakeTable();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        const std::string key = "t" + std::to_string(t) + "_" + std::to_string(i);
        if (!client_->MutateRow(table, key, {SetCellMutation("cf1", "q", key, 1000)}).ok()) {
          ++failures;
        }
        auto row = client_->ReadRow(table, key);
        if (!row.ok() || !row->has_value()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(Keys(table, {}).size(), 100u);
}

TEST_P(ClientTest, LargeValuesRoundTrip) {
  const std::string table = MakeTable();
  const std::string big((4 << 20) + 1024, 'x');  // above gRPC's default 4 MiB receive limit
  Put(table, "big", "cf1", "q", big);
  auto row = client_->ReadRow(table, "big");
  ASSERT_TRUE(row.ok()) << row.status();
  ASSERT_TRUE(row->has_value());
  ASSERT_EQ((*row)->cells.size(), 1u);
  EXPECT_EQ((*row)->cells[0].value.size(), big.size());
}

INSTANTIATE_TEST_SUITE_P(Backends, ClientTest, ::testing::Values("emulator", "serve"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tessera::client
