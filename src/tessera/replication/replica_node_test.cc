// ReplicaNode alone, on simulated time, with no peers.
#include "tessera/replication/replica_node.h"

#include <gtest/gtest.h>

#include "tessera/catalog/tablet_config.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/clock.h"
#include "tessera/util/mem_file_system.h"
#include "tessera/util/sim_executor.h"

namespace tessera::replication {
namespace {

// A channel to nobody: a node of RF 1 calls no peer.
class NoPeers final : public RpcChannel {
 public:
  const std::string& self() const override { return self_; }
  void Call(const std::string& /*to*/, std::string_view /*method*/, std::string /*request*/,
            int64_t /*timeout_us*/, Done done) override {
    done(NotSent(absl::UnavailableError("no peers in this test")));
  }
  void SetHandler(Handler /*handler*/) override {}

 private:
  const std::string self_ = "n1:1";
};

bool IsPrimary(const ReplicaNode& node, uint64_t tablet_id) {
  for (const TabletReplicaState& s : node.States()) {
    if (s.tablet_id == tablet_id) return s.primary;
  }
  return false;
}

// Seen in a 3-node process test: the configuration that named a node primary of METADATA
// arrived before the node's catalog had created the tablet, the node could not act, and nothing
// delivered the configuration again, so METADATA had no primary for good.
TEST(ReplicaNodeTest, AConfigurationThatCameBeforeItsTabletIsTakenOnceTheTabletExists) {
  MemFileSystem fs;
  ManualClock clock;
  SimExecutor executor(&clock);
  tablet::EngineOptions options;
  options.dir = "/db";
  auto engine = tablet::Engine::Open(options, Env{&fs, &clock});
  ASSERT_TRUE(engine.ok()) << engine.status();
  NoPeers channel;
  ReplicaNode node(engine->get(), &channel, &executor, &clock);
  node.Start();

  catalog::TabletConfig config;
  config.tablet_id = 7;
  config.epoch = 1;
  config.state = catalog::TabletConfigState::kServing;
  config.replicas = {"n1:1"};
  config.primary = 0;
  node.UpdateConfig(config);
  executor.RunFor(1'000'000);
  EXPECT_FALSE(IsPrimary(node, 7));  // the engine has no tablet 7 yet

  model::TableSchema schema;
  schema.name = "t";
  schema.families["cf"] = model::FamilySchema{};
  ASSERT_TRUE((*engine)->CreateTablet(7, tablet::TabletDescriptor{"t", "", "", schema}).ok());
  executor.RunFor(1'000'000);
  EXPECT_TRUE(IsPrimary(node, 7));
  node.Stop();
  ASSERT_TRUE((*engine)->Close().ok());
}

}  // namespace
}  // namespace tessera::replication
