#include "tessera/server/access_control.h"

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/coord/embedded_lock_service.h"
#include "tessera/util/clock.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::server {
namespace {

constexpr std::string_view kTable = "projects/p/instances/i/tables/t";

// Waits up to 5 s for `done`.
bool Eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// A tokens file with `text` and `mode` in the test's temporary folder.
std::string TokensFile(const std::string& name, const std::string& text, mode_t mode = 0600) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
  return path;
}

TEST(PermissionsTest, ParseAndFormat) {
  EXPECT_EQ(*ParsePermissions("read"), kPermRead);
  EXPECT_EQ(*ParsePermissions("write,read"), kPermRead | kPermWrite);
  EXPECT_EQ(*ParsePermissions("read,write,admin"), kAllPermissions);
  EXPECT_EQ(PermissionsString(kPermAdmin | kPermRead), "read,admin");
  Status bad = ParsePermissions("read,delete").status();
  EXPECT_TRUE(absl::IsInvalidArgument(bad));
  EXPECT_NE(bad.message().find("\"delete\""), std::string::npos) << bad;
  EXPECT_FALSE(ParsePermissions("").ok());
}

TEST(ResourceTest, ValidateAndWiden) {
  for (const char* ok : {"*", "projects/p/instances/i", "projects/p/instances/i/tables/t",
                         "projects/p/instances/i/tables/t/families/cf-1.x"}) {
    EXPECT_TRUE(ValidateResource(ok).ok()) << ok;
  }
  for (const char* bad :
       {"", "**", "projects/p", "projects/p/instances/i/tables",
        "projects/p/instances/i/tables/t/families/", "tables/t",
        "projects/p/instances/i/tables/t/columns/c", "projects/p/instances/i/tables/t x"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ValidateResource(bad))) << bad;
  }
  EXPECT_EQ(WiderResource(FamilyResource(kTable, "cf")), kTable);
  EXPECT_EQ(WiderResource(kTable), "projects/p/instances/i");
  EXPECT_EQ(WiderResource("projects/p/instances/i"), "*");
  EXPECT_EQ(WiderResource("*"), "");
}

TEST(TokenTest, HashAndPrincipals) {
  EXPECT_EQ(TokenHash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string a = NewToken(), b = NewToken();
  EXPECT_EQ(a.size(), 43u);  // 32 bytes, base64url without padding
  EXPECT_NE(a, b);
  EXPECT_TRUE(ValidatePrincipal("svc-ingest@example.com").ok());
  EXPECT_FALSE(ValidatePrincipal("").ok());
  EXPECT_FALSE(ValidatePrincipal("a/b").ok());
  EXPECT_FALSE(ValidatePrincipal(std::string(129, 'a')).ok());
}

TEST(TokensFileTest, ReadsPrincipalsAndAdmins) {
  const std::string path = TokensFile(
      "tokens_ok",
      "# bootstrap\n\nroot  root-token-0123456789 admin\nalice alice-token-0123456789\n");
  auto ac = AccessControl::Open(AccessControlOptions{.tokens_file = path});
  ASSERT_TRUE(ac.ok()) << ac.status();
  EXPECT_EQ(*(*ac)->Authenticate("root-token-0123456789"), "root");
  EXPECT_EQ(*(*ac)->Authenticate("alice-token-0123456789"), "alice");
  // The file's admin holds everything at once; anyone else waits for the grants.
  EXPECT_TRUE((*ac)->Check("root", kPermAdmin, "*").ok());
  EXPECT_TRUE(absl::IsUnavailable((*ac)->Check("alice", kPermRead, kTable)));
  EXPECT_TRUE(absl::IsUnavailable((*ac)->Authenticate("unknown-token-0123").status()));
}

TEST(TokensFileTest, RefusesBadFiles) {
  struct Case {
    std::string text;
    mode_t mode;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"alice alice-token-0123456789\n", 0644, "readable by group or others"},
      {"alice\n", 0600, "line 1: expected"},
      {"alice short\n", 0600, "shorter than 16"},
      {"a/b alice-token-0123456789\n", 0600, "not a principal name"},
      {"alice alice-token-0123456789 root\n", 0600, "line 1: expected"},
      {"a tok-0123456789abcdef\nb tok-0123456789abcdef\n", 0600,
       "line 2: this token is given twice"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string path = TokensFile("tokens_bad" + std::to_string(i++), c.text, c.mode);
    Status s = AccessControl::Open(AccessControlOptions{.tokens_file = path}).status();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << c.text << ": " << s;
    EXPECT_NE(s.message().find(c.expect), std::string::npos) << s;
  }
  EXPECT_TRUE(absl::IsNotFound(
      AccessControl::Open(AccessControlOptions{.tokens_file = "/nonexistent/tokens"}).status()));
}

TEST(TokensFileTest, AReloadReplacesTheTokensAndABadFileKeepsThePreviousOnes) {
  const std::string path = TokensFile(
      "tokens_reload", "root root-token-0123456789 admin\nalice alice-token-0123456789\n");
  auto ac = AccessControl::Open(AccessControlOptions{.tokens_file = path});
  ASSERT_TRUE(ac.ok()) << ac.status();
  // alice's token is replaced, bob comes, root is no longer an administrator.
  TokensFile("tokens_reload",
             "root root-token-0123456789\nalice alice-token-new-0123456789\n"
             "bob bob-token-0123456789 admin\n");
  StatusOr<size_t> n = (*ac)->ReloadTokensFile();
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 3u);
  EXPECT_EQ(*(*ac)->Authenticate("alice-token-new-0123456789"), "alice");
  EXPECT_EQ(*(*ac)->Authenticate("bob-token-0123456789"), "bob");
  EXPECT_FALSE((*ac)->Authenticate("alice-token-0123456789").ok());
  EXPECT_TRUE((*ac)->Check("bob", kPermAdmin, "*").ok());
  EXPECT_FALSE((*ac)->Check("root", kPermAdmin, "*").ok());
  // A file gone bad (or readable by others) changes nothing and says why.
  TokensFile("tokens_reload", "bob\n");
  n = (*ac)->ReloadTokensFile();
  EXPECT_TRUE(absl::IsInvalidArgument(n.status())) << n.status();
  EXPECT_NE(n.status().message().find("line 1: expected"), std::string::npos) << n.status();
  TokensFile("tokens_reload", "bob bob-token-0123456789 admin\n", 0644);
  EXPECT_TRUE(absl::IsInvalidArgument((*ac)->ReloadTokensFile().status()));
  EXPECT_EQ(*(*ac)->Authenticate("alice-token-new-0123456789"), "alice");
  EXPECT_TRUE((*ac)->Check("bob", kPermAdmin, "*").ok());
  // Without a tokens file there is nothing to reload.
  auto none = AccessControl::Open(AccessControlOptions{});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition((*none)->ReloadTokensFile().status()));
}

// Two nodes' access controls over one embedded lock service.
class AccessControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    coord::EmbeddedLockServiceOptions options;
    options.fs = &fs_;
    options.clock = SystemClock();
    options.dir = "/coord";
    auto service = coord::EmbeddedLockService::Open(options);
    ASSERT_TRUE(service.ok()) << service.status();
    service_ = *std::move(service);
    for (int i = 0; i < 2; ++i) {
      auto ac = AccessControl::Open(AccessControlOptions{});
      ASSERT_TRUE(ac.ok()) << ac.status();
      nodes_.push_back(*std::move(ac));
      auto session = service_->CreateSession(coord::SessionOptions{});
      ASSERT_TRUE(session.ok()) << session.status();
      sessions_.push_back(*std::move(session));
      ASSERT_TRUE(nodes_.back()->Attach(sessions_.back().get()).ok());
    }
  }
  void TearDown() override {
    nodes_.clear();
    sessions_.clear();
    service_.reset();
  }

  MemFileSystem fs_;
  std::unique_ptr<coord::EmbeddedLockService> service_;
  std::vector<std::unique_ptr<coord::Session>> sessions_;
  std::vector<std::unique_ptr<AccessControl>> nodes_;
};

TEST_F(AccessControlTest, GrantsCoverNarrowerResourcesOnEveryNode) {
  AccessControl& a = *nodes_[0];
  AccessControl& b = *nodes_[1];
  const std::string cf = FamilyResource(kTable, "cf");
  Status denied = b.Check("alice", kPermRead, cf);
  EXPECT_TRUE(absl::IsPermissionDenied(denied)) << denied;
  EXPECT_EQ(denied.message(),
            "principal alice lacks read on projects/p/instances/i/tables/t/families/cf");

  ASSERT_EQ(*a.Grant("alice", kTable, kPermRead), kPermRead);
  EXPECT_TRUE(a.Check("alice", kPermRead, cf).ok());  // at once on the node that granted
  EXPECT_TRUE(Eventually([&] { return b.Allowed("alice", kPermRead, cf); }));
  EXPECT_FALSE(b.Allowed("alice", kPermWrite, cf));
  EXPECT_FALSE(b.Allowed("alice", kPermRead, "projects/p/instances/i/tables/other"));
  EXPECT_FALSE(b.Allowed("alice", kPermRead, "projects/p/instances/i"));

  // A grant on the instance covers tables made later; one on `*` everything.
  ASSERT_TRUE(a.Grant("bob", "projects/p/instances/i", kPermWrite).ok());
  ASSERT_TRUE(a.Grant("root", "*", kPermAdmin).ok());
  EXPECT_TRUE(Eventually([&] {
    return b.Allowed("bob", kPermWrite, FamilyResource("projects/p/instances/i/tables/new", "x")) &&
           b.Allowed("root", kPermAdmin, "projects/q/instances/j/tables/t");
  }));
  EXPECT_FALSE(b.Allowed("bob", kPermWrite, "projects/p/instances/other/tables/t"));

  // Adding keeps what was there; revoking takes one permission, then the grant.
  EXPECT_EQ(*b.Grant("alice", kTable, kPermWrite), kPermRead | kPermWrite);
  EXPECT_EQ(*b.Revoke("alice", kTable, kPermRead), kPermWrite);
  EXPECT_TRUE(Eventually([&] { return !a.Allowed("alice", kPermRead, cf); }));
  EXPECT_TRUE(a.Allowed("alice", kPermWrite, cf));
  EXPECT_EQ(*a.Revoke("alice", kTable, kPermWrite), 0);
  EXPECT_TRUE(absl::IsNotFound(a.Revoke("alice", kTable, kPermWrite).status()));
  EXPECT_TRUE(Eventually([&] { return !b.Allowed("alice", kPermWrite, cf); }));

  EXPECT_TRUE(absl::IsInvalidArgument(a.Grant("alice", "tables/t", kPermRead).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(a.Grant("a b", kTable, kPermRead).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(a.Grant("alice", kTable, 0).status()));
}

TEST_F(AccessControlTest, TokensAddedOnOneNodeAuthenticateOnAnother) {
  AccessControl& a = *nodes_[0];
  AccessControl& b = *nodes_[1];
  EXPECT_TRUE(absl::IsUnauthenticated(b.Authenticate("no-such-token").status()));
  auto token = a.AddToken("carol");
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*a.Authenticate(*token), "carol");
  EXPECT_TRUE(Eventually([&] { return b.Authenticate(*token).ok(); }));
  auto second = b.AddToken("carol");
  ASSERT_TRUE(second.ok());

  std::vector<PrincipalInfo> principals = a.Principals();
  ASSERT_TRUE(Eventually([&] {
    principals = a.Principals();
    return principals.size() == 1 && principals[0].token_hashes.size() == 2;
  }));
  EXPECT_EQ(principals[0].name, "carol");

  EXPECT_EQ(*b.RemoveTokens("carol"), 2);
  EXPECT_TRUE(absl::IsUnauthenticated(b.Authenticate(*token).status()));
  EXPECT_TRUE(
      Eventually([&] { return absl::IsUnauthenticated(a.Authenticate(*second).status()); }));
  EXPECT_EQ(*a.RemoveTokens("carol"), 0);
}

TEST_F(AccessControlTest, AViewSurvivesDetachAndCatchesUpOnAttach) {
  AccessControl& a = *nodes_[0];
  AccessControl& b = *nodes_[1];
  ASSERT_TRUE(a.Grant("dave", kTable, kPermRead).ok());
  ASSERT_TRUE(Eventually([&] { return b.Allowed("dave", kPermRead, kTable); }));
  b.Detach();
  EXPECT_TRUE(absl::IsUnavailable(b.Grant("dave", kTable, kPermWrite).status()));
  ASSERT_TRUE(a.Revoke("dave", kTable, kPermRead).ok());
  ASSERT_TRUE(a.Grant("erin", kTable, kPermWrite).ok());
  EXPECT_TRUE(b.Allowed("dave", kPermRead, kTable));  // detached: the old view
  ASSERT_TRUE(b.Attach(sessions_[1].get()).ok());
  EXPECT_FALSE(b.Allowed("dave", kPermRead, kTable));  // the listing dropped it
  EXPECT_TRUE(b.Allowed("erin", kPermWrite, kTable));
}

}  // namespace
}  // namespace tessera::server
