// The ring in the lock service (ring_store.h): a token chosen once per node and read back by
// every later session, nodes joining in turn halving the widest gap, two nodes holding one
// token (a race, or a crash before looking) resolved in favour of the first, the view of live
// nodes with their dc, rack and token, and a RingStore detached.
#include "tessera/catalog/ring_store.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tessera/coord/lock_service_test_util.h"
#include "tessera/util/coding.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::catalog {
namespace {

std::string Token(uint64_t top_byte) { return BigEndian64String(top_byte << 56); }

class RingStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto service = coord::testing::OpenEmbeddedForTesting(&fs_);
    ASSERT_TRUE(service.ok()) << service.status();
    service_ = *std::move(service);
    session_ = NewSession();
  }
  std::unique_ptr<coord::Session> NewSession() {
    auto session = service_->CreateSession(coord::SessionOptions{});
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? *std::move(session) : nullptr;
  }
  std::string Ensure(std::string_view endpoint) {
    StatusOr<std::string> token = EnsureToken(session_.get(), endpoint);
    EXPECT_TRUE(token.ok()) << token.status();
    return token.value_or("");
  }
  void Put(std::string_view name, std::string_view value, bool ephemeral = false) {
    coord::PutOptions put;
    put.ephemeral = ephemeral;
    ASSERT_TRUE(session_->Put(name, value, put).ok());
  }

  MemFileSystem fs_;
  std::unique_ptr<coord::LockService> service_;
  std::unique_ptr<coord::Session> session_;
};

TEST_F(RingStoreTest, ATokenIsChosenOnceAndReadBack) {
  EXPECT_EQ(Ensure("a:1"), Token(0x80));
  EXPECT_EQ(Ensure("b:1"), Token(0x00));
  EXPECT_EQ(Ensure("c:1"), Token(0x40));
  // Again, and from a new session (a restart): the same tokens.
  EXPECT_EQ(Ensure("a:1"), Token(0x80));
  session_ = NewSession();
  EXPECT_EQ(Ensure("b:1"), Token(0x00));
  StatusOr<coord::FileInfo> file = session_->Get(TokenFileName("a:1"));
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->name, "tokens/a:1");
  EXPECT_EQ(file->version, 1);        // written once
  EXPECT_FALSE(file->owner.valid());  // persistent: outlives the session that wrote it
}

TEST_F(RingStoreTest, OfTwoEqualTokensTheLaterGivesWay) {
  // b and a chose 0x80 at once; b's file was created first.
  Put(TokenFileName("b:1"), Token(0x80));
  Put(TokenFileName("a:1"), Token(0x80));
  EXPECT_EQ(Ensure("b:1"), Token(0x80));
  const std::string a = Ensure("a:1");
  EXPECT_EQ(a, Token(0x00));
  EXPECT_EQ(Ensure("a:1"), a);
}

TEST_F(RingStoreTest, TheViewListsLiveNodesWithTheirTokens) {
  Put("nodes/a:1", R"({"endpoint":"a:1","dc":"dc1","rack":"r1"})", /*ephemeral=*/true);
  Put("nodes/b:1", "not json", /*ephemeral=*/true);
  Ensure("a:1");
  Ensure("gone:1");  // a node with a token that is not live now
  StatusOr<ClusterView> view = ReadClusterView(session_.get());
  ASSERT_TRUE(view.ok()) << view.status();
  ASSERT_EQ(view->live.size(), 2u);
  EXPECT_EQ(view->live[0].endpoint, "a:1");
  EXPECT_EQ(view->live[0].dc, "dc1");
  EXPECT_EQ(view->live[0].rack, "r1");
  EXPECT_EQ(view->live[0].token, Token(0x80));
  EXPECT_EQ(view->live[1].endpoint, "b:1");
  EXPECT_EQ(view->live[1].dc, "");
  EXPECT_EQ(view->live[1].token, "");  // registered, no token chosen yet
  EXPECT_EQ(view->tokens.size(), 2u);
  EXPECT_EQ(view->tokens.at("gone:1"), Token(0x00));
}

TEST_F(RingStoreTest, ARingStoreReadsOnlyWhileAttached) {
  RingStore ring("a:1");
  EXPECT_EQ(ring.token(), "");
  EXPECT_EQ(ring.Read().status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(ring.Attach(session_.get()).ok());
  EXPECT_EQ(ring.token(), Token(0x80));
  StatusOr<ClusterView> view = ring.Read();
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->tokens.at("a:1"), Token(0x80));
  ring.Detach();
  EXPECT_EQ(ring.Read().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ring.token(), Token(0x80));
  ring.Detach();
}

}  // namespace
}  // namespace tessera::catalog
