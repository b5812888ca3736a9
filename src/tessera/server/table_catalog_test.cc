#include "tessera/server/table_catalog.h"

#include <memory>

#include "gtest/gtest.h"
#include "tessera/util/clock.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::server {
namespace {

constexpr std::string_view kInstance = "projects/p/instances/i";

model::TableSchema Schema(std::string name, std::vector<std::string> families) {
  model::TableSchema s;
  s.name = std::move(name);
  for (auto& f : families) s.families[f];
  return s;
}

class TableCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen() {
    catalog_.reset();
    if (engine_ != nullptr) ASSERT_TRUE(engine_->Close().ok());
    engine_.reset();
    tablet::EngineOptions options;
    options.dir = "/db";
    options.background_threads = 1;
    auto engine = tablet::Engine::Open(options, tablet::EngineEnv{&fs_, &clock_});
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
    auto catalog = TableCatalog::Open(engine_.get());
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    catalog_ = *std::move(catalog);
  }

  void TearDown() override {
    catalog_.reset();
    if (engine_ != nullptr) (void)engine_->Close();
  }

  MemFileSystem fs_;
  ManualClock clock_;
  std::unique_ptr<tablet::Engine> engine_;
  std::unique_ptr<TableCatalog> catalog_;
};

TEST(TableNameTest, Parse) {
  auto n = TableName::Parse("projects/p1/instances/i-1/tables/t_1");
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->instance, "projects/p1/instances/i-1");
  EXPECT_EQ(n->table_id, "t_1");
  EXPECT_EQ(n->Full(), "projects/p1/instances/i-1/tables/t_1");
  for (std::string_view bad :
       {"", "t", "projects/p/instances/i/tables/", "projects/p/instances/i/tables/bad/id",
        "projects//instances/i/tables/t", "projects/p/instances//tables/t",
        "projects/p/instances/i/tables/-t", "foo/p/instances/i/tables/t"}) {
    auto s = TableName::Parse(bad);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(ValidateInstanceName("projects/p/instances/i").ok());
  EXPECT_FALSE(ValidateInstanceName("projects/p/instances/").ok());
  EXPECT_FALSE(ValidateInstanceName("projects/p/instances/i/x").ok());
}

TEST_F(TableCatalogTest, CreateGetListDelete) {
  auto t = catalog_->CreateTable(kInstance, Schema("users", {"cf"}), {"m", "t", "m"});
  ASSERT_TRUE(t.ok()) << t.status();
  const TableInfo& info = **t;
  EXPECT_EQ(info.full_name, "projects/p/instances/i/tables/users");
  ASSERT_EQ(info.tablets.size(), 3u);  // duplicate split removed
  EXPECT_EQ(info.tablets[0].start_row, "");
  EXPECT_EQ(info.tablets[0].end_row, "m");
  EXPECT_EQ(info.tablets[2].end_row, "");
  EXPECT_EQ(info.TabletFor("a").id, info.tablets[0].id);
  EXPECT_EQ(info.TabletFor("m").id, info.tablets[1].id);
  EXPECT_EQ(info.TabletFor("zzz").id, info.tablets[2].id);
  EXPECT_EQ(info.TabletsOverlapping("a", "m"), (std::vector<size_t>{0}));
  EXPECT_EQ(info.TabletsOverlapping("a", "n"), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(info.TabletsOverlapping("", ""), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(info.schema.version, 1u);

  auto dup = catalog_->CreateTable(kInstance, Schema("users", {}), {});
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(dup.status().message().find("already exists"), std::string::npos);
  // The same id in another instance is another table.
  ASSERT_TRUE(catalog_->CreateTable("projects/p/instances/other", Schema("users", {}), {}).ok());
  ASSERT_TRUE(catalog_->CreateTable(kInstance, Schema("a-table", {}), {}).ok());

  auto list = catalog_->ListTables(kInstance);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]->name.table_id, "a-table");
  EXPECT_EQ(list[1]->name.table_id, "users");

  ASSERT_TRUE(catalog_->DeleteTable("projects/p/instances/i/tables/users").ok());
  auto gone = catalog_->GetTable("projects/p/instances/i/tables/users");
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(gone.status().message(), "table \"projects/p/instances/i/tables/users\" not found");
  EXPECT_EQ(catalog_->DeleteTable("projects/p/instances/i/tables/users").code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(catalog_->GetTable("projects/p/instances/other/tables/users").ok());
  EXPECT_EQ(engine_->ListTablets().size(), 2u);
}

TEST_F(TableCatalogTest, RejectsBadInput) {
  EXPECT_EQ(catalog_->CreateTable("nope", Schema("t", {}), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog_->CreateTable(kInstance, Schema("bad/id", {}), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog_->CreateTable(kInstance, Schema("t", {"bad:family"}), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto empty_split = catalog_->CreateTable(kInstance, Schema("t", {}), {"a", ""});
  EXPECT_EQ(empty_split.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(engine_->ListTablets().empty());
}

TEST_F(TableCatalogTest, SurvivesReopen) {
  model::TableSchema s = Schema("t", {"cf", "meta"});
  s.families["cf"].gc_rule = model::GcRule::MaxNumVersions(2);
  s.granularity = model::TimestampGranularity::kMicros;
  ASSERT_TRUE(catalog_->CreateTable(kInstance, s, {"k"}).ok());
  ASSERT_TRUE(catalog_
                  ->UpdateSchema("projects/p/instances/i/tables/t",
                                 [](model::TableSchema* schema) {
                                   schema->deletion_protection = true;
                                   schema->families.erase("meta");
                                   return Status();
                                 })
                  .ok());
  Reopen();
  auto t = catalog_->GetTable("projects/p/instances/i/tables/t");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->tablets.size(), 2u);
  EXPECT_EQ((*t)->schema.version, 2u);
  EXPECT_TRUE((*t)->schema.deletion_protection);
  EXPECT_EQ((*t)->schema.granularity, model::TimestampGranularity::kMicros);
  EXPECT_EQ((*t)->schema.families.size(), 1u);
  EXPECT_EQ((*t)->schema.families.at("cf").gc_rule, model::GcRule::MaxNumVersions(2));
  EXPECT_EQ(catalog_->DeleteTable("projects/p/instances/i/tables/t").code(),
            absl::StatusCode::kFailedPrecondition);
  // A new table gets fresh tablet ids after the reopen.
  auto u = catalog_->CreateTable(kInstance, Schema("u", {}), {});
  ASSERT_TRUE(u.ok());
  for (const TabletRef& ref : (*t)->tablets) EXPECT_NE(ref.id, (*u)->tablets[0].id);
}

TEST_F(TableCatalogTest, UpdateSchemaErrorsChangeNothing) {
  ASSERT_TRUE(catalog_->CreateTable(kInstance, Schema("t", {"cf"}), {}).ok());
  const std::string name = "projects/p/instances/i/tables/t";
  auto failed = catalog_->UpdateSchema(name, [](model::TableSchema*) {
    return absl::NotFoundError("no such family");
  });
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kNotFound);
  auto renamed = catalog_->UpdateSchema(name, [](model::TableSchema* s) {
    s->name = "other";
    return Status();
  });
  EXPECT_EQ(renamed.status().code(), absl::StatusCode::kInvalidArgument);
  auto bad_family = catalog_->UpdateSchema(name, [](model::TableSchema* s) {
    s->families["bad name"];
    return Status();
  });
  EXPECT_EQ(bad_family.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*catalog_->GetTable(name))->schema.version, 1u);
  EXPECT_EQ(catalog_->UpdateSchema("projects/p/instances/i/tables/x", [](auto*) {
                      return Status();
                    }).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(TableCatalogTest, OpenFinishesInterruptedCreateAndDelete) {
  // Tablets of a table that never tiled the row space (a create or delete cut short).
  model::TableSchema s = Schema("half", {"cf"});
  ASSERT_TRUE(engine_
                  ->CreateTablet(100, tablet::TabletDescriptor{
                                          "projects/p/instances/i/tables/half", "", "m", s})
                  .ok());
  ASSERT_TRUE(catalog_->CreateTable(kInstance, Schema("whole", {"cf"}), {"m"}).ok());
  Reopen();
  EXPECT_EQ(catalog_->GetTable("projects/p/instances/i/tables/half").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(catalog_->GetTable("projects/p/instances/i/tables/whole").ok());
  EXPECT_EQ(engine_->ListTablets().size(), 2u);
}

TEST_F(TableCatalogTest, OpenRepairsDivergentSchemas) {
  auto t = catalog_->CreateTable(kInstance, Schema("t", {"cf"}), {"m"});
  ASSERT_TRUE(t.ok());
  // An update that reached only the first tablet before a crash.
  model::TableSchema newer = (*t)->schema;
  newer.version = 7;
  newer.families["added"];
  ASSERT_TRUE(engine_->UpdateSchema((*t)->tablets[0].id, newer).ok());
  Reopen();
  auto repaired = catalog_->GetTable("projects/p/instances/i/tables/t");
  ASSERT_TRUE(repaired.ok());
  EXPECT_EQ((*repaired)->schema.version, 7u);
  EXPECT_NE((*repaired)->schema.Find("added"), nullptr);
  auto second = engine_->GetTablet((*t)->tablets[1].id);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->schema.version, 7u);
  EXPECT_NE(second->schema.Find("added"), nullptr);
}

}  // namespace
}  // namespace tessera::server
