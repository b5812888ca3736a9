// Issue 13's authentication and access control across processes (docs/auth.md): etcd and
// `tessera serve --auth` nodes sharing a tokens file that names the first administrator.
//   * Tokens and grants made with `tessera admin` through one node apply through the others;
//     a revoke and a token removal too; refusals are audited; the admin tool without a token
//     is refused.
//   * The web dashboard in a real browser (chromium driven through chromedriver): a principal
//     that is not an administrator is refused an action from the page, an administrator
//     flushes a node with a click.
// Part of the cluster_process_test binary (main() in cluster_process_test.cc).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/ascii.h"
#include "bigtable_calls.h"
#include "cluster_test_fixture.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tessera/rpc/bearer_token.h"
#include "tessera/testing/child_process.h"
#include "tessera/testing/http_get.h"

namespace tessera::integration {
namespace {

using namespace cluster_testing;  // NOLINT: the fixture and its helpers

constexpr char kRootToken[] = "root-token-for-the-auth-test-0123456789";

class AuthClusterTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    if (IsSkipped()) return;
    tokens_file_ = StrCat(dir_.path(), "/tokens");
    std::ofstream(tokens_file_) << "# the first administrator\nroot " << kRootToken << " admin\n";
    ::chmod(tokens_file_.c_str(), 0600);
    extra_args_ = {"--auth", "--auth-tokens", tokens_file_};
  }

  // n nodes with --auth; the fixture's own calls (status, table creation) as root.
  void StartAuthCluster(int n) {
    StartCluster(n);
    for (auto& node : nodes_) node->set_token(kRootToken);
    ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(20'000)));
  }

  // `tessera admin <args>` (with --addr of `node` and `token` unless empty); exit status.
  int Admin(const ServerProcess& node, const std::string& args, const std::string& token,
            std::string* out) {
    return RunCommand(StrCat("timeout 60 ", g_tessera_binary, " admin ", args, " --addr ",
                             node.endpoint(), token.empty() ? "" : StrCat(" --token ", token)),
                      out);
  }

  // A Bigtable stub on `node` whose calls carry `token`.
  static std::unique_ptr<google::bigtable::v2::Bigtable::Stub> Data(const ServerProcess& node,
                                                                    const std::string& token) {
    return google::bigtable::v2::Bigtable::NewStub(rpc::CreateChannelWithToken(
        node.endpoint(), grpc::InsecureChannelCredentials(), grpc::ChannelArguments(), token));
  }

  // A new token for `principal`, made through `node` with the admin tool.
  std::string NewToken(const ServerProcess& node, const std::string& principal) {
    std::string out;
    EXPECT_EQ(Admin(node, StrCat("token add ", principal, " --json"), kRootToken, &out), 0) << out;
    // stdout's JSON line; stderr's note is not JSON.
    for (size_t at = 0; at < out.size();) {
      const size_t end = out.find('\n', at);
      const std::string line = out.substr(at, end - at);
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("token")) return j["token"].get<std::string>();
      if (end == std::string::npos) break;
      at = end + 1;
    }
    ADD_FAILURE() << "no token in: " << out;
    return "";
  }

  std::string tokens_file_;
};

TEST_F(AuthClusterTest, GrantsAndTokensMadeThroughOneNodeApplyThroughAnother) {
  StartAuthCluster(3);
  ServerProcess& n0 = *nodes_[0];
  ServerProcess& n1 = *nodes_[1];
  ServerProcess& n2 = *nodes_[2];
  ASSERT_TRUE(CreateTableR(n0).ok());
  ASSERT_TRUE(WaitFor([&] { return WriteRow(*Data(n1, kRootToken), "first", "1").ok(); },
                      milliseconds(15'000)));

  const std::string alice = NewToken(n0, "alice");
  ASSERT_FALSE(alice.empty());
  // Known everywhere at once (the watch), but allowed nothing yet.
  ASSERT_TRUE(WaitFor(
      [&] {
        return WriteRow(*Data(n2, alice), "a", "1").error_code() ==
               grpc::StatusCode::PERMISSION_DENIED;
      },
      milliseconds(5000)));

  std::string out;
  ASSERT_EQ(Admin(n1, "grant alice read,write r --family cf", kRootToken, &out), 0) << out;
  EXPECT_NE(out.find("alice now holds read,write on projects/p/instances/i/tables/r/families/cf"),
            std::string::npos)
      << out;
  ASSERT_TRUE(
      WaitFor([&] { return WriteRow(*Data(n2, alice), "a", "1").ok(); }, milliseconds(5000)));
  StatusOr<std::string> read = ReadCells(*Data(n0, alice), kTableName, "a", "", kCallTimeout);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "1");

  // The shell with alice's token ($TESSERA_TOKEN) lists and reads what she may see.
  out.clear();
  ASSERT_EQ(RunCommand(StrCat("TESSERA_TOKEN=", alice, " timeout 60 ", g_tessera_binary,
                              " shell --endpoint ", n1.endpoint(), " -e 'ls; get r a'"),
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("cf:q"), std::string::npos) << out;

  out.clear();
  ASSERT_EQ(Admin(n2, "principals --json", kRootToken, &out), 0) << out;
  nlohmann::json principals = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(principals.is_object()) << out;
  bool seen = false;
  for (const auto& p : principals["principals"]) {
    if (p["name"] == "alice") {
      seen = true;
      EXPECT_EQ(p["grants"]["projects/p/instances/i/tables/r/families/cf"], "read,write") << out;
    }
    if (p["name"] == "root") EXPECT_EQ(p["file_admin"], true) << out;
  }
  EXPECT_TRUE(seen) << out;

  // Revoke write through the third node: writes through the first stop, reads go on.
  out.clear();
  ASSERT_EQ(Admin(n2, "revoke alice write r --family cf", kRootToken, &out), 0) << out;
  ASSERT_TRUE(WaitFor(
      [&] {
        return WriteRow(*Data(n0, alice), "a", "2").error_code() ==
               grpc::StatusCode::PERMISSION_DENIED;
      },
      milliseconds(5000)));
  EXPECT_TRUE(ReadCells(*Data(n0, alice), kTableName, "a", "", kCallTimeout).ok());

  // Without a token: refused, by the data API and the admin tool alike.
  EXPECT_EQ(WriteRow(*Data(n1, ""), "a", "3").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  out.clear();
  EXPECT_EQ(Admin(n1, "status", "", &out), 1) << out;
  EXPECT_NE(out.find("bearer token"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(Admin(n1, "status", alice, &out), 1) << out;  // not an administrator
  EXPECT_NE(out.find("principal alice lacks admin on *"), std::string::npos) << out;

  // The token removed through one node stops working through another.
  out.clear();
  ASSERT_EQ(Admin(n1, "token remove alice", kRootToken, &out), 0) << out;
  ASSERT_TRUE(WaitFor(
      [&] {
        return ReadCells(*Data(n2, alice), kTableName, "a", "", kCallTimeout).status().code() ==
               absl::StatusCode::kUnauthenticated;
      },
      milliseconds(5000)));

  // Audit lines: the grant where it was made, the refusals where they happened.
  EXPECT_NE(FullLog(n1).find("audit: admin action=grant target=\"alice read,write "
                             "projects/p/instances/i/tables/r/families/cf\" principal=root"),
            std::string::npos);
  EXPECT_NE(FullLog(n0).find("audit: auth action=/google.bigtable.v2.Bigtable/MutateRow "
                             "principal=alice resource=projects/p/instances/i/tables/r/"
                             "families/cf"),
            std::string::npos);
  EXPECT_EQ(FullLog(n0).find(alice), std::string::npos) << "a token in a log";
}

// chromedriver on a free port, and one headless chromium session through it (the W3C WebDriver
// protocol over HTTP).
class Browser {
 public:
  static StatusOr<std::unique_ptr<Browser>> Start(const std::string& dir) {
    std::filesystem::create_directories(dir);
    ASSIGN_OR_RETURN(const int port, testing::PickFreePort());
    auto b = std::unique_ptr<Browser>(new Browser);
    b->address_ = StrCat("127.0.0.1:", port);
    ASSIGN_OR_RETURN(b->pid_, testing::Spawn({"/usr/bin/chromedriver", StrCat("--port=", port)},
                                             {.log_path = StrCat(dir, "/chromedriver.log")}));
    if (!testing::WaitFor([&] { return testing::HttpGet(b->address_, "/status").ok(); }, 15000,
                          50)) {
      return absl::UnavailableError(
          StrCat("chromedriver did not start: ", testing::HttpGet(b->address_, "/status").status(),
                 "; its log: ", testing::ReadFileTail(StrCat(dir, "/chromedriver.log"), 2000)));
    }
    nlohmann::json caps = {
        {"capabilities",
         {{"alwaysMatch",
           {{"goog:chromeOptions",
             {{"binary", "/usr/bin/chromium"},
              {"args",
               {"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                StrCat("--user-data-dir=", dir, "/profile"), "--window-size=1280,1100"}}}}}}}}};
    ASSIGN_OR_RETURN(nlohmann::json session, b->Call("POST", "/session", caps));
    b->session_ = session["sessionId"].get<std::string>();
    return b;
  }
  ~Browser() {
    if (!session_.empty()) (void)Call("DELETE", StrCat("/session/", session_), nullptr);
    testing::KillAndReap(pid_);
  }

  Status Navigate(const std::string& url) {
    return Call("POST", Path("/url"), {{"url", url}}).status();
  }
  // The element `css` selects, or NotFound.
  StatusOr<std::string> Find(const std::string& css) {
    ASSIGN_OR_RETURN(nlohmann::json v,
                     Call("POST", Path("/element"), {{"using", "css selector"}, {"value", css}}));
    return v.begin().value().get<std::string>();
  }
  Status Click(const std::string& element) {
    return Call("POST", Path(StrCat("/element/", element, "/click")), nlohmann::json::object())
        .status();
  }
  // Finds and clicks `css`, again until a click lands: the page redraws its rows every second,
  // and an element found just before a redraw is gone (stale) when clicked.
  Status ClickWhenThere(const std::string& css, std::chrono::milliseconds timeout) {
    Status last;
    const bool done = testing::WaitFor(
        [&] {
          StatusOr<std::string> e = Find(css);
          last = e.ok() ? Click(*e) : e.status();
          return last.ok();
        },
        timeout.count(), 100);
    return done ? Status() : last;
  }
  Status Type(const std::string& element, const std::string& text) {
    return Call("POST", Path(StrCat("/element/", element, "/value")), {{"text", text}}).status();
  }
  StatusOr<std::string> Attribute(const std::string& element, const std::string& name) {
    ASSIGN_OR_RETURN(nlohmann::json v,
                     Call("GET", Path(StrCat("/element/", element, "/attribute/", name)), nullptr));
    return v.is_string() ? v.get<std::string>() : "";
  }
  // The page's DOM now, for failure messages.
  std::string Source() {
    StatusOr<nlohmann::json> v = Call("GET", Path("/source"), nullptr);
    return v.ok() && v->is_string() ? v->get<std::string>() : v.status().ToString();
  }
  StatusOr<std::string> Text(const std::string& element) {
    ASSIGN_OR_RETURN(nlohmann::json v,
                     Call("GET", Path(StrCat("/element/", element, "/text")), nullptr));
    return v.get<std::string>();
  }

 private:
  Browser() = default;
  std::string Path(const std::string& rest) const { return StrCat("/session/", session_, rest); }
  // The answer's "value", or the error WebDriver gave.
  StatusOr<nlohmann::json> Call(const std::string& method, const std::string& path,
                                const nlohmann::json& body) {
    ASSIGN_OR_RETURN(testing::HttpAnswer answer,
                     testing::HttpCall(address_, method, path, body.is_null() ? "" : body.dump(),
                                       {"Content-Type: application/json"}, 60000));
    nlohmann::json j = nlohmann::json::parse(answer.body, nullptr, false);
    if (!j.is_object() || !j.contains("value")) {
      return absl::InternalError(StrCat(method, " ", path, ": ", answer.body));
    }
    if (answer.status != 200) {
      const std::string error = j["value"].value("error", "");
      const std::string message = StrCat(method, " ", path, ": ", j["value"].dump());
      return error == "no such element" ? absl::NotFoundError(message)
                                        : absl::InternalError(message);
    }
    return j["value"];
  }

  std::string address_;
  pid_t pid_ = -1;
  std::string session_;
};

// The node's HTTP address, as it printed it ("tessera: metrics on http://A/metrics").
std::string HttpAddressOf(const ServerProcess& node) {
  const std::string log = node.LogTail(1 << 20);
  const std::string mark = "metrics on http://";
  const size_t at = log.find(mark);
  if (at == std::string::npos) return "";
  const size_t from = at + mark.size();
  return log.substr(from, log.find("/metrics", from) - from);
}

// SIGHUP reads --auth-tokens again: a token added to the file works without a restart; a file
// that does not parse keeps the previous tokens. Both are logged and audited.
TEST_F(AuthClusterTest, ASighupReadsTheTokensFileAgain) {
  StartAuthCluster(1);
  ServerProcess& n0 = *nodes_[0];
  const std::string ops_token = "ops-token-added-later-0123456789";
  std::string out;
  EXPECT_NE(Admin(n0, "status", ops_token, &out), 0) << out;
  std::ofstream(tokens_file_) << "root " << kRootToken << " admin\nops " << ops_token << " admin\n";
  ASSERT_EQ(::kill(n0.pid(), SIGHUP), 0);
  EXPECT_TRUE(
      WaitFor([&] { return Admin(n0, "status", ops_token, &out) == 0; }, milliseconds(5'000)))
      << out;
  std::ofstream(tokens_file_) << "ops\n";  // broken: the tokens read before stay
  ASSERT_EQ(::kill(n0.pid(), SIGHUP), 0);
  EXPECT_TRUE(WaitFor([&] { return FullLog(n0).find("tokens not reloaded") != std::string::npos; },
                      milliseconds(5'000)));
  EXPECT_EQ(Admin(n0, "status", ops_token, &out), 0) << out;
  EXPECT_EQ(Admin(n0, "status", kRootToken, &out), 0) << out;
  const std::string log = FullLog(n0);
  EXPECT_NE(log.find("audit: admin action=reloadtokens"), std::string::npos) << log;
  EXPECT_NE(log.find("line 1: expected"), std::string::npos) << log;
  EXPECT_EQ(log.find(ops_token), std::string::npos) << "a token was logged";
}

TEST_F(AuthClusterTest, AnAdministratorFlushesANodeFromTheDashboardInABrowser) {
  if (access("/usr/bin/chromedriver", X_OK) != 0 || access("/usr/bin/chromium", X_OK) != 0) {
    GTEST_SKIP() << "no chromium and chromedriver (install_deps.sh installs them)";
  }
  StartAuthCluster(2);
  ServerProcess& n0 = *nodes_[0];
  ServerProcess& n1 = *nodes_[1];
  ASSERT_TRUE(CreateTableR(n0).ok());
  ASSERT_TRUE(WaitFor([&] { return WriteRow(*Data(n1, kRootToken), "k", "v").ok(); },
                      milliseconds(15'000)));
  const std::string reader = NewToken(n0, "reader");
  std::string out;
  ASSERT_EQ(Admin(n0, "grant reader read r", kRootToken, &out), 0) << out;
  const std::string http = HttpAddressOf(n0);
  ASSERT_FALSE(http.empty());

  // Without a token the POST is refused; the GET pages stay open.
  StatusOr<testing::HttpAnswer> bare =
      testing::HttpCall(HttpAddressOf(n1), "POST", "/api/action", R"({"action":"flush"})");
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(bare->status, 401) << bare->body;

  auto browser = Browser::Start(StrCat(dir_.path(), "/browser"));
  ASSERT_TRUE(browser.ok()) << browser.status();
  Browser& b = **browser;
  // The reader's token from the URL: the buttons show, the node refuses.
  ASSERT_TRUE(b.Navigate(StrCat("http://", http, "/#token=", reader)).ok());
  const std::string button =
      StrCat("button[data-action=\"flush\"][data-endpoint=\"", n1.endpoint(), "\"]");
  Status clicked = b.ClickWhenThere(button, milliseconds(15'000));
  ASSERT_TRUE(clicked.ok()) << clicked << "\n" << b.Source();
  StatusOr<std::string> result = b.Find("#action-result");
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(WaitFor([&] { return b.Attribute(*result, "data-status").value_or("") != ""; },
                      milliseconds(15'000)));
  EXPECT_EQ(*b.Attribute(*result, "data-status"), "403");
  EXPECT_NE(b.Text(*result).value_or("").find("principal reader lacks admin on *"),
            std::string::npos)
      << b.Text(*result).value_or("");

  // The administrator's token typed into the box: the flush runs on node 1.
  StatusOr<std::string> box = b.Find("#token-input");
  ASSERT_TRUE(box.ok()) << box.status();
  ASSERT_TRUE(b.Type(*box, kRootToken).ok());
  ASSERT_TRUE(b.ClickWhenThere("#token-use", milliseconds(5000)).ok());
  clicked = b.ClickWhenThere(button, milliseconds(15'000));
  ASSERT_TRUE(clicked.ok()) << clicked << "\n" << b.Source();
  ASSERT_TRUE(WaitFor([&] { return b.Attribute(*result, "data-status").value_or("") == "200"; },
                      milliseconds(30'000)))
      << b.Text(*result).value_or("");
  EXPECT_NE(b.Text(*result).value_or("").find("flush on " + n1.endpoint() + ": flushed"),
            std::string::npos)
      << b.Text(*result).value_or("");
  EXPECT_NE(FullLog(n1).find("audit: admin action=dashboard flush target=\"\" principal=root"),
            std::string::npos);
  EXPECT_NE(FullLog(n1).find("audit: admin action=dashboard flush target=\"\" principal=? "),
            std::string::npos);  // the bare POST

  // A repair from the page: node 1 checks the tablets it leads.
  clicked = b.ClickWhenThere(
      StrCat("button[data-action=\"repair\"][data-endpoint=\"", n1.endpoint(), "\"]"),
      milliseconds(15'000));
  ASSERT_TRUE(clicked.ok()) << clicked << "\n" << b.Source();
  ASSERT_TRUE(WaitFor(
      [&] {
        return b.Text(*result).value_or("").find("repair on " + n1.endpoint() + ": repaired") !=
               std::string::npos;
      },
      milliseconds(60'000)))
      << b.Text(*result).value_or("");
  EXPECT_NE(b.Text(*result).value_or("").find(" 0 not checked"), std::string::npos)
      << b.Text(*result).value_or("");
  EXPECT_NE(FullLog(n1).find("audit: admin action=dashboard repair target=\"\" principal=root"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::integration
