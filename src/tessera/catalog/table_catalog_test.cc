#include "tessera/catalog/table_catalog.h"

#include <memory>

#include "gtest/gtest.h"
#include "tessera/catalog/tablet_id.h"
#include "tessera/testing/mem_tables.h"
#include "tessera/util/clock.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::catalog {
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
    if (engine_ != nullptr) {
      ASSERT_TRUE(engine_->Close().ok());
    }
    engine_.reset();
    Status opened = ::tessera::testing::OpenMemTables(&fs_, &clock_, &engine_, &catalog_);
    ASSERT_TRUE(opened.ok()) << opened;
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

TEST_F(TableCatalogTest, TabletsOfATableShareARandomPrefix) {
  auto a = catalog_->CreateTable(kInstance, Schema("a", {"cf"}), {"m"});
  auto b = catalog_->CreateTable(kInstance, Schema("b", {"cf"}), {});
  ASSERT_TRUE(a.ok() && b.ok());
  const uint64_t prefix = (*a)->tablet_prefix;
  EXPECT_GE(prefix, catalog::kLocalPrefixBit);  // never a lock-service revision
  EXPECT_EQ((*a)->tablets[0].id, catalog::MakeTabletId(prefix, 0));
  EXPECT_EQ((*a)->tablets[1].id, catalog::MakeTabletId(prefix, 1));
  EXPECT_NE((*b)->tablet_prefix, prefix);
  // Deleted and made again: new ids, so nothing of the old tablets can meet the new ones.
  ASSERT_TRUE(catalog_->DeleteTable((*a)->full_name).ok());
  auto again = catalog_->CreateTable(kInstance, Schema("a", {"cf"}), {"m"});
  ASSERT_TRUE(again.ok());
  EXPECT_NE((*again)->tablet_prefix, prefix);
  Reopen();
  auto back = catalog_->GetTable((*again)->full_name);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)->tablet_prefix, (*again)->tablet_prefix);
}

TEST_F(TableCatalogTest, TabletsOfThePreviousVersionKeepTheirIds) {
  // The previous version numbered tablets 1, 2, 3… per node.
  model::TableSchema schema = Schema("old", {"cf"});
  schema.version = 1;
  const std::string full = std::string(kInstance) + "/tables/old";
  ASSERT_TRUE(engine_->CreateTablet(1, tablet::TabletDescriptor{full, "", "m", schema}).ok());
  ASSERT_TRUE(engine_->CreateTablet(2, tablet::TabletDescriptor{full, "m", "", schema}).ok());
  Reopen();
  auto old = catalog_->GetTable(full);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ((*old)->tablet_prefix, 0u);
  EXPECT_EQ((*old)->tablets[0].id, 1u);
  EXPECT_EQ((*old)->tablets[1].id, 2u);
  auto created = catalog_->CreateTable(kInstance, Schema("new", {"cf"}), {});
  ASSERT_TRUE(created.ok());
  EXPECT_GT((*created)->tablets[0].id, 2u);
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
  auto failed = catalog_->UpdateSchema(
      name, [](model::TableSchema*) { return absl::NotFoundError("no such family"); });
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
  EXPECT_EQ(
      catalog_->UpdateSchema("projects/p/instances/i/tables/x", [](auto*) { return Status(); })
          .status()
          .code(),
      absl::StatusCode::kNotFound);
}

TEST_F(TableCatalogTest, OpenFinishesInterruptedCreateAndDelete) {
  // Tablets of a table that never tiled the row space (a create or delete cut short).
  model::TableSchema s = Schema("half", {"cf"});
  ASSERT_TRUE(engine_
                  ->CreateTablet(100, tablet::TabletDescriptor{"projects/p/instances/i/tables/half",
                                                               "", "m", s})
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

// --- The mirror's entry points ---------------------------------------------------------------

constexpr char kT[] = "projects/p/instances/i/tables/t";

TableDefinition Definition(uint64_t version, std::vector<std::string> families) {
  TableDefinition d;
  d.full_name = kT;
  d.schema = Schema("t", std::move(families));
  d.schema.version = version;
  d.tablet_prefix = 42;  // as if the record's create revision were 42
  return d;
}

class TableCatalogMirrorTest : public TableCatalogTest {
 protected:
  void Write(const std::string& row, const std::string& family) {
    auto info = catalog_->GetTable(kT);
    ASSERT_TRUE(info.ok()) << info.status();
    model::RowMutation m(row);
    m.SetCell(family, "q", 1000, "v");
    ASSERT_TRUE(engine_->Apply((*info)->TabletFor(row).id, m).ok());
  }
  // The families of the row's visible cells.
  std::string Families(const std::string& row) {
    auto info = catalog_->GetTable(kT);
    if (!info.ok()) return "<no table>";
    auto read = engine_->ReadRow((*info)->TabletFor(row).id, row, model::ReadSpec{});
    if (!read.ok() || !read->has_value()) return "";
    std::string out;
    for (const model::Cell& c : (*read)->cells) out += (out.empty() ? "" : ",") + c.family;
    return out;
  }
};

TEST_F(TableCatalogMirrorTest, ApplyDefinitionCreatesWithTheGivenVersion) {
  TableDefinition d = Definition(7, {"cf"});
  d.split_keys = {"m", "c", "m"};
  auto t = catalog_->ApplyDefinition(d);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->schema.version, 7u);
  ASSERT_EQ((*t)->tablets.size(), 3u);
  EXPECT_EQ((*t)->tablets[1].start_row, "c");
  // Applying the same definition again changes nothing (idempotent).
  auto again = catalog_->ApplyDefinition(d);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->get(), t->get());
  Reopen();
  EXPECT_EQ((*catalog_->GetTable(kT))->schema.version, 7u);
}

TEST_F(TableCatalogMirrorTest, ApplyDefinitionNamesTheTabletsByItsPrefix) {
  TableDefinition d = Definition(1, {"cf"});
  d.split_keys = {"k", "t"};
  auto t = catalog_->ApplyDefinition(d);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->tablet_prefix, 42u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ((*t)->tablets[i].id, catalog::MakeTabletId(42, i));
  Reopen();
  auto back = catalog_->GetTable(kT);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)->tablet_prefix, 42u);
  EXPECT_EQ((*back)->tablets[2].id, catalog::MakeTabletId(42, 2));

  // No prefix (or one too large) for a table to create is refused; so is a prefix whose ids
  // another table of this node holds.
  TableDefinition none = d;
  none.full_name = "projects/p/instances/i/tables/u";
  none.schema.name = "u";
  none.tablet_prefix = 0;
  EXPECT_EQ(catalog_->ApplyDefinition(none).status().code(), absl::StatusCode::kInvalidArgument);
  none.tablet_prefix = uint64_t{1} << 48;
  EXPECT_EQ(catalog_->ApplyDefinition(none).status().code(), absl::StatusCode::kInvalidArgument);
  TableDefinition taken = none;
  taken.tablet_prefix = 42;
  auto clash = catalog_->ApplyDefinition(taken);
  EXPECT_EQ(clash.status().code(), absl::StatusCode::kFailedPrecondition) << clash.status();
  EXPECT_NE(clash.status().message().find("already used"), std::string_view::npos)
      << clash.status();
  EXPECT_FALSE(catalog_->GetTable(taken.full_name).ok());  // nothing half-made is left
  EXPECT_EQ(engine_->ListTablets().size(), 3u);
}

TEST_F(TableCatalogMirrorTest, ApplyDefinitionReplacesAndRefusesRollbacks) {
  ASSERT_TRUE(catalog_->ApplyDefinition(Definition(1, {"cf", "meta"})).ok());
  Write("a", "cf");
  Write("a", "meta");
  TableDefinition newer = Definition(3, {"cf", "extra"});
  newer.schema.deletion_protection = true;
  newer.split_keys = {"zzz"};  // ignored: the table exists
  auto t = catalog_->ApplyDefinition(newer);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->schema.version, 3u);
  EXPECT_TRUE((*t)->schema.deletion_protection);
  EXPECT_EQ((*t)->tablets.size(), 1u);
  EXPECT_EQ(Families("a"), "cf");  // meta was dropped through the engine

  auto older = catalog_->ApplyDefinition(Definition(2, {"cf", "meta"}));
  EXPECT_EQ(older.status().code(), absl::StatusCode::kFailedPrecondition);
  auto diverged = catalog_->ApplyDefinition(Definition(3, {"cf"}));
  EXPECT_EQ(diverged.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*catalog_->GetTable(kT))->schema, (*t)->schema);

  // Bad definitions.
  TableDefinition other_name = Definition(4, {"cf"});
  other_name.schema.name = "u";
  EXPECT_EQ(catalog_->ApplyDefinition(other_name).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog_->ApplyDefinition(Definition(0, {})).status().code(),
            absl::StatusCode::kInvalidArgument);
  TableDefinition bad_since = Definition(4, {"cf"});
  bad_since.family_since["cf"] = 5;
  EXPECT_EQ(catalog_->ApplyDefinition(bad_since).status().code(),
            absl::StatusCode::kInvalidArgument);
  bad_since.family_since = {{"nope", 1}};
  EXPECT_EQ(catalog_->ApplyDefinition(bad_since).status().code(),
            absl::StatusCode::kInvalidArgument);
  TableDefinition bad_split = Definition(4, {"cf"});
  bad_split.split_keys = {""};
  EXPECT_EQ(catalog_->ApplyDefinition(bad_split).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(TableCatalogMirrorTest, ApplyDefinitionDropsFamiliesRecreatedMeanwhile) {
  ASSERT_TRUE(catalog_->ApplyDefinition(Definition(1, {"cf", "meta"})).ok());
  Write("a", "cf");
  Write("a", "meta");
  // Elsewhere: v2 dropped meta, v3 changed something, v4 created meta again. This node jumps
  // from v1 to v4.
  TableDefinition d = Definition(4, {"cf", "meta"});
  d.family_since = {{"cf", 1}, {"meta", 4}};
  auto t = catalog_->ApplyDefinition(d);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->schema.version, 4u);
  EXPECT_NE((*t)->schema.Find("meta"), nullptr);
  EXPECT_EQ(Families("a"), "cf");
  Reopen();
  EXPECT_EQ(Families("a"), "cf");
  EXPECT_EQ((*catalog_->GetTable(kT))->schema.version, 4u);

  // A re-creation at the very next version cannot be told apart from the local family.
  TableDefinition too_close = Definition(5, {"cf", "meta"});
  too_close.family_since = {{"cf", 1}, {"meta", 5}};
  EXPECT_EQ(catalog_->ApplyDefinition(too_close).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(TableCatalogMirrorTest, OpenRepairsAnInterruptedTwoStepApply) {
  auto t = catalog_->CreateTable(kInstance, Schema("t", {"cf", "meta"}), {"m"});
  ASSERT_TRUE(t.ok());
  Write("a", "meta");
  Write("x", "meta");
  // The first step (version 3, without meta) reached only the first tablet before a crash.
  model::TableSchema step = (*t)->schema;
  step.version = 3;
  step.families.erase("meta");
  ASSERT_TRUE(engine_->UpdateSchema((*t)->tablets[0].id, step).ok());
  Reopen();
  EXPECT_EQ((*catalog_->GetTable(kT))->schema.version, 3u);
  EXPECT_EQ(Families("a"), "");
  EXPECT_EQ(Families("x"), "");  // the repair wrote the step to the second tablet too
  // The mirror then applies the definition (meta re-created at version 4).
  TableDefinition d = Definition(4, {"cf", "meta"});
  d.family_since = {{"cf", 1}, {"meta", 4}};
  ASSERT_TRUE(catalog_->ApplyDefinition(d).ok());
  EXPECT_EQ(Families("x"), "");
}

TEST_F(TableCatalogMirrorTest, DropTableIgnoresProtectionAndListAllTables) {
  model::TableSchema s = Schema("t", {"cf"});
  s.deletion_protection = true;
  ASSERT_TRUE(catalog_->CreateTable(kInstance, s, {"m"}).ok());
  ASSERT_TRUE(catalog_->CreateTable("projects/p/instances/j", Schema("a", {}), {}).ok());
  auto all = catalog_->ListAllTables();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0]->full_name, kT);
  EXPECT_EQ(all[1]->full_name, "projects/p/instances/j/tables/a");
  EXPECT_EQ(catalog_->DeleteTable(kT).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(catalog_->DropTable(kT).ok());
  EXPECT_EQ(catalog_->GetTable(kT).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(catalog_->DropTable(kT).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(engine_->ListTablets().size(), 1u);
  Reopen();
  EXPECT_EQ(catalog_->ListAllTables().size(), 1u);
}

}  // namespace
}  // namespace tessera::catalog
