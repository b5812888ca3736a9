// `tessera shell` as a process (-e, -f, stdin) against real servers: the official emulator and,
// when the binary has it, `tessera serve`. Each backend is a test parameter; a missing backend
// skips loudly. Output text is checked exactly where the server's answer is deterministic.
#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "tessera/testing/test_servers.h"

namespace tessera::cli {
namespace {

using testing::ProcessResult;
using testing::RunProcess;
using testing::TestServer;

class ShellE2ETest : public ::testing::TestWithParam<std::string> {
 protected:
  static void TearDownTestSuite() { servers().clear(); }

  void SetUp() override {
    auto& slot = servers()[GetParam()];
    if (slot == nullptr) {
      auto server = TestServer::Start(GetParam(), TESSERA_BINARY_PATH);
      if (server.status().code() == absl::StatusCode::kNotFound) {
        GTEST_SKIP() << "SKIPPED: backend " << GetParam() << " unavailable: " << server.status();
      }
      ASSERT_TRUE(server.ok()) << server.status();
      slot = std::move(server).value();
    }
    endpoint_ = slot->endpoint();
    // A table of this test's own.
    table_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : table_) {
      if (c == '/') c = '_';
    }
    (void)Shell({"-e", "drop table " + table_});
  }

  bool is_tessera() const { return GetParam() == "serve"; }

  // Runs `tessera shell --endpoint <server> --time-format micros <args>`.
  ProcessResult Shell(std::vector<std::string> args, const std::string& stdin_text = "") {
    std::vector<std::string> argv = {TESSERA_BINARY_PATH, "shell", "--endpoint", endpoint_,
                                     "--time-format", "micros"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto result = RunProcess(argv, stdin_text, {}, std::chrono::seconds(30));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : ProcessResult{};
  }
  // -e `commands`, which must succeed; returns stdout.
  std::string Ok(const std::string& commands) {
    ProcessResult r = Shell({"-e", commands});
    EXPECT_EQ(r.exit_code, 0) << commands << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
    return r.out;
  }
  // Replaces every occurrence of "$T" in `s` with the table name.
  std::string T(std::string s) const {
    for (size_t at = s.find("$T"); at != std::string::npos; at = s.find("$T", at)) {
      s.replace(at, 2, table_);
    }
    return s;
  }

  static std::map<std::string, std::unique_ptr<TestServer>>& servers() {
    static auto* const map = new std::map<std::string, std::unique_ptr<TestServer>>();
    return *map;
  }

  std::string endpoint_;
  std::string table_;
};

TEST_P(ShellE2ETest, TablesAndFamilies) {
  Ok(T("create table $T \"families=cf1:maxversions=2,cf2:maxage=1d or maxversions=3\" "
       "splits=m,t"));
  const std::string tables = Ok("ls");
  EXPECT_NE(tables.find(table_ + "\n"), std::string::npos) << tables;
  EXPECT_EQ(Ok(T("describe $T")),
            T("table $T\n"
              "  FAMILY  KIND                       GC RULE\n"
              "  cf1     plain                      versions() > 2\n"
              "  cf2     plain                      (age() > 1d || versions() > 3)\n"));
  Ok(T("create family $T cf3; set gc $T cf3 maxversions=1 and maxage=2h; drop family $T cf1"));
  EXPECT_EQ(Ok(T("describe $T")),
            T("table $T\n"
              "  FAMILY  KIND                       GC RULE\n"
              "  cf2     plain                      (age() > 1d || versions() > 3)\n"
              "  cf3     plain                      (versions() > 1 && age() > 2h)\n"));
  Ok(T("drop table $T"));
  EXPECT_EQ(Ok("ls").find(table_ + "\n"), std::string::npos);
}

TEST_P(ShellE2ETest, PutGetScanCountDelete) {
  Ok(T("create table $T families=cf,dd"));
  Ok(T("put $T r1 cf:a=v1@1000 cf:a=v2@2000 cf:b=\"x y\"@1000; put $T r2 cf:a=\\x00\\xff@3000;"
       "put $T s1 dd:q=z@4000"));
  EXPECT_EQ(Ok(T("get $T r1")),
            "r1\n"
            "  cf:a @ 2000  \"v2\"\n"
            "  cf:a @ 1000  \"v1\"\n"
            "  cf:b @ 1000  \"x y\"\n");
  EXPECT_EQ(Ok(T("get $T r1 versions=1 columns=cf:a")), "r1\n  cf:a @ 2000  \"v2\"\n");
  EXPECT_EQ(Ok(T("get $T nothing")), "(row \"nothing\" not found)\n");
  EXPECT_EQ(Ok(T("scan $T prefix=r columns=cf:a versions=1")),
            "r1\n  cf:a @ 2000  \"v2\"\n"
            "r2\n  cf:a @ 3000  \"\\x00\\xff\"\n");
  EXPECT_EQ(Ok(T("scan $T keys-only")), "r1\nr2\ns1\n");
  EXPECT_EQ(Ok(T("scan $T keys-only reverse limit=2")), "s1\nr2\n");
  EXPECT_EQ(Ok(T("scan $T keys-only start=r2 end=s2")), "r2\ns1\n");
  EXPECT_EQ(Ok(T("scan $T filter=value:v.* versions=1")), "r1\n  cf:a @ 2000  \"v2\"\n");
  EXPECT_EQ(Ok(T("scan $T keys-only filter=row:r.")), "r1\nr2\n");
  EXPECT_EQ(Ok(T("scan $T keys-only filter=family:dd")), "s1\n");
  EXPECT_EQ(Ok(T("count $T; count $T prefix=r; count $T start=r2")), "3\n2\n2\n");

  Ok(T("delete $T r1 cf:a"));
  EXPECT_EQ(Ok(T("get $T r1")), "r1\n  cf:b @ 1000  \"x y\"\n");
  Ok(T("delete $T r1 cf"));
  EXPECT_EQ(Ok(T("get $T r1")), "(row \"r1\" not found)\n");
  Ok(T("delete $T r2"));
  EXPECT_EQ(Ok(T("scan $T keys-only")), "s1\n");
}

TEST_P(ShellE2ETest, IncrementAppendTruncate) {
  Ok(T("create table $T families=cf"));
  EXPECT_EQ(Ok(T("increment $T r cf:n; increment $T r cf:n 41; increment $T r cf:n -2")),
            "1\n42\n40\n");
  EXPECT_EQ(Ok(T("append $T r cf:s ab; append $T r cf:s 'c d'")), "\"ab\"\n\"abc d\"\n");
  Ok(T("put $T a1 cf:q=1; put $T a2 cf:q=1; put $T b1 cf:q=1"));
  Ok(T("truncate $T prefix=a"));
  EXPECT_EQ(Ok(T("scan $T keys-only")), "b1\nr\n");
  Ok(T("truncate $T"));
  EXPECT_EQ(Ok(T("scan $T; count $T")), "0\n");
}

TEST_P(ShellE2ETest, ErrorsAndExitCodes) {
  Ok(T("create table $T families=cf; put $T r cf:q=v"));
  // Unknown command: exit 1, message names it; later commands do not run.
  ProcessResult r = Shell({"-e", T("frob; ls")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown command \"frob\""), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  // --keep-going runs the rest and still fails.
  r = Shell({"--keep-going", "-e", T("frob; count $T")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "1\n");
  // Server errors carry their code.
  r = Shell({"-e", "get no_such_table r"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("error: NOT_FOUND: "), std::string::npos) << r.err;
  r = Shell({"-e", T("create table $T")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("ALREADY_EXISTS"), std::string::npos) << r.err;
  r = Shell({"-e", T("scan $T filter=value:(")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("INVALID_ARGUMENT"), std::string::npos) << r.err;
  // The shell's own checks: unknown family, wrong arguments.
  r = Shell({"-e", T("put $T r nofam:q=v")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("has no family \"nofam\""), std::string::npos) << r.err;
  r = Shell({"-e", T("scan $T limit=x")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("scan: limit must be an integer"), std::string::npos) << r.err;
  // Usage errors exit 2.
  r = Shell({"--no-such-flag"});
  EXPECT_EQ(r.exit_code, 2);
  r = Shell({"-e", "ls", "-f", "x"});
  EXPECT_EQ(r.exit_code, 2);
  // Nobody listening: Unavailable, quickly.
  auto down = RunProcess({TESSERA_BINARY_PATH, "shell", "--endpoint", "127.0.0.1:1", "--timeout",
                          "5", "-e", "ls"},
                         "", {}, std::chrono::seconds(30));
  ASSERT_TRUE(down.ok()) << down.status();
  EXPECT_EQ(down->exit_code, 1);
  EXPECT_NE(down->err.find("UNAVAILABLE"), std::string::npos) << down->err;
}

TEST_P(ShellE2ETest, ScriptFileAndStdin) {
  const std::string path =
      (std::filesystem::temp_directory_path() / (table_ + "-" + std::to_string(getpid()) + ".tsh"))
          .string();
  {
    std::ofstream f(path);
    f << T("# a script\n"
           "create table $T families=cf\n"
           "put $T k cf:q=\"multi\n"
           "line\"@5000\n"
           "get $T k\n"
           "bogus command\n"
           "ls\n");
  }
  ProcessResult r = Shell({"-f", path});
  std::filesystem::remove(path);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "k\n  cf:q @ 5000  \"multi\\nline\"\n");
  EXPECT_NE(r.err.find(path + ":6: error: unknown command \"bogus\""), std::string::npos) << r.err;

  // Commands piped on stdin (no terminal), and -f -.
  r = Shell({}, T("count $T\n"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1\n");
  r = Shell({"-f", "-"}, T("scan $T keys-only; quit; ls\n"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "k\n");  // nothing after quit
  r = Shell({}, "get 'unterminated\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unterminated"), std::string::npos) << r.err;
}

TEST_P(ShellE2ETest, Help) {
  const std::string all = Ok("help");
  for (const char* name : {"ls", "describe", "create table", "create family", "set gc", "put",
                           "get", "scan", "delete", "count", "truncate", "increment", "append"}) {
    EXPECT_NE(all.find(std::string("  ") + name + " "), std::string::npos) << name;
  }
  EXPECT_NE(Ok("help scan").find("usage: scan <table>"), std::string::npos);
  ProcessResult r = Shell({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--endpoint"), std::string::npos);
}

// Cassandra's additions, which only Tessera knows (the emulator drops the family options).
TEST_P(ShellE2ETest, SuperColumnsAndTimeSortedFamilies) {
  if (!is_tessera()) GTEST_SKIP() << "super columns and time-sorted families are Tessera's";
  Ok(T("create table $T families=plain; create family $T inbox super; "
       "create family $T events time-sorted"));
  EXPECT_EQ(Ok(T("describe $T")),
            T("table $T\n"
              "  FAMILY  KIND                       GC RULE\n"
              "  events  time-sorted                never\n"
              "  inbox   super-columns              never\n"
              "  plain   plain                      never\n"));
  Ok(T("put $T u1 inbox:alice:m1=hi@1000 inbox:alice:m2=yo@1000 inbox:bob:m3=hey@1000"));
  EXPECT_EQ(Ok(T("get $T u1 columns=inbox:alice")),
            "u1\n  inbox:alice:m1 @ 1000  \"hi\"\n  inbox:alice:m2 @ 1000  \"yo\"\n");
  EXPECT_EQ(Ok(T("get $T u1 columns=inbox:bob:m3")), "u1\n  inbox:bob:m3 @ 1000  \"hey\"\n");
  Ok(T("delete $T u1 inbox:alice"));
  EXPECT_EQ(Ok(T("get $T u1 columns=inbox")), "u1\n  inbox:bob:m3 @ 1000  \"hey\"\n");
  // Time-sorted: written and shown as times, newest first.
  Ok(T("put $T u2 events:1000=old@1000 events:3000=new@1000 events:2000=mid@1000"));
  EXPECT_EQ(Ok(T("get $T u2")),
            "u2\n  events:3000 @ 1000  \"new\"\n  events:2000 @ 1000  \"mid\"\n"
            "  events:1000 @ 1000  \"old\"\n");
  EXPECT_EQ(Ok(T("get $T u2 columns=events:2000")), "u2\n  events:2000 @ 1000  \"mid\"\n");
}

INSTANTIATE_TEST_SUITE_P(Backends, ShellE2ETest, ::testing::Values("emulator", "serve"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tessera::cli
