// SchemaStore over an in-memory LocalTables, on the embedded lock service. The store over the
// real TableCatalog and engine, node by node, is tested in server/cluster_definitions_test.cc.
#include "tessera/catalog/schema_store.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/catalog/tablet_id.h"
#include "tessera/coord/embedded_lock_service.h"
#include "tessera/testing/test_support.h"
#include "tessera/util/clock.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::catalog {
namespace {

using ::tessera::testing::WaitFor;

constexpr char kInstance[] = "projects/p/instances/i";
constexpr char kTable[] = "projects/p/instances/i/tables/t";

model::TableSchema Schema(std::string name, std::vector<std::string> families) {
  model::TableSchema s;
  s.name = std::move(name);
  for (auto& f : families) s.families[f];
  return s;
}

// The node's tables as a map; logs what the store asked, and can fail on demand.
class FakeTables final : public LocalTables {
 public:
  bool Contains(std::string_view full_name) const override {
    absl::MutexLock lock(&mu_);
    return tables_.contains(std::string(full_name));
  }
  std::vector<LocalTable> List() const override {
    absl::MutexLock lock(&mu_);
    std::vector<LocalTable> out;
    for (const auto& entry : tables_) out.push_back(entry.second);
    return out;
  }
  Status Apply(const TableDefinition& definition) override {
    absl::MutexLock lock(&mu_);
    if (!fail_.ok()) return fail_;
    log_.push_back(StrCat("apply ", definition.full_name, " v", definition.schema.version));
    // As the node's catalog: the tablets of a table made here take the definition's prefix; a
    // table already here keeps its own.
    auto [it, created] = tables_.try_emplace(definition.full_name);
    const uint64_t prefix = created ? definition.tablet_prefix : it->second.tablet_prefix;
    it->second = LocalTable{definition.full_name, definition.schema, definition.split_keys, prefix};
    return Status();
  }
  // A table made by this node alone, before it joined (the schema store does not know it).
  void AddAlone(LocalTable table) {
    absl::MutexLock lock(&mu_);
    tables_[table.full_name] = std::move(table);
  }
  Status Drop(std::string_view full_name) override {
    absl::MutexLock lock(&mu_);
    if (tables_.erase(std::string(full_name)) == 0) return absl::NotFoundError("no table");
    log_.push_back(StrCat("drop ", full_name));
    return Status();
  }

  // The prefix of the local table's tablet ids, 0 when absent.
  uint64_t Prefix(const std::string& name = kTable) const {
    absl::MutexLock lock(&mu_);
    auto it = tables_.find(name);
    return it == tables_.end() ? 0 : it->second.tablet_prefix;
  }
  // The local schema version of `name`, 0 when absent.
  uint64_t Version(const std::string& name = kTable) const {
    absl::MutexLock lock(&mu_);
    auto it = tables_.find(name);
    return it == tables_.end() ? 0 : it->second.schema.version;
  }
  void FailApplies(Status status) {
    absl::MutexLock lock(&mu_);
    fail_ = std::move(status);
  }
  std::vector<std::string> TakeLog() {
    absl::MutexLock lock(&mu_);
    return std::exchange(log_, {});
  }

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, LocalTable> tables_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> log_ ABSL_GUARDED_BY(mu_);
  Status fail_ ABSL_GUARDED_BY(mu_);
};

// One node: its tables, incarnation file, store and session.
struct Node {
  explicit Node(coord::LockService* service) : service(service) {
    SchemaStoreOptions options;
    options.fs = &fs;
    options.state_path = "/CLUSTER_SCHEMA";
    auto opened = SchemaStore::Open(&tables, options);
    EXPECT_TRUE(opened.ok()) << opened.status();
    store = *std::move(opened);
  }
  ~Node() {
    store.reset();
    session.reset();
  }
  Status Reattach() {
    store->Detach();
    session.reset();
    ASSIGN_OR_RETURN(session, service->CreateSession(coord::SessionOptions{}));
    return store->Attach(session.get());
  }

  coord::LockService* const service;
  MemFileSystem fs;
  FakeTables tables;
  std::unique_ptr<SchemaStore> store;
  std::unique_ptr<coord::Session> session;
};

class SchemaStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    coord::EmbeddedLockServiceOptions options;
    options.fs = &coord_fs_;
    options.clock = SystemClock();
    options.dir = "/coord";
    auto service = coord::EmbeddedLockService::Open(options);
    ASSERT_TRUE(service.ok()) << service.status();
    service_ = *std::move(service);
    a_ = std::make_unique<Node>(service_.get());
    b_ = std::make_unique<Node>(service_.get());
    ASSERT_TRUE(a_->Reattach().ok());
    ASSERT_TRUE(b_->Reattach().ok());
  }
  void TearDown() override {
    a_.reset();
    b_.reset();
    service_.reset();
  }

  MemFileSystem coord_fs_;
  std::unique_ptr<coord::EmbeddedLockService> service_;
  std::unique_ptr<Node> a_;
  std::unique_ptr<Node> b_;
};

TEST_F(SchemaStoreTest, ChangesAreLocalAtOnceAndReachTheOtherNode) {
  auto created = a_->store->CreateTable(kInstance, Schema("t", {"cf"}), {"m", "c", "m"});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(*created, kTable);
  EXPECT_EQ(a_->tables.Version(), 1u);  // before the call returned
  ASSERT_TRUE(WaitFor([&] { return b_->tables.Version() == 1; }));
  EXPECT_EQ(b_->tables.List()[0].split_keys, (std::vector<std::string>{"c", "m"}));

  ASSERT_TRUE(b_->store
                  ->UpdateSchema(kTable,
                                 [](model::TableSchema* s) {
                                   s->families["more"];
                                   return Status();
                                 })
                  .ok());
  EXPECT_EQ(b_->tables.Version(), 2u);
  ASSERT_TRUE(WaitFor([&] { return a_->tables.Version() == 2; }));
  ASSERT_TRUE(a_->store->DeleteTable(kTable).ok());
  EXPECT_EQ(a_->tables.Version(), 0u);
  ASSERT_TRUE(WaitFor([&] { return b_->tables.Version() == 0; }));
  // What came through the watch counts as an event applied: at least the other node's changes
  // (a node's own change counts too when its watch delivered it first).
  EXPECT_GE(a_->store->GetStats().events_applied, 1u);  // b's update
  EXPECT_TRUE(WaitFor([&] { return b_->store->GetStats().events_applied >= 2; }))
      << b_->store->GetStats().events_applied;
  EXPECT_EQ(a_->store->GetStats().apply_failures, 0u);
}

// Each change gives the revision a node must have applied to hold it; the node that made it has
// applied it when the call returns, the other once its watch delivered it — and not before.
TEST_F(SchemaStoreTest, AChangesRevisionIsAppliedHereAtOnceAndThereWhenTheChangeArrives) {
  const int64_t before = b_->store->applied_revision();
  int64_t created_at = 0;
  ASSERT_TRUE(a_->store->CreateTable(kInstance, Schema("t", {"cf"}), {}, &created_at).ok());
  EXPECT_GT(created_at, before);
  EXPECT_GE(a_->store->applied_revision(), created_at);
  ASSERT_TRUE(WaitFor([&] { return b_->store->applied_revision() >= created_at; }));
  EXPECT_EQ(b_->tables.Version(), 1u) << "b reached the revision without the table";

  int64_t updated_at = 0;
  ASSERT_TRUE(a_->store
                  ->UpdateSchema(
                      kTable,
                      [](model::TableSchema* s) {
                        s->families["more"];
                        return Status();
                      },
                      &updated_at)
                  .ok());
  EXPECT_GT(updated_at, created_at);
  EXPECT_GE(a_->store->applied_revision(), updated_at);
  ASSERT_TRUE(WaitFor([&] { return b_->store->applied_revision() >= updated_at; }));
  EXPECT_EQ(b_->tables.Version(), 2u);

  int64_t deleted_at = 0;
  ASSERT_TRUE(a_->store->DeleteTable(kTable, &deleted_at).ok());
  EXPECT_GT(deleted_at, updated_at);
  ASSERT_TRUE(WaitFor([&] { return b_->store->applied_revision() >= deleted_at; }));
  EXPECT_EQ(b_->tables.Version(), 0u) << "b reached the delete's revision with the table";
}

TEST_F(SchemaStoreTest, AnotherIncarnationIsDroppedBeforeItIsCreated) {
  ASSERT_TRUE(a_->store->CreateTable(kInstance, Schema("t", {"cf"}), {}).ok());
  ASSERT_TRUE(WaitFor([&] { return b_->tables.Version() == 1; }));
  b_->store->Detach();
  (void)b_->tables.TakeLog();
  ASSERT_TRUE(a_->store->DeleteTable(kTable).ok());
  ASSERT_TRUE(a_->store->CreateTable(kInstance, Schema("t", {"cf"}), {}).ok());
  ASSERT_TRUE(b_->Reattach().ok());
  EXPECT_EQ(b_->tables.TakeLog(),
            (std::vector<std::string>{StrCat("drop ", kTable), StrCat("apply ", kTable, " v1")}));
}

TEST_F(SchemaStoreTest, EveryNodeNamesTheTabletsAlike) {
  // A table made by the cluster: the record's create revision, on both nodes.
  ASSERT_TRUE(a_->store->CreateTable(kInstance, Schema("t", {"cf"}), {"m"}).ok());
  ASSERT_TRUE(WaitFor([&] { return b_->tables.Version() == 1; }));
  const uint64_t first = a_->tables.Prefix();
  EXPECT_GT(first, 0u);
  EXPECT_LT(first, kLocalPrefixBit);
  EXPECT_EQ(b_->tables.Prefix(), first);
  // Made again under the same name: another incarnation, other ids.
  ASSERT_TRUE(a_->store->DeleteTable(kTable).ok());
  ASSERT_TRUE(a_->store->CreateTable(kInstance, Schema("t", {"cf"}), {"m"}).ok());
  ASSERT_TRUE(WaitFor([&] { return b_->tables.Prefix() != first && b_->tables.Version() == 1; }));
  EXPECT_NE(a_->tables.Prefix(), first);
  EXPECT_EQ(b_->tables.Prefix(), a_->tables.Prefix());

  // A table b made alone joins with its own prefix, which a then uses, and which a schema
  // change keeps.
  const std::string u = "projects/p/instances/i/tables/u";
  model::TableSchema schema = Schema("u", {"cf"});
  schema.version = 3;
  const uint64_t alone = kLocalPrefixBit | 77;
  b_->tables.AddAlone(LocalTable{u, schema, {"k"}, alone});
  ASSERT_TRUE(b_->Reattach().ok());  // offers its unknown tables
  ASSERT_TRUE(WaitFor([&] { return a_->tables.Version(u) == 3; }));
  EXPECT_EQ(a_->tables.Prefix(u), alone);
  ASSERT_TRUE(a_->store
                  ->UpdateSchema(u,
                                 [](model::TableSchema* s) {
                                   s->families["more"];
                                   return Status();
                                 })
                  .ok());
  // A node joining later makes it from the changed record.
  Node c(service_.get());
  ASSERT_TRUE(c.Reattach().ok());
  EXPECT_EQ(c.tables.Version(u), 4u);
  EXPECT_EQ(c.tables.Prefix(u), alone);
}

TEST_F(SchemaStoreTest, RefusedAndFailedAppliesAreCountedApart) {
  // A refusal (the catalog's for a schema older than its own) is skipped for good.
  a_->tables.FailApplies(absl::FailedPreconditionError("the local schema is newer"));
  ASSERT_TRUE(b_->store->CreateTable(kInstance, Schema("t", {}), {}).ok());
  ASSERT_TRUE(WaitFor([&] { return a_->store->GetStats().divergent_records == 1; }));
  EXPECT_EQ(a_->store->GetStats().apply_failures, 0u);
  // An environment failure is retried by the next reconcile.
  const std::string u = "projects/p/instances/i/tables/u";
  a_->tables.FailApplies(absl::UnavailableError("disk trouble"));
  ASSERT_TRUE(b_->store->CreateTable(kInstance, Schema("u", {}), {}).ok());
  ASSERT_TRUE(WaitFor([&] { return a_->store->GetStats().apply_failures == 1; }));
  EXPECT_EQ(a_->store->Reconcile().code(), absl::StatusCode::kUnavailable);
  a_->tables.FailApplies(Status());
  ASSERT_TRUE(a_->store->Reconcile().ok());
  EXPECT_EQ(a_->tables.Version(u), 1u);
  EXPECT_EQ(a_->tables.Version(), 0u);  // the refused record is not offered again
  EXPECT_EQ(a_->store->GetStats().divergent_records, 1u);
}

TEST(SchemaStoreOptionsTest, CorruptStateFileIsDataLossAndOptionsAreChecked) {
  MemFileSystem fs;
  FakeTables tables;
  SchemaStoreOptions options;
  EXPECT_EQ(SchemaStore::Open(&tables, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.fs = &fs;
  options.state_path = "/db/CLUSTER_SCHEMA";
  EXPECT_EQ(SchemaStore::Open(nullptr, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.prefix = "";
  EXPECT_EQ(SchemaStore::Open(&tables, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.prefix = "schema/";
  options.max_attempts = 0;
  EXPECT_EQ(SchemaStore::Open(&tables, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.max_attempts = 16;
  {
    auto store = SchemaStore::Open(&tables, options);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_EQ((*store)->Attach(nullptr).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_FALSE((*store)->attached());
    EXPECT_EQ((*store)->Reconcile().code(), absl::StatusCode::kUnavailable);
  }
  ASSERT_TRUE(fs.CreateDirs("/db").ok());
  ASSERT_TRUE(WriteStringToFile(&fs, options.state_path, "TSCS\x01\x00garbage", true).ok());
  auto corrupt = SchemaStore::Open(&tables, options);
  EXPECT_EQ(corrupt.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(std::string(corrupt.status().message()).find("/db/CLUSTER_SCHEMA"), std::string::npos);
}

}  // namespace
}  // namespace tessera::catalog
