// Cluster mode's table definitions node by node: the schema store (catalog/schema_store.h)
// over each node's real catalog::TableCatalog and engine, through ClusterDefinitions.
#include "tessera/server/cluster_definitions.h"

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/catalog/schema_record.h"
#include "tessera/coord/embedded_lock_service.h"
#include "tessera/coord/etcd_lock_service.h"
#include "tessera/testing/etcd_test_server.h"
#include "tessera/testing/mem_tables.h"
#include "tessera/testing/test_support.h"
#include "tessera/util/clock.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::server {
namespace {

using catalog::SchemaRecord;

constexpr char kInstance[] = "projects/p/instances/i";
constexpr char kTable[] = "projects/p/instances/i/tables/t";

model::TableSchema Schema(std::string name, std::vector<std::string> families) {
  model::TableSchema s;
  s.name = std::move(name);
  for (auto& f : families) s.families[f];
  return s;
}

// Polls `done` every 2 ms for at most `timeout_ms`.
using ::tessera::testing::WaitFor;

// One node: its own file system, engine, catalog, ClusterDefinitions and lock-service session.
// Stop() and Start() again simulate a restart (the file system survives).
class Node {
 public:
  explicit Node(coord::LockService* service) : service_(service) {}
  ~Node() { Stop(); }

  Status Start() {
    RETURN_IF_ERROR(testing::OpenMemTables(&fs_, &clock_, &engine_, &catalog_));
    catalog::SchemaStoreOptions schema_options;
    schema_options.fs = &fs_;
    schema_options.state_path = "/db/CLUSTER_SCHEMA";
    ASSIGN_OR_RETURN(schema_, ClusterDefinitions::Open(catalog_.get(), schema_options));
    return Reattach();
  }

  // A new session, attached (the node's re-registration).
  Status Reattach() {
    store()->Detach();
    session_.reset();
    ASSIGN_OR_RETURN(session_, service_->CreateSession(coord::SessionOptions{}));
    return store()->Attach(session_.get());
  }

  void Stop() {
    if (schema_ != nullptr) store()->Detach();
    schema_.reset();
    session_.reset();
    catalog_.reset();
    if (engine_ != nullptr) (void)engine_->Close();
    engine_.reset();
  }

  ClusterDefinitions* schema() { return schema_.get(); }
  catalog::SchemaStore* store() { return schema_->store(); }
  catalog::TableCatalog* catalog() { return catalog_.get(); }

  // The local table's schema version, or 0 when the table is absent.
  uint64_t Version(std::string_view table = kTable) {
    auto info = catalog_->GetTable(table);
    return info.ok() ? (*info)->schema.version : 0;
  }

  void Write(const std::string& row, const std::string& family, const std::string& value) {
    auto info = catalog_->GetTable(kTable);
    ASSERT_TRUE(info.ok()) << info.status();
    model::RowMutation m(row);
    m.SetCell(family, "q", 1000, value);
    Status s = engine_->Apply((*info)->TabletFor(row).id, m);
    ASSERT_TRUE(s.ok()) << s;
  }

  // The families of `row`'s visible cells, in order ("" when the row has none).
  std::string Families(const std::string& row) {
    auto info = catalog_->GetTable(kTable);
    if (!info.ok()) return "<no table>";
    auto read = engine_->ReadRow((*info)->TabletFor(row).id, row, model::ReadSpec{});
    if (!read.ok()) return read.status().ToString();
    std::string out;
    if (!read->has_value()) return out;
    for (const model::Cell& c : (*read)->cells) out += (out.empty() ? "" : ",") + c.family;
    return out;
  }

 private:
  coord::LockService* const service_;
  MemFileSystem fs_;
  ManualClock clock_;
  std::unique_ptr<tablet::Engine> engine_;
  std::unique_ptr<catalog::TableCatalog> catalog_;
  std::unique_ptr<ClusterDefinitions> schema_;
  std::unique_ptr<coord::Session> session_;
};

class ClusterSchemaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    coord::EmbeddedLockServiceOptions options;
    options.fs = &coord_fs_;
    options.clock = SystemClock();
    options.dir = "/coord";
    auto service = coord::EmbeddedLockService::Open(options);
    ASSERT_TRUE(service.ok()) << service.status();
    service_ = *std::move(service);
    for (int i = 0; i < 3; ++i) {
      nodes_.push_back(std::make_unique<Node>(service_.get()));
      Status s = nodes_.back()->Start();
      ASSERT_TRUE(s.ok()) << s;
    }
  }
  void TearDown() override {
    nodes_.clear();
    raw_.reset();
    service_.reset();
  }

  // A session of its own, for writing records by hand.
  coord::Session* Raw() {
    if (raw_ == nullptr) raw_ = *service_->CreateSession(coord::SessionOptions{});
    return raw_.get();
  }

  bool AllAtVersion(uint64_t version, std::string_view table = kTable) {
    return WaitFor([&] {
      for (auto& n : nodes_) {
        if (n->Version(table) != version) return false;
      }
      return true;
    });
  }

  static std::function<Status(model::TableSchema*)> Drop(std::string family) {
    return [family](model::TableSchema* s) {
      s->families.erase(family);
      return Status();
    };
  }
  static std::function<Status(model::TableSchema*)> Add(std::string family) {
    return [family](model::TableSchema* s) {
      s->families[family];
      return Status();
    };
  }
  static std::function<Status(model::TableSchema*)> Protect(bool on) {
    return [on](model::TableSchema* s) {
      s->deletion_protection = on;
      return Status();
    };
  }

  MemFileSystem coord_fs_;
  std::unique_ptr<coord::EmbeddedLockService> service_;
  std::unique_ptr<coord::Session> raw_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

TEST_F(ClusterSchemaTest, CreateIsSeenOnEveryNode) {
  model::TableSchema s = Schema("t", {"cf"});
  s.families["cf"].gc_rule = model::GcRule::MaxNumVersions(2);
  auto t = nodes_[0]->schema()->CreateTable(kInstance, s, {"m"});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->schema.version, 1u);
  EXPECT_EQ((*t)->tablets.size(), 2u);
  ASSERT_TRUE(AllAtVersion(1));
  for (auto& n : nodes_) {
    auto info = n->catalog()->GetTable(kTable);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ((*info)->schema, (*t)->schema);
    ASSERT_EQ((*info)->tablets.size(), 2u);
    EXPECT_EQ((*info)->tablets[1].start_row, "m");
  }
  auto dup = nodes_[1]->schema()->CreateTable(kInstance, Schema("t", {}), {});
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(dup.status().message(), "table \"projects/p/instances/i/tables/t\" already exists");
  // The record is where the brief says.
  auto record = Raw()->Get("schema/projects/p/instances/i/tables/t");
  ASSERT_TRUE(record.ok()) << record.status();
  auto decoded = SchemaRecord::Decode(record->value);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->split_keys, std::vector<std::string>{"m"});
  EXPECT_EQ(record->owner.valid(), false);  // persistent
  EXPECT_EQ(nodes_[2]->store()->GetStats().apply_failures, 0u);
}

TEST_F(ClusterSchemaTest, BadInputIsRefusedBeforeTheLockService) {
  ClusterDefinitions* schema = nodes_[0]->schema();
  EXPECT_EQ(schema->CreateTable("nope", Schema("t", {}), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(schema->CreateTable(kInstance, Schema("t", {"bad:family"}), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(schema->CreateTable(kInstance, Schema("t", {}), {"a", ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(schema->UpdateSchema(kTable, Add("cf")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(schema->DeleteTable(kTable).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(schema->DeleteTable("not/a/table").code(), absl::StatusCode::kInvalidArgument);
  auto listing = Raw()->List("schema/");
  ASSERT_TRUE(listing.ok());
  EXPECT_TRUE(listing->files.empty());

  ASSERT_TRUE(schema->CreateTable(kInstance, Schema("t", {"cf"}), {}).ok());
  auto renamed = schema->UpdateSchema(kTable, [](model::TableSchema* s) {
    s->name = "u";
    return Status();
  });
  EXPECT_EQ(renamed.status().code(), absl::StatusCode::kInvalidArgument);
  auto refused = schema->UpdateSchema(
      kTable, [](model::TableSchema*) { return absl::NotFoundError("no such family"); });
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(refused.status().message(), "no such family");
  EXPECT_EQ(schema->UpdateSchema(kTable, Add("bad name")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(nodes_[0]->Version(), 1u);
}

TEST_F(ClusterSchemaTest, DroppedFamilyStaysDeadOnEveryNode) {
  ASSERT_TRUE(nodes_[0]->schema()->CreateTable(kInstance, Schema("t", {"cf", "meta"}), {"m"}).ok());
  ASSERT_TRUE(AllAtVersion(1));
  for (auto& n : nodes_) {
    n->Write("a", "cf", "keep");
    n->Write("a", "meta", "old");
    n->Write("x", "meta", "old");
    EXPECT_EQ(n->Families("a"), "cf,meta");
  }
  auto dropped = nodes_[1]->schema()->UpdateSchema(kTable, Drop("meta"));
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ((*dropped)->schema.version, 2u);
  EXPECT_EQ((*dropped)->schema.Find("meta"), nullptr);
  ASSERT_TRUE(AllAtVersion(2));
  auto added = nodes_[2]->schema()->UpdateSchema(kTable, Add("meta"));
  ASSERT_TRUE(added.ok()) << added.status();
  ASSERT_TRUE(AllAtVersion(3));
  for (auto& n : nodes_) {
    EXPECT_NE(n->catalog()->GetTable(kTable).value()->schema.Find("meta"), nullptr);
    EXPECT_EQ(n->Families("a"), "cf");
    EXPECT_EQ(n->Families("x"), "");
  }
}

TEST_F(ClusterSchemaTest, DeletionProtectionAndDelete) {
  ASSERT_TRUE(nodes_[0]->schema()->CreateTable(kInstance, Schema("t", {"cf"}), {}).ok());
  ASSERT_TRUE(nodes_[0]->schema()->UpdateSchema(kTable, Protect(true)).ok());
  ASSERT_TRUE(AllAtVersion(2));
  Status refused = nodes_[1]->schema()->DeleteTable(kTable);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.message(),
            "table \"projects/p/instances/i/tables/t\" is protected from deletion");
  // The local catalog refuses too (the mirror's copy carries the flag).
  EXPECT_EQ(nodes_[2]->catalog()->DeleteTable(kTable).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(nodes_[1]->schema()->UpdateSchema(kTable, Protect(false)).ok());
  Status deleted = nodes_[2]->schema()->DeleteTable(kTable);
  ASSERT_TRUE(deleted.ok()) << deleted;
  EXPECT_EQ(nodes_[2]->Version(), 0u);  // read-your-writes
  ASSERT_TRUE(AllAtVersion(0));
  EXPECT_EQ(nodes_[0]->schema()->DeleteTable(kTable).code(), absl::StatusCode::kNotFound);
  // A watch delivering the old puts again must not bring the table back: a later create is
  // a new table on every node.
  ASSERT_TRUE(nodes_[1]->schema()->CreateTable(kInstance, Schema("t", {"other"}), {}).ok());
  ASSERT_TRUE(AllAtVersion(1));
  for (auto& n : nodes_) {
    EXPECT_NE(n->catalog()->GetTable(kTable).value()->schema.Find("other"), nullptr);
  }
}

TEST_F(ClusterSchemaTest, ConcurrentUpdatesFromTwoNodesAllLand) {
  ASSERT_TRUE(nodes_[0]->schema()->CreateTable(kInstance, Schema("t", {}), {}).ok());
  ASSERT_TRUE(AllAtVersion(1));
  constexpr int kEach = 8;
  std::vector<Status> errors(2);
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kEach; ++i) {
        auto r = nodes_[w]->schema()->UpdateSchema(
            kTable, Add("f" + std::to_string(w) + "_" + std::to_string(i)));
        if (!r.ok()) {
          errors[w] = r.status();
          return;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(errors[0].ok()) << errors[0];
  ASSERT_TRUE(errors[1].ok()) << errors[1];
  ASSERT_TRUE(AllAtVersion(1 + 2 * kEach));
  for (auto& n : nodes_) {
    EXPECT_EQ(n->catalog()->GetTable(kTable).value()->schema.families.size(), 2u * kEach);
  }
}

TEST_F(ClusterSchemaTest, DetachedNodeRefusesChangesAndReconcilesOnAttach) {
  Node& late = *nodes_[2];
  ASSERT_TRUE(nodes_[0]->schema()->CreateTable(kInstance, Schema("t", {"cf"}), {}).ok());
  ASSERT_TRUE(nodes_[0]->schema()->CreateTable(kInstance, Schema("u", {"cf"}), {}).ok());
  ASSERT_TRUE(nodes_[0]->schema()->CreateTable(kInstance, Schema("gone", {"cf"}), {}).ok());
  const std::string u = "projects/p/instances/i/tables/u";
  const std::string v = "projects/p/instances/i/tables/v";
  const std::string gone = "projects/p/instances/i/tables/gone";
  ASSERT_TRUE(AllAtVersion(1, gone));
  late.Write("a", "cf", "old incarnation");

  late.store()->Detach();
  EXPECT_FALSE(late.store()->attached());
  auto refused = late.schema()->CreateTable(kInstance, Schema("w", {}), {});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(refused.status().message(), "this node has no lock-service session (re-registering)");
  EXPECT_EQ(late.schema()->UpdateSchema(kTable, Add("x")).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(late.schema()->DeleteTable(kTable).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(late.store()->Reconcile().code(), absl::StatusCode::kUnavailable);

  // Meanwhile: t deleted and created again with the same schema; u changed; v created; gone
  // deleted.
  ASSERT_TRUE(nodes_[0]->schema()->DeleteTable(kTable).ok());
  ASSERT_TRUE(nodes_[1]->schema()->CreateTable(kInstance, Schema("t", {"cf"}), {}).ok());
  ASSERT_TRUE(nodes_[1]->schema()->UpdateSchema(u, Add("more")).ok());
  ASSERT_TRUE(nodes_[1]->schema()->CreateTable(kInstance, Schema("v", {}), {}).ok());
  ASSERT_TRUE(nodes_[1]->schema()->DeleteTable(gone).ok());
  // The detached node saw none of it.
  EXPECT_EQ(late.Families("a"), "cf");
  EXPECT_EQ(late.Version(u), 1u);
  EXPECT_EQ(late.Version(v), 0u);

  Status attached = late.Reattach();
  ASSERT_TRUE(attached.ok()) << attached;
  EXPECT_TRUE(late.store()->attached());
  // Attach returns after reconciling.
  EXPECT_EQ(late.Version(), 1u);
  EXPECT_EQ(late.Families("a"), "");  // the old table's data is gone
  EXPECT_EQ(late.Version(u), 2u);
  EXPECT_EQ(late.Version(v), 1u);
  EXPECT_EQ(late.Version(gone), 0u);
  // And it follows changes again.
  ASSERT_TRUE(nodes_[0]->schema()->UpdateSchema(v, Add("cf")).ok());
  ASSERT_TRUE(AllAtVersion(2, v));
  ASSERT_TRUE(late.schema()->UpdateSchema(v, Add("cf2")).ok());
  ASSERT_TRUE(AllAtVersion(3, v));
}

TEST_F(ClusterSchemaTest, NodeDownWhileTableAndFamilyAreRecreated) {
  ASSERT_TRUE(nodes_[0]->schema()->CreateTable(kInstance, Schema("t", {"cf", "meta"}), {}).ok());
  const std::string u = "projects/p/instances/i/tables/u";
  ASSERT_TRUE(nodes_[0]->schema()->CreateTable(kInstance, Schema("u", {}), {}).ok());
  ASSERT_TRUE(AllAtVersion(1));
  ASSERT_TRUE(AllAtVersion(1, u));
  Node& down = *nodes_[2];
  down.Write("a", "cf", "old");
  down.Write("b", "meta", "old");
  down.Stop();

  // t: deleted and created again, same schema and version; then meta dropped and re-created.
  ASSERT_TRUE(nodes_[0]->schema()->DeleteTable(kTable).ok());
  ASSERT_TRUE(nodes_[0]->schema()->CreateTable(kInstance, Schema("t", {"cf", "meta"}), {}).ok());
  nodes_[0]->Write("b", "meta", "new incarnation, old meta");
  ASSERT_TRUE(nodes_[1]->schema()->UpdateSchema(kTable, Drop("meta")).ok());
  ASSERT_TRUE(nodes_[1]->schema()->UpdateSchema(kTable, Add("meta")).ok());
  ASSERT_TRUE(WaitFor([&] { return nodes_[0]->Version() == 3; }));
  EXPECT_EQ(nodes_[0]->Families("b"), "");
  Status started = down.Start();
  ASSERT_TRUE(started.ok()) << started;
  EXPECT_EQ(down.Version(), 3u);
  EXPECT_EQ(down.Families("a"), "");
  EXPECT_EQ(down.Families("b"), "");
  EXPECT_EQ(down.Version(u), 1u);
}

TEST_F(ClusterSchemaTest, FamilyRecreatedWhileNodeWasDownKeepsItsTable) {
  ASSERT_TRUE(nodes_[0]->schema()->CreateTable(kInstance, Schema("t", {"cf", "meta"}), {}).ok());
  ASSERT_TRUE(AllAtVersion(1));
  Node& down = *nodes_[2];
  down.Write("a", "cf", "keep");
  down.Write("a", "meta", "old");
  down.Stop();
  ASSERT_TRUE(nodes_[0]->schema()->UpdateSchema(kTable, Drop("meta")).ok());
  ASSERT_TRUE(nodes_[0]->schema()->UpdateSchema(kTable, Protect(true)).ok());
  ASSERT_TRUE(nodes_[0]->schema()->UpdateSchema(kTable, Add("meta")).ok());
  Status started = down.Start();
  ASSERT_TRUE(started.ok()) << started;
  EXPECT_EQ(down.Version(), 4u);
  EXPECT_EQ(down.Families("a"), "cf");  // same table: cf kept; the old meta is dead
  EXPECT_TRUE(down.catalog()->GetTable(kTable).value()->schema.deletion_protection);
}

TEST_F(ClusterSchemaTest, LocalTablesJoinTheClusterUnlessItHasThatTable) {
  Node& n = *nodes_[0];
  n.store()->Detach();
  // Tables made locally (single-node mode): one the cluster also has, one it does not.
  auto local_t = n.catalog()->CreateTable(kInstance, Schema("t", {"cf"}), {});
  ASSERT_TRUE(local_t.ok()) << local_t.status();
  auto local = n.catalog()->CreateTable(kInstance, Schema("local", {"cf"}), {"m"});
  ASSERT_TRUE(local.ok()) << local.status();
  n.Write("a", "cf", "local data");
  ASSERT_TRUE(nodes_[1]->schema()->CreateTable(kInstance, Schema("t", {"cf"}), {}).ok());
  Status attached = n.Reattach();
  ASSERT_TRUE(attached.ok()) << attached;
  // The cluster's "t" replaces the local one: its data cannot be proven to be the cluster's.
  EXPECT_EQ(n.Version(), 1u);
  EXPECT_EQ(n.Families("a"), "");
  // "local" joins the cluster's schema, split keys and all, and every node gets it.
  const std::string local_name = "projects/p/instances/i/tables/local";
  EXPECT_EQ(n.Version(local_name), 1u);
  ASSERT_TRUE(AllAtVersion(1, local_name));
  auto on_other = nodes_[2]->catalog()->GetTable(local_name);
  ASSERT_TRUE(on_other.ok());
  ASSERT_EQ((*on_other)->tablets.size(), 2u);
  EXPECT_EQ((*on_other)->tablets[1].start_row, "m");
  // It is the cluster's table now: a delete anywhere reaches this node.
  ASSERT_TRUE(nodes_[2]->schema()->DeleteTable(local_name).ok());
  ASSERT_TRUE(WaitFor([&] { return n.Version(local_name) == 0; }));
}

TEST_F(ClusterSchemaTest, MalformedRecordsAreSkipped) {
  ASSERT_TRUE(Raw()->Put("schema/projects/p/instances/i/tables/bad", "garbage", {}).ok());
  ASSERT_TRUE(Raw()->Put("schema/not-a-table-name", SchemaRecord{}.Encode(), {}).ok());
  SchemaRecord wrong_name;
  wrong_name.schema = Schema("other", {});
  wrong_name.schema.version = 1;
  ASSERT_TRUE(Raw()->Put("schema/projects/p/instances/i/tables/w", wrong_name.Encode(), {}).ok());
  ASSERT_TRUE(nodes_[0]->schema()->CreateTable(kInstance, Schema("t", {"cf"}), {}).ok());
  ASSERT_TRUE(AllAtVersion(1));
  for (auto& n : nodes_) {
    EXPECT_TRUE(WaitFor([&] { return n->store()->GetStats().malformed_records >= 3; }))
        << n->store()->GetStats().malformed_records;
    EXPECT_EQ(n->catalog()->ListTables(kInstance).size(), 1u);
  }
  // A node that attaches now skips them in its reconcile, and stays attached.
  Status attached = nodes_[2]->Reattach();
  ASSERT_TRUE(attached.ok()) << attached;
  EXPECT_EQ(nodes_[2]->store()->GetStats().malformed_records, 6u);
  auto bad_update =
      nodes_[0]->schema()->UpdateSchema("projects/p/instances/i/tables/bad", Add("cf"));
  EXPECT_EQ(bad_update.status().code(), absl::StatusCode::kDataLoss);
  // A malformed record can be deleted (the only way to clear it).
  EXPECT_TRUE(nodes_[0]->schema()->DeleteTable("projects/p/instances/i/tables/bad").ok());
  EXPECT_EQ(Raw()->Get("schema/projects/p/instances/i/tables/bad").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(ClusterSchemaTest, ChangesMadeByHandThroughTheLockServiceAreMirrored) {
  // A record rewritten by another writer (an operator's tool) is followed, families re-created
  // by it included.
  ASSERT_TRUE(nodes_[0]->schema()->CreateTable(kInstance, Schema("t", {"cf"}), {}).ok());
  ASSERT_TRUE(AllAtVersion(1));
  auto file = Raw()->Get("schema/projects/p/instances/i/tables/t");
  ASSERT_TRUE(file.ok());
  SchemaRecord record = *SchemaRecord::Decode(file->value);
  record.schema.version = 5;
  record.schema.families["late"];
  record.family_since["late"] = 5;
  coord::PutOptions cas;
  cas.expected_version = file->version;
  ASSERT_TRUE(Raw()->Put(file->name, record.Encode(), cas).ok());
  ASSERT_TRUE(AllAtVersion(5));
  // An older version written by hand is refused by every mirror (no rollback), and counted.
  record.schema.version = 2;
  record.schema.families.erase("late");
  record.family_since.erase("late");
  ASSERT_TRUE(Raw()->Put(file->name, record.Encode(), {}).ok());
  for (auto& n : nodes_) {
    EXPECT_TRUE(WaitFor([&] { return n->store()->GetStats().divergent_records == 1; }));
    EXPECT_EQ(n->Version(), 5u);
  }
}

TEST_F(ClusterSchemaTest, ReconcileDropsStrayLocalTables) {
  ASSERT_TRUE(nodes_[0]->schema()->CreateTable(kInstance, Schema("t", {"cf"}), {}).ok());
  ASSERT_TRUE(AllAtVersion(1));
  // A local table the cluster does not know (made behind the mirror's back) goes at the next
  // reconcile.
  ASSERT_TRUE(nodes_[1]->catalog()->CreateTable(kInstance, Schema("stray", {}), {}).ok());
  Status s = nodes_[1]->store()->Reconcile();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(nodes_[1]->Version("projects/p/instances/i/tables/stray"), 0u);
  EXPECT_EQ(nodes_[1]->Version(), 1u);
}

// --- Against a real etcd --------------------------------------------------------------------

TEST(ClusterSchemaEtcdTest, CreateOnOneNodeIsSeenOnTheOther) {
  auto server = testing::EtcdTestServer::Start();
  if (absl::IsNotFound(server.status())) {
    std::fprintf(stderr, "\n*** SKIPPING the etcd cluster-schema test: %s ***\n\n",
                 server.status().ToString().c_str());
    GTEST_SKIP() << server.status();
  }
  ASSERT_TRUE(server.ok()) << server.status();
  coord::EtcdLockServiceOptions options;
  options.endpoint = (*server)->endpoint();
  options.key_root = "/tessera-test/";
  auto service = coord::EtcdLockService::Open(options);
  ASSERT_TRUE(service.ok()) << service.status();
  {
    Node a(service->get());
    Node b(service->get());
    Status s = a.Start();
    ASSERT_TRUE(s.ok()) << s;
    s = b.Start();
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_TRUE(a.schema()->CreateTable(kInstance, Schema("t", {"cf"}), {"m"}).ok());
    EXPECT_TRUE(WaitFor([&] { return b.Version() == 1; }));
    auto updated = b.schema()->UpdateSchema(kTable, [](model::TableSchema* s) {
      s->families.erase("cf");
      return Status();
    });
    ASSERT_TRUE(updated.ok()) << updated.status();
    EXPECT_TRUE(WaitFor([&] { return a.Version() == 2; }));
    EXPECT_EQ(a.schema()->CreateTable(kInstance, Schema("t", {}), {}).status().code(),
              absl::StatusCode::kAlreadyExists);
    ASSERT_TRUE(a.schema()->DeleteTable(kTable).ok());
    EXPECT_TRUE(WaitFor([&] { return b.Version() == 0; }));
  }
}

}  // namespace
}  // namespace tessera::server
