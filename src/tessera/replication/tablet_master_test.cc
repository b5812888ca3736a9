// The master's choice of a new primary (tablet_master.h, ChooseNewPrimary): the highest
// sequence among the sealed replicas whose content is in the lineage, never a diverged one.
// Its placement of new tablets: a ring table by the ring's tokens, a tablets table with its
// replication factor and datacenters, a table made before placement options as before.
#include "tessera/replication/tablet_master.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/catalog/ring_store.h"
#include "tessera/catalog/tablet_id.h"
#include "tessera/coord/lock_service_test_util.h"
#include "tessera/util/clock.h"
#include "tessera/util/coding.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::replication {
namespace {

catalog::TabletConfig EpochFive() {
  catalog::TabletConfig c;
  c.tablet_id = 7;
  c.epoch = 5;
  c.epoch_start_sequence = 207;
  c.state = catalog::TabletConfigState::kServing;
  c.replicas = {"a:1", "b:1", "c:1"};
  c.primary = 0;
  c.history = {{4, 150}, {5, 207}};
  return c;
}

TEST(ChooseNewPrimaryTest, TheHighestSequenceOfTheLineageWins) {
  // b and c joined epoch 5; c holds more of it.
  EXPECT_EQ(ChooseNewPrimary(EpochFive(), {{1, {210, 5}}, {2, {212, 5}}}), 2u);
  // Equal sequences: the lower index.
  EXPECT_EQ(ChooseNewPrimary(EpochFive(), {{1, {212, 5}}, {2, {212, 5}}}), 1u);
}

TEST(ChooseNewPrimaryTest, ADivergedReplicaIsNeverChosenThoughItHoldsMore) {
  // c last took mutations from epoch 4's primary, up to 215: beyond what epoch 5 kept (207),
  // so its 208..215 are not the lineage's; b joined epoch 5 and may hold an acknowledged 210.
  EXPECT_EQ(ChooseNewPrimary(EpochFive(), {{1, {210, 5}}, {2, {215, 4}}}), 1u);
  // A replica of epoch 4 that holds no more than epoch 5 kept is in the lineage.
  EXPECT_EQ(ChooseNewPrimary(EpochFive(), {{1, {150, 5}}, {2, {200, 4}}}), 2u);
  // Nobody qualifies: no choice.
  EXPECT_FALSE(ChooseNewPrimary(EpochFive(), {{2, {215, 4}}}).has_value());
  // A lineage older than the history reaches: not chosen either.
  EXPECT_FALSE(ChooseNewPrimary(EpochFive(), {{1, {100, 2}}}).has_value());
}

TEST(ChooseNewPrimaryTest, NoneLeadsWhileOnlyADivergedReplicaHoldsPartOfTheLineage) {
  // The simulation's seed 15894610456779462128: c led epoch 4 to 215 and was paused; epoch 5
  // began at 207 (what a majority held) on a primary that then crashed; b joined epoch 5 at
  // 150 and was never caught up. c's 151..207 are the lineage's (and some were acknowledged
  // in epoch 4): b must not lead, and nobody can until a replica holding 207 seals.
  EXPECT_FALSE(ChooseNewPrimary(EpochFive(), {{1, {150, 5}}, {2, {215, 4}}}).has_value());
  EXPECT_EQ(ChooseNewPrimary(EpochFive(), {{0, {207, 5}}, {1, {150, 5}}, {2, {215, 4}}}), 0u);
  // A diverged replica that holds no more of the lineage than the best does not hold it up.
  EXPECT_EQ(ChooseNewPrimary(EpochFive(), {{1, {207, 5}}, {2, {215, 4}}}), 1u);
}

TEST(ChooseNewPrimaryTest, TheLineagePrefixIsWhatAReplicaHoldsUpToTheEpochThatLeftIt) {
  const catalog::TabletConfig c = EpochFive();  // history (4, 150), (5, 207)
  EXPECT_EQ(c.LineagePrefix(5, 300), 300u);
  EXPECT_EQ(c.LineagePrefix(4, 215), 207u);
  EXPECT_EQ(c.LineagePrefix(3, 215), 150u);
  EXPECT_EQ(c.LineagePrefix(3, 100), 100u);
  EXPECT_EQ(c.LineagePrefix(2, 100), std::nullopt);  // the history does not reach back
  EXPECT_EQ(c.LineagePrefix(6, 100), std::nullopt);
  EXPECT_EQ(c.LineagePrefix(2, 0), 0u);
}

// Placement needs no calls between nodes (only promotion seals).
class NoCalls final : public RpcChannel {
 public:
  const std::string& self() const override { return self_; }
  void Call(const std::string&, std::string_view, std::string, int64_t, Done done) override {
    done(absl::UnavailableError("no calls in this test"));
  }
  void SetHandler(Handler) override {}

 private:
  const std::string self_ = "a:1";
};

class TabletMasterPlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto service = coord::testing::OpenEmbeddedForTesting(&fs_);
    ASSERT_TRUE(service.ok()) << service.status();
    service_ = *std::move(service);
    auto session = service_->CreateSession(coord::SessionOptions{});
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = *std::move(session);
    executor_ = NewThreadPoolExecutor(1);
    master_ = std::make_unique<TabletMaster>(
        &channel_, executor_.get(), SystemClock(), [this] { return tables_; }, [] { return true; });
    master_->Attach(session_.get());
  }
  void TearDown() override {
    master_->Detach();
    master_.reset();
  }
  // A node in the directory, with a token chosen as a joining node does (or none).
  void Join(const std::string& endpoint, const std::string& dc, const std::string& rack,
            bool token = true) {
    coord::PutOptions ephemeral;
    ephemeral.ephemeral = true;
    ASSERT_TRUE(session_
                    ->Put("nodes/" + endpoint,
                          R"({"endpoint":")" + endpoint + R"(","dc":")" + dc + R"(","rack":")" +
                              rack + R"("})",
                          ephemeral)
                    .ok());
    if (token) {
      ASSERT_TRUE(catalog::EnsureToken(session_.get(), endpoint).ok());
    }
  }
  void AddTable(const std::string& id, const std::string& placement, uint64_t prefix,
                const std::vector<std::string>& splits) {
    auto info = std::make_shared<catalog::TableInfo>();
    info->full_name = "projects/p/instances/i/tables/" + id;
    info->schema.name = id;
    info->schema.options.placement = placement;
    info->tablet_prefix = prefix;
    for (size_t i = 0; i <= splits.size(); ++i) {
      info->tablets.push_back(catalog::TabletRef{catalog::MakeTabletId(prefix, i),
                                                 i == 0 ? "" : splits[i - 1],
                                                 i == splits.size() ? "" : splits[i]});
    }
    tables_.push_back(std::move(info));
  }
  // The configuration of the table's tablet #ordinal: its replicas, primary first.
  std::vector<std::string> Replicas(uint64_t prefix, size_t ordinal) {
    StatusOr<coord::FileInfo> f =
        session_->Get(catalog::TabletConfigName(catalog::MakeTabletId(prefix, ordinal)));
    if (!f.ok()) return {"(none)"};
    StatusOr<catalog::TabletConfig> c = catalog::TabletConfig::Decode(f->value);
    EXPECT_TRUE(c.ok()) << c.status();
    std::vector<std::string> out = {c->primary_endpoint()};
    for (const std::string& r : c->replicas) {
      if (r != c->primary_endpoint()) out.push_back(r);
    }
    return out;
  }

  MemFileSystem fs_;
  std::unique_ptr<coord::LockService> service_;
  std::unique_ptr<coord::Session> session_;
  std::unique_ptr<Executor> executor_;
  NoCalls channel_;
  std::vector<std::shared_ptr<const catalog::TableInfo>> tables_;
  std::unique_ptr<TabletMaster> master_;
};

std::string Token(uint64_t top_byte) { return BigEndian64String(top_byte << 56); }

TEST_F(TabletMasterPlacementTest, ARingTableIsPlacedClockwiseFromEachTabletsStart) {
  Join("a:1", "dc1", "r1");                   // token 0x80
  Join("b:1", "dc1", "r1");                   // 0x00
  Join("c:1", "dc1", "r2");                   // 0x40
  Join("d:1", "dc1", "r2", /*token=*/false);  // registered, token not written yet
  // Cut at the tokens, as CreateTable does for a ring table, and at "m" (0x6D).
  AddTable("r", "ring:2", 5, {Token(0x00), Token(0x40), "m", Token(0x80)});
  master_->Step();
  // Each range's primary is the owner (the first token above its start), then clockwise.
  EXPECT_EQ(Replicas(5, 0), (std::vector<std::string>{"b:1", "c:1"}));  // ["", 0x00)
  EXPECT_EQ(Replicas(5, 1), (std::vector<std::string>{"c:1", "a:1"}));  // [0x00, 0x40)
  EXPECT_EQ(Replicas(5, 2), (std::vector<std::string>{"a:1", "b:1"}));  // [0x40, "m")
  EXPECT_EQ(Replicas(5, 3), (std::vector<std::string>{"a:1", "b:1"}));  // ["m", 0x80)
  EXPECT_EQ(Replicas(5, 4), (std::vector<std::string>{"b:1", "c:1"}));  // [0x80, ""): wraps

  // Rack-aware: from [0x40, "")'s owner a, the next node clockwise, b, shares its rack r1,
  // so c (r2) is taken instead.
  AddTable("rr", "ring:rack:2", 6, {Token(0x40)});
  master_->Step();
  EXPECT_EQ(Replicas(6, 0), (std::vector<std::string>{"b:1", "c:1"}));
  EXPECT_EQ(Replicas(6, 1), (std::vector<std::string>{"a:1", "c:1"}));
}

TEST_F(TabletMasterPlacementTest, TabletsTablesUseTheirFactorAndDatacenters) {
  Join("a:1", "dc1", "r1");
  Join("b:1", "dc1", "r2");
  Join("c:1", "dc2", "r1");
  Join("d:1", "dc2", "r2", /*token=*/false);  // the tablets strategy needs no token
  AddTable("one", "tablets:1", 7, {});
  AddTable("dc2", "tablets:dc2=2", 8, {});
  AddTable("old", "", 9, {"m"});  // made before placement options: RF min(3, live nodes)
  master_->Step();
  EXPECT_EQ(Replicas(7, 0).size(), 1u);
  std::vector<std::string> in_dc2 = Replicas(8, 0);
  std::sort(in_dc2.begin(), in_dc2.end());
  EXPECT_EQ(in_dc2, (std::vector<std::string>{"c:1", "d:1"}));
  EXPECT_EQ(Replicas(9, 0).size(), 3u);
  EXPECT_EQ(Replicas(9, 1).size(), 3u);
}

TEST_F(TabletMasterPlacementTest, ATableThatCannotBePlacedWaits) {
  Join("a:1", "dc1", "r1");
  AddTable("big", "tablets:2", 10, {});
  EXPECT_NE(master_->Step().find("needs 2 live nodes, there are 1"), std::string::npos);
  EXPECT_EQ(Replicas(10, 0), (std::vector<std::string>{"(none)"}));
  Join("b:1", "dc1", "r1");
  master_->Step();
  EXPECT_EQ(Replicas(10, 0).size(), 2u);
}

}  // namespace
}  // namespace tessera::replication
