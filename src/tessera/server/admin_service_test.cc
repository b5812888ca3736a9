#include "tessera/server/admin_service.h"

#include <memory>

#include "gtest/gtest.h"
#include "tessera/replication/local_table_access.h"
#include "tessera/testing/mem_tables.h"
#include "tessera/util/clock.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::server {
namespace {

namespace admin = ::google::bigtable::admin::v2;

constexpr char kParent[] = "projects/p/instances/i";
constexpr char kTable[] = "projects/p/instances/i/tables/t";

class AdminServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status opened = testing::OpenMemTables(&fs_, &clock_, &engine_, &catalog_);
    ASSERT_TRUE(opened.ok()) << opened;
    access_ = std::make_unique<replication::LocalTableAccess>(engine_.get());
    service_ = std::make_unique<AdminService>(catalog_.get(), access_.get());
  }
  void TearDown() override {
    service_.reset();
    catalog_.reset();
    (void)engine_->Close();
  }

  admin::CreateTableRequest CreateRequest(const std::string& id) {
    admin::CreateTableRequest r;
    r.set_parent(kParent);
    r.set_table_id(id);
    return r;
  }

  // Creates table t with family cf (max 2 versions) and family meta, split at "m".
  void CreateDefault() {
    admin::CreateTableRequest r = CreateRequest("t");
    (*r.mutable_table()->mutable_column_families())["cf"].mutable_gc_rule()->set_max_num_versions(
        2);
    (*r.mutable_table()->mutable_column_families())["meta"];
    r.add_initial_splits()->set_key("m");
    auto t = service_->DoCreateTable(r);
    ASSERT_TRUE(t.ok()) << t.status();
  }

  void Put(const std::string& row, const std::string& family, const std::string& value) {
    auto info = catalog_->GetTable(kTable);
    ASSERT_TRUE(info.ok());
    model::RowMutation m(row);
    m.SetCell(family, "q", 1000, value);
    ASSERT_TRUE(engine_->Apply((*info)->TabletFor(row).id, m).ok());
  }

  std::vector<std::string> Rows() {
    std::vector<std::string> out;
    auto info = catalog_->GetTable(kTable);
    EXPECT_TRUE(info.ok());
    for (const catalog::TabletRef& t : (*info)->tablets) {
      auto it = engine_->Scan(t.id, model::RowRange{}, model::ReadSpec{}, 0);
      EXPECT_TRUE(it.ok());
      for (; (*it)->Valid(); (*it)->Next()) out.push_back((*it)->row().key);
    }
    return out;
  }

  MemFileSystem fs_;
  ManualClock clock_;
  std::unique_ptr<tablet::Engine> engine_;
  std::unique_ptr<catalog::TableCatalog> catalog_;
  std::unique_ptr<replication::LocalTableAccess> access_;
  std::unique_ptr<AdminService> service_;
};

TEST_F(AdminServiceTest, CreateTableReturnsTheSchema) {
  admin::CreateTableRequest r = CreateRequest("t");
  auto& families = *r.mutable_table()->mutable_column_families();
  auto* u = families["cf"].mutable_gc_rule()->mutable_union_();
  u->add_rules()->mutable_max_age()->set_seconds(86400);
  u->add_rules()->set_max_num_versions(3);
  families["inbox"].mutable_tessera_options()->set_super_columns(true);
  families["inbox"].mutable_tessera_options()->set_time_sorted(true);
  r.add_initial_splits()->set_key("m");
  r.add_initial_splits()->set_key("t");
  auto t = service_->DoCreateTable(r);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->name(), kTable);
  EXPECT_EQ(t->granularity(), admin::Table::MILLIS);
  ASSERT_EQ(t->column_families().size(), 2u);
  const admin::GcRule& gc = t->column_families().at("cf").gc_rule();
  ASSERT_EQ(gc.union_().rules_size(), 2);
  EXPECT_EQ(gc.union_().rules(0).max_age().seconds(), 86400);
  EXPECT_EQ(gc.union_().rules(1).max_num_versions(), 3);
  EXPECT_TRUE(t->column_families().at("inbox").tessera_options().super_columns());
  EXPECT_TRUE(t->column_families().at("inbox").tessera_options().time_sorted());
  EXPECT_EQ((*catalog_->GetTable(kTable))->tablets.size(), 3u);

  EXPECT_EQ(service_->DoCreateTable(r).status().code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(AdminServiceTest, CreateTableRejectsBadInput) {
  admin::CreateTableRequest bad_parent = CreateRequest("t");
  bad_parent.set_parent("projects/p");
  EXPECT_EQ(service_->DoCreateTable(bad_parent).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(service_->DoCreateTable(CreateRequest("bad/id")).status().code(),
            absl::StatusCode::kInvalidArgument);
  admin::CreateTableRequest zero = CreateRequest("t");
  (*zero.mutable_table()->mutable_column_families())["cf"].mutable_gc_rule()->set_max_num_versions(
      0);
  Status s = service_->DoCreateTable(zero).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("cf"), std::string::npos) << s;
  admin::CreateTableRequest negative_age = CreateRequest("t");
  (*negative_age.mutable_table()->mutable_column_families())["cf"]
      .mutable_gc_rule()
      ->mutable_max_age()
      ->set_seconds(-1);
  EXPECT_EQ(service_->DoCreateTable(negative_age).status().code(),
            absl::StatusCode::kInvalidArgument);
  admin::CreateTableRequest aggregate = CreateRequest("t");
  (*aggregate.mutable_table()->mutable_column_families())["sum"]
      .mutable_value_type()
      ->mutable_int64_type();
  EXPECT_EQ(service_->DoCreateTable(aggregate).status().code(), absl::StatusCode::kUnimplemented);
  admin::CreateTableRequest bad_family = CreateRequest("t");
  (*bad_family.mutable_table()->mutable_column_families())["a:b"];
  EXPECT_EQ(service_->DoCreateTable(bad_family).status().code(),
            absl::StatusCode::kInvalidArgument);
  admin::CreateTableRequest empty_split = CreateRequest("t");
  empty_split.add_initial_splits();
  EXPECT_EQ(service_->DoCreateTable(empty_split).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(engine_->ListTablets().empty());
}

TEST_F(AdminServiceTest, ListAndGetTables) {
  for (const char* id : {"c", "a", "b"}) {
    admin::CreateTableRequest r = CreateRequest(id);
    (*r.mutable_table()->mutable_column_families())["cf"];
    ASSERT_TRUE(service_->DoCreateTable(r).ok());
  }
  admin::ListTablesRequest list;
  list.set_parent(kParent);
  auto all = service_->DoListTables(list);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->tables_size(), 3);
  EXPECT_EQ(all->tables(0).name(), "projects/p/instances/i/tables/a");
  EXPECT_TRUE(all->tables(0).column_families().empty());  // NAME_ONLY by default
  EXPECT_TRUE(all->next_page_token().empty());

  list.set_view(admin::Table::SCHEMA_VIEW);
  list.set_page_size(2);
  auto page1 = service_->DoListTables(list);
  ASSERT_TRUE(page1.ok());
  ASSERT_EQ(page1->tables_size(), 2);
  EXPECT_EQ(page1->tables(1).column_families().size(), 1u);
  ASSERT_EQ(page1->next_page_token(), "b");
  list.set_page_token(page1->next_page_token());
  auto page2 = service_->DoListTables(list);
  ASSERT_TRUE(page2.ok());
  ASSERT_EQ(page2->tables_size(), 1);
  EXPECT_EQ(page2->tables(0).name(), "projects/p/instances/i/tables/c");
  EXPECT_TRUE(page2->next_page_token().empty());
  list.set_page_token("not/a/token");
  EXPECT_EQ(service_->DoListTables(list).status().code(), absl::StatusCode::kInvalidArgument);

  admin::GetTableRequest get;
  get.set_name("projects/p/instances/i/tables/b");
  auto b = service_->DoGetTable(get);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->column_families().size(), 1u);  // SCHEMA_VIEW by default
  get.set_view(admin::Table::NAME_ONLY);
  EXPECT_TRUE(service_->DoGetTable(get)->column_families().empty());
  get.set_name("projects/p/instances/i/tables/zz");
  Status missing = service_->DoGetTable(get).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.message(), "table \"projects/p/instances/i/tables/zz\" not found");
}

TEST_F(AdminServiceTest, ModifyColumnFamiliesIsAtomic) {
  CreateDefault();
  admin::ModifyColumnFamiliesRequest r;
  r.set_name(kTable);
  auto* create = r.add_modifications();
  create->set_id("new");
  create->mutable_create();
  auto* update = r.add_modifications();
  update->set_id("cf");
  update->mutable_update()->mutable_gc_rule()->set_max_num_versions(5);
  update->mutable_update_mask()->add_paths("gc_rule");
  auto* drop = r.add_modifications();
  drop->set_id("meta");
  drop->set_drop(true);
  auto t = service_->DoModifyColumnFamilies(r);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->column_families().size(), 2u);
  EXPECT_EQ(t->column_families().at("cf").gc_rule().max_num_versions(), 5);
  EXPECT_EQ(t->column_families().count("meta"), 0u);

  // Issue 9: a bad GC rule's error names the family once.
  admin::ModifyColumnFamiliesRequest bad_rule;
  bad_rule.set_name(kTable);
  bad_rule.add_modifications()->set_id("cf");
  bad_rule.mutable_modifications(0)->mutable_update()->mutable_gc_rule()->set_max_num_versions(0);
  EXPECT_EQ(service_->DoModifyColumnFamilies(bad_rule).status().message(),
            "modification #0: column family cf: max_num_versions must be at least 1, got 0");
  bad_rule.mutable_modifications(0)->set_id("new2");
  bad_rule.mutable_modifications(0)->mutable_create()->mutable_gc_rule()->mutable_max_age();
  EXPECT_EQ(service_->DoModifyColumnFamilies(bad_rule).status().message(),
            "modification #0: column family new2: max_age must be at least one microsecond");

  // A failing modification leaves the whole request without effect.
  admin::ModifyColumnFamiliesRequest partial;
  partial.set_name(kTable);
  partial.add_modifications()->set_id("another");
  partial.mutable_modifications(0)->mutable_create();
  partial.add_modifications()->set_id("nope");
  partial.mutable_modifications(1)->set_drop(true);
  Status s = service_->DoModifyColumnFamilies(partial).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("nope"), std::string::npos) << s;
  EXPECT_EQ((*catalog_->GetTable(kTable))->schema.Find("another"), nullptr);

  admin::ModifyColumnFamiliesRequest exists;
  exists.set_name(kTable);
  exists.add_modifications()->set_id("cf");
  exists.mutable_modifications(0)->mutable_create();
  EXPECT_EQ(service_->DoModifyColumnFamilies(exists).status().code(),
            absl::StatusCode::kAlreadyExists);
  admin::ModifyColumnFamiliesRequest empty;
  empty.set_name(kTable);
  empty.add_modifications()->set_id("cf");
  EXPECT_EQ(service_->DoModifyColumnFamilies(empty).status().code(),
            absl::StatusCode::kInvalidArgument);
  admin::ModifyColumnFamiliesRequest bad_path;
  bad_path.set_name(kTable);
  bad_path.add_modifications()->set_id("cf");
  bad_path.mutable_modifications(0)->mutable_update();
  bad_path.mutable_modifications(0)->mutable_update_mask()->add_paths("bogus");
  EXPECT_EQ(service_->DoModifyColumnFamilies(bad_path).status().code(),
            absl::StatusCode::kInvalidArgument);
  admin::ModifyColumnFamiliesRequest kind_change;
  kind_change.set_name(kTable);
  kind_change.add_modifications()->set_id("cf");
  kind_change.mutable_modifications(0)
      ->mutable_update()
      ->mutable_tessera_options()
      ->set_time_sorted(true);
  kind_change.mutable_modifications(0)->mutable_update_mask()->add_paths("tessera_options");
  EXPECT_EQ(service_->DoModifyColumnFamilies(kind_change).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(AdminServiceTest, DroppedFamilyDataIsGoneEvenWhenRecreated) {
  CreateDefault();
  Put("a", "meta", "old");
  Put("a", "cf", "keep");
  admin::ModifyColumnFamiliesRequest drop;
  drop.set_name(kTable);
  drop.add_modifications()->set_id("meta");
  drop.mutable_modifications(0)->set_drop(true);
  ASSERT_TRUE(service_->DoModifyColumnFamilies(drop).ok());
  admin::ModifyColumnFamiliesRequest create;
  create.set_name(kTable);
  create.add_modifications()->set_id("meta");
  create.mutable_modifications(0)->mutable_create();
  ASSERT_TRUE(service_->DoModifyColumnFamilies(create).ok());
  auto info = catalog_->GetTable(kTable);
  auto row = engine_->ReadRow((*info)->TabletFor("a").id, "a", model::ReadSpec{});
  ASSERT_TRUE(row.ok()) << row.status();
  ASSERT_TRUE(row->has_value());
  ASSERT_EQ((*row)->cells.size(), 1u);
  EXPECT_EQ((*row)->cells[0].family, "cf");
}

TEST_F(AdminServiceTest, DeletionProtection) {
  CreateDefault();
  admin::UpdateTableRequest protect;
  protect.mutable_table()->set_name(kTable);
  protect.mutable_table()->set_deletion_protection(true);
  protect.mutable_update_mask()->add_paths("deletion_protection");
  auto op = service_->DoUpdateTable(protect);
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_TRUE(op->done());
  admin::Table in_op;
  ASSERT_TRUE(op->response().UnpackTo(&in_op));
  EXPECT_TRUE(in_op.deletion_protection());

  admin::DeleteTableRequest del;
  del.set_name(kTable);
  Status refused = service_->DoDeleteTable(del);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("protected"), std::string::npos);
  admin::ModifyColumnFamiliesRequest drop;
  drop.set_name(kTable);
  drop.add_modifications()->set_id("cf");
  drop.mutable_modifications(0)->set_drop(true);
  EXPECT_EQ(service_->DoModifyColumnFamilies(drop).status().code(),
            absl::StatusCode::kFailedPrecondition);

  admin::UpdateTableRequest no_mask = protect;
  no_mask.clear_update_mask();
  EXPECT_EQ(service_->DoUpdateTable(no_mask).status().code(), absl::StatusCode::kInvalidArgument);
  protect.mutable_table()->set_deletion_protection(false);
  ASSERT_TRUE(service_->DoUpdateTable(protect).ok());
  EXPECT_TRUE(service_->DoDeleteTable(del).ok());
  EXPECT_EQ(service_->DoDeleteTable(del).code(), absl::StatusCode::kNotFound);
}

TEST_F(AdminServiceTest, DropRowRange) {
  CreateDefault();
  for (const char* row : {"a1", "a2", "b1", "m", "user1", "user2", "users"}) Put(row, "cf", "v");
  admin::DropRowRangeRequest r;
  r.set_name(kTable);
  r.set_row_key_prefix("user");
  ASSERT_TRUE(service_->DoDropRowRange(r).ok());
  EXPECT_EQ(Rows(), (std::vector<std::string>{"a1", "a2", "b1", "m"}));
  r.set_row_key_prefix("");
  EXPECT_EQ(service_->DoDropRowRange(r).code(), absl::StatusCode::kInvalidArgument);
  r.clear_target();
  EXPECT_EQ(service_->DoDropRowRange(r).code(), absl::StatusCode::kInvalidArgument);
  r.set_delete_all_data_from_table(true);
  ASSERT_TRUE(service_->DoDropRowRange(r).ok());
  EXPECT_TRUE(Rows().empty());
  Put("after", "cf", "v");
  EXPECT_EQ(Rows(), (std::vector<std::string>{"after"}));
  r.set_name("projects/p/instances/i/tables/none");
  EXPECT_EQ(service_->DoDropRowRange(r).code(), absl::StatusCode::kNotFound);
}

// In cluster mode (definitions given) dropping all data deletes each row through the table
// access, every tablet's, instead of truncating this node's tablets.
TEST_F(AdminServiceTest, DropRowRangeOfAllDataInClusterModeDeletesThroughTheAccess) {
  service_ = std::make_unique<AdminService>(catalog_.get(), access_.get(), catalog_.get());
  CreateDefault();
  for (const char* row : {"a1", "b1", "m", "user1", "z"}) Put(row, "cf", "v");
  admin::DropRowRangeRequest r;
  r.set_name(kTable);
  r.set_delete_all_data_from_table(true);
  ASSERT_TRUE(service_->DoDropRowRange(r).ok());
  EXPECT_TRUE(Rows().empty());
  Put("after", "cf", "v");
  EXPECT_EQ(Rows(), (std::vector<std::string>{"after"}));
}

// Rows whose only cells are collectable (here by age) are dropped too: relaxing the rule
// afterwards must not bring them back.
TEST_F(AdminServiceTest, DropRowRangeDropsRowsOfCollectableCellsOnly) {
  CreateDefault();
  admin::ModifyColumnFamiliesRequest age;
  age.set_name(kTable);
  auto* m = age.add_modifications();
  m->set_id("cf");
  m->mutable_update()->mutable_gc_rule()->mutable_max_age()->set_seconds(1);
  ASSERT_TRUE(service_->DoModifyColumnFamilies(age).ok());
  Put("user1", "cf", "old");  // timestamp 1000: long collectable by age
  Put("user2", "meta", "kept");
  EXPECT_EQ(Rows(), (std::vector<std::string>{"user2"}));
  admin::DropRowRangeRequest r;
  r.set_name(kTable);
  r.set_row_key_prefix("user");
  ASSERT_TRUE(service_->DoDropRowRange(r).ok());
  EXPECT_TRUE(Rows().empty());
  admin::ModifyColumnFamiliesRequest never = age;
  never.mutable_modifications(0)->mutable_update()->clear_gc_rule();
  ASSERT_TRUE(service_->DoModifyColumnFamilies(never).ok());
  EXPECT_TRUE(Rows().empty());
}

// Dropping a family and creating it again in one request purges its data, as two requests do.
TEST_F(AdminServiceTest, DropAndCreateInOneRequestPurgesTheFamily) {
  CreateDefault();
  Put("a", "meta", "old");
  Put("b", "cf", "other family");
  admin::ModifyColumnFamiliesRequest r;
  r.set_name(kTable);
  r.add_modifications()->set_id("meta");
  r.mutable_modifications(0)->set_drop(true);
  r.add_modifications()->set_id("meta");
  r.mutable_modifications(1)->mutable_create();
  auto t = service_->DoModifyColumnFamilies(r);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->column_families().count("meta"), 1u);
  EXPECT_EQ(Rows(), (std::vector<std::string>{"b"}));
  Put("c", "meta", "new");
  EXPECT_EQ(Rows(), (std::vector<std::string>{"b", "c"}));
  // A failing request still changes nothing, even one that would be applied in parts.
  admin::ModifyColumnFamiliesRequest failing = r;
  failing.add_modifications()->set_id("nope");
  failing.mutable_modifications(2)->set_drop(true);
  EXPECT_EQ(service_->DoModifyColumnFamilies(failing).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Rows(), (std::vector<std::string>{"b", "c"}));
}

TEST_F(AdminServiceTest, ConsistencyTokens) {
  CreateDefault();
  admin::GenerateConsistencyTokenRequest gen;
  gen.set_name(kTable);
  auto token = service_->DoGenerateConsistencyToken(gen);
  ASSERT_TRUE(token.ok()) << token.status();
  admin::CheckConsistencyRequest check;
  check.set_name(kTable);
  check.set_consistency_token(token->consistency_token());
  auto consistent = service_->DoCheckConsistency(check);
  ASSERT_TRUE(consistent.ok()) << consistent.status();
  EXPECT_TRUE(consistent->consistent());
  for (const char* bad : {"", "TokenFor-x", "tessera-consistency-", "tessera-consistency-1x"}) {
    check.set_consistency_token(bad);
    EXPECT_EQ(service_->DoCheckConsistency(check).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  gen.set_name("projects/p/instances/i/tables/none");
  EXPECT_EQ(service_->DoGenerateConsistencyToken(gen).status().code(), absl::StatusCode::kNotFound);
}

// Changes go to the catalog::TableDefinitions given (the cluster schema in cluster mode); reads
// stay on the catalog.
class CountingDefinitions final : public catalog::TableDefinitions {
 public:
  explicit CountingDefinitions(catalog::TableCatalog* catalog) : catalog_(catalog) {}
  StatusOr<std::shared_ptr<const catalog::TableInfo>> CreateTable(
      std::string_view instance, model::TableSchema schema,
      std::vector<std::string> split_keys) override {
    ++creates;
    return catalog_->CreateTable(instance, std::move(schema), std::move(split_keys));
  }
  Status DeleteTable(std::string_view full_name) override {
    ++deletes;
    if (refuse_deletes) return absl::UnavailableError("no session");
    return catalog_->DeleteTable(full_name);
  }
  StatusOr<std::shared_ptr<const catalog::TableInfo>> UpdateSchema(
      std::string_view full_name,
      const std::function<Status(model::TableSchema*)>& change) override {
    ++updates;
    return catalog_->UpdateSchema(full_name, change);
  }
  int creates = 0, deletes = 0, updates = 0;
  bool refuse_deletes = false;

 private:
  catalog::TableCatalog* const catalog_;
};

TEST_F(AdminServiceTest, ChangesGoThroughTheTableDefinitions) {
  CountingDefinitions definitions(catalog_.get());
  service_ = std::make_unique<AdminService>(catalog_.get(), access_.get(), &definitions);
  CreateDefault();
  EXPECT_EQ(definitions.creates, 1);

  admin::UpdateTableRequest protect;
  protect.mutable_table()->set_name(kTable);
  protect.mutable_table()->set_deletion_protection(true);
  protect.mutable_update_mask()->add_paths("deletion_protection");
  ASSERT_TRUE(service_->DoUpdateTable(protect).ok());
  admin::ModifyColumnFamiliesRequest add;
  add.set_name(kTable);
  add.add_modifications()->set_id("extra");
  add.mutable_modifications(0)->mutable_create();
  ASSERT_TRUE(service_->DoModifyColumnFamilies(add).ok());
  EXPECT_EQ(definitions.updates, 2);

  admin::GetTableRequest get;
  get.set_name(kTable);
  ASSERT_TRUE(service_->DoGetTable(get).ok());
  admin::ListTablesRequest list;
  list.set_parent(kParent);
  ASSERT_TRUE(service_->DoListTables(list).ok());

  admin::DeleteTableRequest del;
  del.set_name(kTable);
  definitions.refuse_deletes = true;
  EXPECT_EQ(service_->DoDeleteTable(del).code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(catalog_->GetTable(kTable).ok());
  EXPECT_EQ(definitions.deletes, 1);
  EXPECT_EQ(definitions.creates + definitions.updates, 3);  // reads went to the catalog
}

// Tessera's table options: checked and resolved at CreateTable against the node's default and
// the cluster (here a fake view of three nodes in two datacenters, two with tokens), stored with
// the schema, returned by GetTable and ListTables in the FULL view only.
class AdminTableOptionsTest : public AdminServiceTest {
 protected:
  void SetUp() override {
    AdminServiceTest::SetUp();
    PlacementDefaults defaults;
    defaults.placement = "tablets";
    defaults.cluster = [this]() -> StatusOr<catalog::ClusterView> { return view_; };
    service_ =
        std::make_unique<AdminService>(catalog_.get(), access_.get(), nullptr, nullptr, nullptr,
                                     defaults);
    for (const char* e : {"a:1", "b:1", "c:1"}) {
      catalog::PlacementNode& n = view_.live.emplace_back();
      n.endpoint = e;
      n.dc = e[0] == 'c' ? "dc2" : "dc1";
      n.rack = "r";
    }
    view_.live[0].token = view_.tokens["a:1"] = "k";
    view_.live[1].token = view_.tokens["b:1"] = "d";
    view_.tokens["gone:1"] = "t";  // on the ring, not live
  }
  StatusOr<admin::Table> Create(const std::string& id, const std::string& placement,
                                const std::string& read = "", const std::string& write = "") {
    admin::CreateTableRequest r = CreateRequest(id);
    r.mutable_table()->mutable_tessera_options()->set_placement(placement);
    r.mutable_table()->mutable_tessera_options()->set_read_consistency(read);
    r.mutable_table()->mutable_tessera_options()->set_write_consistency(write);
    r.add_initial_splits()->set_key("m");
    return service_->DoCreateTable(r);
  }
  admin::Table Get(const std::string& id, admin::Table::View view) {
    admin::GetTableRequest g;
    g.set_name(std::string(kParent) + "/tables/" + id);
    g.set_view(view);
    StatusOr<admin::Table> t = service_->DoGetTable(g);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.value_or(admin::Table{});
  }
  std::vector<std::string> Starts(const std::string& id) {
    std::vector<std::string> out;
    auto info = catalog_->GetTable(std::string(kParent) + "/tables/" + id);
    EXPECT_TRUE(info.ok());
    for (const catalog::TabletRef& tablet : (*info)->tablets) out.push_back(tablet.start_row);
    return out;
  }

  catalog::ClusterView view_;
  Status view_error_;
};

TEST_F(AdminTableOptionsTest, ResolvedStoredAndReturnedInTheFullView) {
  ASSERT_TRUE(Create("plain", "").ok());
  ASSERT_TRUE(Create("r", "ring", "quorum", "local_quorum").ok());
  ASSERT_TRUE(Create("dcs", "tablets:dc2=1,dc1=2").ok());
  // The node's default with the default RF, min(3, live nodes).
  EXPECT_EQ(Get("plain", admin::Table::FULL).tessera_options().placement(), "tablets:3");
  const admin::Table r = Get("r", admin::Table::FULL);
  EXPECT_EQ(r.tessera_options().placement(), "ring:3");
  EXPECT_EQ(r.tessera_options().read_consistency(), "quorum");
  EXPECT_EQ(r.tessera_options().write_consistency(), "local_quorum");
  EXPECT_EQ(Get("dcs", admin::Table::FULL).tessera_options().placement(), "tablets:dc1=2,dc2=1");
  // Not in the other views, which stay what Bigtable returns.
  EXPECT_FALSE(Get("r", admin::Table::SCHEMA_VIEW).has_tessera_options());
  admin::ListTablesRequest list;
  list.set_parent(kParent);
  list.set_view(admin::Table::FULL);
  StatusOr<admin::ListTablesResponse> listed = service_->DoListTables(list);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->tables_size(), 3);
  EXPECT_EQ(listed->tables(1).tessera_options().placement(), "tablets:3");
  EXPECT_EQ(listed->tables(2).tessera_options().write_consistency(), "local_quorum");
  // A ring table is cut at every token of the ring, the absent node's too, and at its splits;
  // a tablets table only at its splits.
  EXPECT_EQ(Starts("r"), (std::vector<std::string>{"", "d", "k", "m", "t"}));
  EXPECT_EQ(Starts("plain"), (std::vector<std::string>{"", "m"}));
  // Kept in the schema: a catalog rebuilt from the engine's tablets has them.
  auto reopened = catalog::TableCatalog::Open(engine_.get(), /*seed=*/1);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  auto info = (*reopened)->GetTable(std::string(kParent) + "/tables/r");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ((*info)->schema.options, (model::TableOptions{"ring:3", "quorum", "local_quorum", ""}));
}

TEST_F(AdminTableOptionsTest, CompactionIsKeptAndChecked) {
  admin::CreateTableRequest r = CreateRequest("tiered");
  r.mutable_table()->mutable_tessera_options()->set_compaction("size_tiered");
  ASSERT_TRUE(service_->DoCreateTable(r).ok());
  EXPECT_EQ(Get("tiered", admin::Table::FULL).tessera_options().compaction(), "size_tiered");
  auto info = catalog_->GetTable(std::string(kParent) + "/tables/tiered");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ((*info)->schema.options.compaction, "size_tiered");
  // Not given: the node's default, left empty.
  ASSERT_TRUE(Create("plain2", "").ok());
  EXPECT_EQ(Get("plain2", admin::Table::FULL).tessera_options().compaction(), "");
  r = CreateRequest("bad");
  r.mutable_table()->mutable_tessera_options()->set_compaction("tiered");
  StatusOr<admin::Table> bad = service_->DoCreateTable(r);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(bad.status().message())
                .find("tessera_options.compaction: unknown compaction \"tiered\""),
            std::string::npos)
      << bad.status();
}

TEST_F(AdminTableOptionsTest, BadOptionsAreInvalidArgumentNamingTheValue) {
  auto refused = [&](const std::string& placement, const std::string& read = "",
                     const std::string& write = "") {
    StatusOr<admin::Table> t = Create("bad", placement, read, write);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << placement;
    return std::string(t.status().message());
  };
  EXPECT_NE(refused("hash:3").find("tessera_options.placement: invalid placement \"hash:3\": "
                                   "unknown strategy \"hash\""),
            std::string::npos);
  EXPECT_NE(refused("ring:0").find("got 0"), std::string::npos);
  EXPECT_EQ(refused("tablets:4"),
            "tessera_options.placement: placement \"tablets:4\" needs 4 nodes, the cluster has "
            "3 live");
  EXPECT_EQ(refused("ring:dc3=1"),
            "tessera_options.placement: placement \"ring:dc3=1\": datacenter dc3 has no live "
            "nodes");
  EXPECT_EQ(refused("", "all"),
            "tessera_options.read_consistency: unknown read consistency level \"all\" "
            "(primary, quorum or one)");
  EXPECT_EQ(refused("", "", "primary"),
            "tessera_options.write_consistency: unknown write consistency level \"primary\" "
            "(one, quorum, all or local_quorum)");
  EXPECT_FALSE(catalog_->GetTable(std::string(kParent) + "/tables/bad").ok());
  // The cluster cannot be read: the error is the lock service's.
  view_error_ = absl::UnavailableError("no session");
  PlacementDefaults defaults;
  defaults.cluster = [this]() -> StatusOr<catalog::ClusterView> { return view_error_; };
  service_ =
      std::make_unique<AdminService>(catalog_.get(), access_.get(), nullptr, nullptr, nullptr,
                                     defaults);
  EXPECT_EQ(Create("later", "").status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(AdminServiceTest, WithoutAClusterATableIsPlacedOnThisNodeAlone) {
  admin::CreateTableRequest r = CreateRequest("solo");
  r.mutable_table()->mutable_tessera_options()->set_placement("ring");
  ASSERT_TRUE(service_->DoCreateTable(r).ok());
  r.set_table_id("two");
  r.mutable_table()->mutable_tessera_options()->set_placement("tablets:2");
  EXPECT_EQ(service_->DoCreateTable(r).status().code(), absl::StatusCode::kInvalidArgument);
  auto info = catalog_->GetTable(std::string(kParent) + "/tables/solo");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ((*info)->schema.options.placement, "ring:1");
  EXPECT_EQ((*info)->tablets.size(), 1u);
}

}  // namespace
}  // namespace tessera::server
