// The `tessera` binary's command-line edges, as a user meets them (issue 9): exit status 2 for
// usage errors in every subcommand, --version everywhere, HOST:PORT flags checked, strict
// config files, no raw gRPC log lines, switch defaults in --help, numbers in `admin status
// --json`, `admin tablets` and `admin ring` on one node, and `sim` refusing a cluster that does not
// fit in memory.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "nlohmann/json.hpp"
#include "tessera/testing/child_process.h"
#include "tessera/testing/test_servers.h"
#include "tessera/testing/test_support.h"

namespace tessera::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ProcessResult;
using testing::RunProcess;
using ::testing::StartsWith;

ProcessResult Tessera(std::vector<std::string> args, std::vector<std::string> env = {}) {
  args.insert(args.begin(), TESSERA_BINARY_PATH);
  auto r = RunProcess(args, "", env, std::chrono::seconds(60));
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : ProcessResult{};
}

std::string Show(const std::vector<std::string>& args, const ProcessResult& r) {
  std::string s = "tessera";
  for (const auto& a : args) s += " " + a;
  return s + "\nexit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

TEST(CliProcessTest, UsageErrorsExitTwoInEverySubcommand) {
  const std::vector<std::vector<std::string>> bad = {
      {"serve", "--memtable-mb", "0"},  // CLI11: 105
      {"serve", "--memtable-mb", "x"},  // 106
      {"serve", "--no-such-flag"},      // 109
      {"shell", "--no-such-flag"},
      {"bench", "--threads", "x"},
      {"admin"},  // a subcommand is required
      {"admin", "--no-such-flag"},
      {"admin", "status", "--timeout-ms", "0"},
      {"sim", "--nodes", "x"},
      {"sim", "--scenario", "crash", "--no-such-flag"},
      {"no-such-command"},
  };
  for (const auto& args : bad) {
    ProcessResult r = Tessera(args);
    EXPECT_EQ(r.exit_code, 2) << Show(args, r);
    EXPECT_THAT(r.err, Not(HasSubstr("terminate called"))) << Show(args, r);
  }
  for (const char* command : {"serve", "shell", "bench", "admin", "sim"}) {
    ProcessResult r = Tessera({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << Show({command, "--help"}, r);
    EXPECT_THAT(r.out, HasSubstr("--version")) << command;
  }
  EXPECT_EQ(Tessera({"--help"}).exit_code, 0);
}

TEST(CliProcessTest, VersionOnTheBinaryAndEverySubcommand) {
  ProcessResult top = Tessera({"--version"});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  const std::regex line(R"(tessera [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{4,40}|unknown)\)\n)");
  EXPECT_TRUE(std::regex_match(top.out, line)) << top.out;
  const std::string rest = top.out.substr(std::string("tessera").size());  // " 0.1.0 (commit x)\n"
  for (const char* command : {"serve", "shell", "bench", "admin", "sim"}) {
    ProcessResult r = Tessera({command, "--version"});
    EXPECT_EQ(r.exit_code, 0) << Show({command, "--version"}, r);
    EXPECT_EQ(r.out, std::string("tessera ") + command + rest);
  }
}

TEST(CliProcessTest, AddressFlagsAreHostPort) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"serve", "--listen", "127.0.0.1:99999"},
       "--listen: \"127.0.0.1:99999\" is not HOST:PORT: port 99999 is out of range (0..65535)"},
      {{"serve", "--listen", ":8086"}, "--listen: \":8086\" is not HOST:PORT: the host is empty"},
      {{"serve", "--advertise", "10.0.0.1:0"}, "--advertise: \"10.0.0.1:0\" is not HOST:PORT"},
      {{"serve", "--seeds", "10.0.0.1:7000,10.0.0.2"}, "--seeds: \"10.0.0.2\" is not HOST:PORT"},
      {{"serve", "--lock-service", "etcd://h:2379,h2:99999"},
       "--lock-service: lock service \"etcd://h:2379,h2:99999\""},
      {{"shell", "--endpoint", "localhost:http", "-e", "ls"},
       "--endpoint: \"localhost:http\" is not HOST:PORT"},
      {{"bench", "--endpoint", "localhost"}, "--endpoint: \"localhost\" is not HOST:PORT"},
      {{"admin", "status", "--addr", "h:65536"}, "--addr: \"h:65536\" is not HOST:PORT"},
  };
  for (const Case& c : cases) {
    ProcessResult r = Tessera(c.args);
    EXPECT_EQ(r.exit_code, 2) << Show(c.args, r);
    EXPECT_THAT(r.err, HasSubstr(c.message)) << Show(c.args, r);
  }
  for (const char* command : {"shell", "bench", "admin"}) {
    std::vector<std::string> args = {command};
    if (args[0] == "admin") args.push_back("status");
    if (args[0] == "shell") args.insert(args.end(), {"-e", "ls"});
    ProcessResult r = Tessera(args, {"BIGTABLE_EMULATOR_HOST=127.0.0.1:99999"});
    EXPECT_EQ(r.exit_code, 2) << Show(args, r);
    EXPECT_THAT(r.err, HasSubstr("$BIGTABLE_EMULATOR_HOST: \"127.0.0.1:99999\" is not HOST:PORT"))
        << Show(args, r);
  }
}

class ConfigFileProcessTest : public ::testing::Test {
 protected:
  ProcessResult Serve(const std::string& toml, std::vector<std::string> extra = {}) {
    path_ = dir_.path() + "/tessera.toml";
    std::ofstream(path_) << toml;
    std::vector<std::string> args = {"serve", "--config", path_};
    args.insert(args.end(), extra.begin(), extra.end());
    return Tessera(args);
  }
  testing::TempDir dir_;
  std::string path_;
};

TEST_F(ConfigFileProcessTest, UnknownKeysBadValuesAndSyntaxErrorsRefuseToStart) {
  ProcessResult r = Serve("listen = \"127.0.0.1:0\"\n\ndata_dir = \"x\"\n");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr(path_ + ":3: unknown key 'data_dir'; did you mean 'data-dir'?"));
  EXPECT_FALSE(std::filesystem::exists("x"));

  r = Serve("listen = \"127.0.0.1:0\"\nmemtable-mb = 0\n");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr(path_ + ":2: bad value for 'memtable-mb': Value 0 not in range"));

  r = Serve("seeds = [\"10.0.0.1:7000\", \"10.0.0.2:99999\"]\n");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr(path_ + ":1: bad value for 'seeds': \"10.0.0.2:99999\""));

  r = Serve("listen = \"127.0.0.1:0\"\ndata-dir = \"unterminated\n");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr(path_ + ":2: TOML syntax error"));
}

TEST_F(ConfigFileProcessTest, TheFileIsAppliedAndFlagsWin) {
  const std::string from_file = dir_.path() + "/from-file";
  const std::string from_flag = dir_.path() + "/from-flag";
  const std::string port_file = dir_.path() + "/port";
  path_ = dir_.path() + "/tessera.toml";
  std::ofstream(path_) << "listen = \"127.0.0.1:0\"\ndata-dir = \"" << from_file
                       << "\"\nlog-level = \"warn\"\n";
  for (const std::string& data_dir : {std::string(), from_flag}) {
    std::vector<std::string> argv = {TESSERA_BINARY_PATH, "serve", "--config", path_,
                                     "--port-file", port_file};
    if (!data_dir.empty()) argv.insert(argv.end(), {"--data-dir", data_dir});
    std::filesystem::remove(port_file);
    testing::SpawnOptions spawn;
    spawn.log_path = dir_.path() + "/serve.log";
    StatusOr<pid_t> pid = testing::Spawn(argv, spawn);
    ASSERT_TRUE(pid.ok()) << pid.status();
    const bool up = testing::WaitFor([&] { return std::filesystem::exists(port_file); }, 30000);
    StatusOr<int> exit = testing::TerminateAndWait(*pid, std::chrono::seconds(10));
    ASSERT_TRUE(up) << testing::ReadFileTail(spawn.log_path, 2000);
    ASSERT_TRUE(exit.ok()) << exit.status();
    EXPECT_EQ(*exit, 0) << testing::ReadFileTail(spawn.log_path, 2000);
    EXPECT_NE(testing::ReadFileOrEmpty(port_file), "8086\n");  // listen came from the file
  }
  EXPECT_TRUE(std::filesystem::exists(from_file));
  EXPECT_TRUE(std::filesystem::exists(from_flag));
}

// A socket on the port without SO_REUSEPORT, so gRPC's bind fails with "address in use".
class PortHolder {
 public:
  PortHolder() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 && listen(fd_, 1) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~PortHolder() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(CliProcessTest, GrpcLogLinesComeThroughTesserasLogger) {
  PortHolder holder;
  ASSERT_GT(holder.port(), 0);
  testing::TempDir dir;
  // gRPC's own format: "E1201 09:07:47.664067  1234 chttp2_server.cc:1045] ..."
  const std::regex raw(R"((^|\n)[EWID][0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2})");
  for (const std::string format : {"text", "json"}) {
    std::vector<std::string> args = {"serve", "--listen",
                                     "127.0.0.1:" + std::to_string(holder.port()), "--data-dir",
                                     dir.path() + "/" + format, "--log-format", format};
    ProcessResult r = Tessera(args);
    EXPECT_EQ(r.exit_code, 1) << Show(args, r);
    EXPECT_FALSE(std::regex_search(r.err, raw)) << Show(args, r);
    EXPECT_THAT(r.err, HasSubstr("grpc: ")) << Show(args, r);
    EXPECT_THAT(r.err, HasSubstr("cannot listen on")) << Show(args, r);
    if (format == "json") {  // every line is a JSON object but the final message
      std::istringstream lines(r.err);
      std::string l;
      while (std::getline(lines, l)) {
        if (l.starts_with("tessera serve: ")) continue;
        EXPECT_TRUE(nlohmann::json::accept(l)) << l;
      }
    }
  }
}

TEST(CliProcessTest, HelpShowsTheDefaultOfSwitches) {
  ProcessResult r = Tessera({"serve", "--help"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, Not(HasSubstr("{false}")));
  EXPECT_THAT(r.out, HasSubstr("--inline-reads, --no-inline-reads"));
  EXPECT_THAT(r.out, HasSubstr("instead of the worker threads (default: on)"));
  EXPECT_THAT(r.out, HasSubstr("--inline-writes, --no-inline-writes"));
  EXPECT_THAT(r.out, HasSubstr("instead of the worker threads (default: on with --sync periodic"));
}

// Where MutateRow runs follows --sync unless --inline-writes says: the server's start line.
TEST(CliProcessTest, WritesRunInlineByDefaultOnlyWithPeriodicSync) {
  testing::TempDir dir;
  const std::string port_file = dir.path() + "/port";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "MutateRow on the worker threads"},
      {{"--sync", "periodic"}, "MutateRow on the loop"},
      {{"--sync", "periodic", "--no-inline-writes"}, "MutateRow on the worker threads"},
      {{"--inline-writes"}, "MutateRow on the loop"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<std::string> argv = {
        TESSERA_BINARY_PATH, "serve",   "--listen",   "127.0.0.1:0",
        "--port-file",       port_file, "--data-dir", dir.path() + "/data" + std::to_string(i)};
    argv.insert(argv.end(), cases[i].first.begin(), cases[i].first.end());
    std::filesystem::remove(port_file);
    testing::SpawnOptions spawn;
    spawn.log_path = dir.path() + "/serve" + std::to_string(i) + ".log";
    StatusOr<pid_t> pid = testing::Spawn(argv, spawn);
    ASSERT_TRUE(pid.ok()) << pid.status();
    const bool up = testing::WaitFor([&] { return std::filesystem::exists(port_file); }, 30000);
    StatusOr<int> exit = testing::TerminateAndWait(*pid, std::chrono::seconds(10));
    const std::string log = testing::ReadFileOrEmpty(spawn.log_path);
    ASSERT_TRUE(up) << log;
    ASSERT_TRUE(exit.ok()) << exit.status();
    EXPECT_THAT(log, HasSubstr(cases[i].second)) << "case " << i << ":\n" << log;
  }
}

TEST(CliProcessTest, AdminStatusJsonPrintsNumbers) {
  testing::TempDir dir;
  auto server = testing::TestServer::StartTesseraServe(TESSERA_BINARY_PATH, dir.path());
  ASSERT_TRUE(server.ok()) << server.status();
  ProcessResult r = Tessera({"admin", "status", "--json", "--addr", (*server)->endpoint()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["nodes"].size(), 1u) << r.out;
  const nlohmann::json& node = j["nodes"][0];
  for (const char* key : {"load_bytes", "generation", "heartbeat"}) {
    EXPECT_TRUE(node[key].is_number_integer()) << key << ": " << r.out;
  }
  EXPECT_TRUE(j["master_term"].is_number_integer()) << r.out;
  EXPECT_TRUE(j["refused_messages"].is_number_integer()) << r.out;
  EXPECT_EQ(node["endpoint"], (*server)->endpoint());
  EXPECT_TRUE(j.contains("lock_service_error")) << r.out;  // empty fields are kept
}

// One node does not replicate: `admin tablets` still lists its tablets, RF 1, itself primary,
// with the sequences its writes took; exit 1 when --addr does not answer, 2 for a bad --table.
TEST(CliProcessTest, AdminTabletsOnOneNodeListsItsTabletsAsRf1) {
  testing::TempDir dir;
  auto server = testing::TestServer::StartTesseraServe(TESSERA_BINARY_PATH, dir.path());
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string addr = (*server)->endpoint();
  const std::vector<std::string> shell = {
      "shell", "--endpoint", addr, "-e",
      "create table t families=cf splits=m; put t a cf:q=1; put t b cf:q=2; put t x cf:q=3"};
  ProcessResult made = Tessera(shell);
  ASSERT_EQ(made.exit_code, 0) << Show(shell, made);

  ProcessResult r = Tessera({"admin", "tablets", "--table", "t", "--addr", addr});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("2 tablets of 1 table in projects/p/instances/i, from 1 of 1 node"));
  EXPECT_THAT(r.out, HasSubstr("this node does not replicate its tables (single node)"));
  EXPECT_THAT(r.out, HasSubstr(addr + " @2\n")) << r.out;  // "".."m" took a and b
  EXPECT_THAT(r.out, HasSubstr(addr + " @1\n")) << r.out;  // "m".. took x

  r = Tessera({"admin", "tablets", "--json", "--addr", addr, "--table",
               "projects/p/instances/i/tables/t"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["tablets"].size(), 2u) << r.out;
  for (const nlohmann::json& t : j["tablets"]) {
    ASSERT_EQ(t["replicas"].size(), 1u) << r.out;
    EXPECT_EQ(t["primary"], addr);
    EXPECT_EQ(t["replicas"][0]["lag"], 0);
  }
  EXPECT_EQ(j["tablets"][0]["primary_last_sequence"], 2);
  EXPECT_EQ(j["nodes"][0]["replicated"], false);

  PortHolder silent;  // accepts, never answers
  r = Tessera({"admin", "tablets", "--timeout-ms", "300", "--addr",
               "127.0.0.1:" + std::to_string(silent.port())});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  r = Tessera({"admin", "tablets", "--table", "a/b", "--addr", addr});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--table"));
}

// Tessera's nodetool on one node: tablestats counts the table's writes and reads, flush turns
// its memtables into SSTables that info and tablestats then show, compact merges them, and a
// table the node does not know is exit 1 naming it (2 for a malformed name).
TEST(CliProcessTest, AdminNodeCommandsShowAndActOnOneNode) {
  testing::TempDir dir;
  auto server = testing::TestServer::StartTesseraServe(TESSERA_BINARY_PATH, dir.path());
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string addr = (*server)->endpoint();
  const std::vector<std::string> shell = {
      "shell", "--endpoint", addr, "-e",
      "create table t families=cf splits=m; put t a cf:q=1; put t b cf:q=2; put t x cf:q=3; "
      "get t a; get t x; scan t"};
  ProcessResult made = Tessera(shell);
  ASSERT_EQ(made.exit_code, 0) << Show(shell, made);

  ProcessResult r = Tessera({"admin", "tablestats", "--json", "--table", "t", "--addr", addr});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["tables"].size(), 1u) << r.out;
  nlohmann::json t = j["tables"][0];
  EXPECT_EQ(t["table_name"], "projects/p/instances/i/tables/t");
  EXPECT_EQ(t["tablets"], 2);
  EXPECT_EQ(t["rows_written"], 3);
  // Two gets and a scan of both tablets: one-row reads or scans, as the data service chose.
  EXPECT_GE(t["row_reads"].get<int64_t>() + t["scans"].get<int64_t>(), 3) << r.out;
  EXPECT_EQ(t["sstables"], 0);

  r = Tessera({"admin", "flush", "--table", "t", "--addr", addr});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("flushed 2 tablets of projects/p/instances/i/tables/t"));
  r = Tessera({"admin", "put-it-back"});  // unknown subcommand
  EXPECT_EQ(r.exit_code, 2);
  const std::vector<std::string> more = {"shell", "--endpoint", addr, "-e",
                                         "put t a cf:q=4; put t x cf:q=5"};
  ASSERT_EQ(Tessera(more).exit_code, 0);
  ASSERT_EQ(Tessera({"admin", "flush", "--addr", addr}).exit_code, 0);

  r = Tessera({"admin", "info", "--json", "--addr", addr});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_GE(j["sstables"].get<int64_t>(), 4) << r.out;  // two flushes of both tablets
  EXPECT_GT(j["load_bytes"].get<int64_t>(), 0) << r.out;
  EXPECT_GT(j["resident_bytes"].get<int64_t>(), 0) << r.out;
  EXPECT_EQ(j["endpoint"], addr);
  EXPECT_EQ(j["serving"], true);
  r = Tessera({"admin", "info", "--addr", addr});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Endpoint                : " + addr + "\n"));

  r = Tessera({"admin", "compact", "--table", "t", "--json", "--addr", addr});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tablets"], 2);
  EXPECT_GE(j["sstables_before"].get<int64_t>(), 4) << r.out;
  EXPECT_EQ(j["sstables_after"], 2) << r.out;
  r = Tessera({"admin", "tablestats", "--table", "t", "--addr", addr});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\tSSTable count           : 2\n"));
  EXPECT_THAT(r.out, HasSubstr("\tLocal write count       : 5 (5 rows)\n"));
  r = Tessera({"admin", "compactionstats", "--addr", addr});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pending tasks"));
  EXPECT_THAT(r.out, HasSubstr("compactions done"));

  r = Tessera({"admin", "flush", "--table", "nosuch", "--addr", addr});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("projects/p/instances/i/tables/nosuch not found"));
  r = Tessera({"admin", "tablestats", "--table", "a/b", "--addr", addr});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("tessera admin tablestats: --table"));
  PortHolder silent;
  r = Tessera({"admin", "info", "--timeout-ms", "300", "--addr",
               "127.0.0.1:" + std::to_string(silent.port())});
  EXPECT_EQ(r.exit_code, 1) << r.err;
}

// Snapshots on one node: taken, listed, restored into a new table (with the schema and the
// tablets of the old one) and into the table itself, cleared; every mistake an exit code and a
// message naming it.
TEST(CliProcessTest, AdminSnapshotRestoreAndClear) {
  testing::TempDir dir;
  auto server = testing::TestServer::StartTesseraServe(TESSERA_BINARY_PATH, dir.path());
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string addr = (*server)->endpoint();
  const auto shell = [&](const std::string& script) {
    const std::vector<std::string> args = {"shell", "--endpoint", addr, "-e", script};
    ProcessResult r = Tessera(args);
    EXPECT_EQ(r.exit_code, 0) << Show(args, r);
    return r.out;
  };
  shell(
      "create table t families=cf:maxversions=2,hot splits=m; put t a cf:q=1@1000; put t a "
      "cf:q=2@2000; "
      "put t a cf:q=3@3000; put t b hot:h=x; put t gone cf:q=1; delete t gone; put t x cf:q=4");
  ASSERT_EQ(Tessera({"admin", "flush", "--table", "t", "--addr", addr}).exit_code, 0);
  shell("put t y cf:q=5");  // in the memtable only

  ProcessResult r =
      Tessera({"admin", "snapshot", "--table", "t", "--tag", "before", "--addr", addr});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("snapshot \"before\" of projects/p/instances/i/tables/t: 2 tablets"));
  const std::string scan_t = shell("scan t");
  shell("put t a cf:q=after; put t z cf:q=after; delete t x");

  r = Tessera({"admin", "listsnapshots", "--json", "--addr", addr});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u) << r.out;
  EXPECT_EQ(j[0]["tag"], "before");
  EXPECT_EQ(j[0]["table_name"], "projects/p/instances/i/tables/t");
  EXPECT_EQ(j[0]["tablets"].size(), 2u);
  EXPECT_EQ(j[0]["endpoint"], addr);

  r = Tessera(
      {"admin", "restore", "--table", "t", "--tag", "before", "--target", "t2", "--addr", addr});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("into projects/p/instances/i/tables/t2: 2 tablets from 1 nodes, "
                               "4 rows, 5 cells"));
  std::string scan_t2 = shell("scan t2");
  EXPECT_EQ(scan_t2, scan_t);
  EXPECT_THAT(shell("describe t2"), HasSubstr("versions() > 2"));
  r = Tessera({"admin", "tablestats", "--json", "--table", "t2", "--addr", addr});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["tables"][0]["tablets"], 2) << r.out;

  r = Tessera({"admin", "restore", "--table", "t", "--tag", "before", "--addr", addr});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(shell("scan t"), scan_t);

  // Mistakes.
  r = Tessera({"admin", "snapshot", "--table", "t", "--tag", "before", "--addr", addr});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("snapshot \"before\" of table projects/p/instances/i/tables/t "
                               "already exists"));
  r = Tessera({"admin", "snapshot", "--table", "t", "--tag", "a/b", "--addr", addr});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("may hold only letters"));
  r = Tessera({"admin", "snapshot", "--table", "nosuch", "--tag", "x", "--addr", addr});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("tables/nosuch not found"));
  r = Tessera({"admin", "snapshot", "--tag", "x", "--addr", addr});
  EXPECT_EQ(r.exit_code, 2);
  r = Tessera({"admin", "restore", "--table", "t", "--tag", "nosuch", "--addr", addr});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("no node has a snapshot \"nosuch\""));
  r = Tessera(
      {"admin", "restore", "--table", "t", "--tag", "before", "--target", "t2", "--addr", addr});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("tables/t2 already exists"));
  r = Tessera({"admin", "clearsnapshot", "--table", "t", "--addr", addr});
  EXPECT_EQ(r.exit_code, 2);

  r = Tessera({"admin", "clearsnapshot", "--tag", "before", "--addr", addr});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("removed 2 snapshot files"));
  r = Tessera({"admin", "listsnapshots", "--addr", addr});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("There are no snapshots"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/snapshots/before"));
}

// `admin drain`: the node refuses data calls from then on, its memtables are flushed, and it
// still answers the admin tool; restarted, it serves what it held.
TEST(CliProcessTest, AdminDrainStopsServingAndFlushes) {
  testing::TempDir dir;
  std::string addr;
  {
    auto server = testing::TestServer::StartTesseraServe(TESSERA_BINARY_PATH, dir.path());
    ASSERT_TRUE(server.ok()) << server.status();
    addr = (*server)->endpoint();
    const std::vector<std::string> made = {"shell", "--endpoint", addr, "-e",
                                           "create table t families=cf; put t a cf:q=1"};
    ASSERT_EQ(Tessera(made).exit_code, 0);
    ProcessResult r = Tessera({"admin", "drain", "--addr", addr});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("drained " + addr));
    r = Tessera({"admin", "info", "--json", "--addr", addr});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["serving"], false) << r.out;
    EXPECT_EQ(j["drained"], true) << r.out;
    EXPECT_EQ(j["flushes"], 1) << r.out;  // the drain's
    EXPECT_EQ(j["sstables"], 1) << r.out;
    EXPECT_LT(j["memtable_bytes"].get<int64_t>(), 8192) << r.out;  // an empty one's arena
    r = Tessera({"admin", "info", "--addr", addr});
    EXPECT_THAT(r.out, HasSubstr("NO (drained: restart it to serve again)"));
    const std::vector<std::string> put = {"shell", "--endpoint", addr, "-e", "put t b cf:q=2"};
    r = Tessera(put);
    EXPECT_NE(r.exit_code, 0) << Show(put, r);
    EXPECT_THAT(r.out + r.err, HasSubstr("drained"));
    // Draining again is harmless.
    EXPECT_EQ(Tessera({"admin", "drain", "--json", "--addr", addr}).exit_code, 0);
  }
  auto server = testing::TestServer::StartTesseraServe(TESSERA_BINARY_PATH, dir.path());
  ASSERT_TRUE(server.ok()) << server.status();
  const std::vector<std::string> get = {"shell", "--endpoint", (*server)->endpoint(), "-e",
                                        "get t a; put t b cf:q=2"};
  ProcessResult r = Tessera(get);
  ASSERT_EQ(r.exit_code, 0) << Show(get, r);
  EXPECT_THAT(r.out, HasSubstr("cf:q"));
}

// setcompactionthroughput / getcompactionthroughput change and show the node's compaction
// rate at run time, as nodetool's do.
TEST(CliProcessTest, AdminCompactionAndStreamThroughputsChangeAtRunTime) {
  testing::TempDir dir;
  auto server = testing::TestServer::StartTesseraServe(TESSERA_BINARY_PATH, dir.path());
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string addr = (*server)->endpoint();
  // The defaults of --compaction-mb-per-s and --stream-mb-per-s.
  for (const auto& [what, default_rate] :
       {std::pair<std::string, std::string>{"compaction", "64"}, {"stream", "24"}}) {
    SCOPED_TRACE(what);
    const std::string get = "get" + what + "throughput", set = "set" + what + "throughput";
    ProcessResult r = Tessera({"admin", get, "--addr", addr});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr(what + " throughput of " + addr + ": " + default_rate + " MiB/s"));
    r = Tessera({"admin", set, "16", "--addr", addr});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr(": 16 MiB/s"));
    r = Tessera({"admin", get, "--json", "--addr", addr});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["mb_per_second"], 16) << r.out;
    if (what == "stream") {  // netstats shows the rate, and no stream on one node
      r = Tessera({"admin", "netstats", "--addr", addr});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_THAT(r.out, HasSubstr("Stream throughput       : 16 MiB/s\n"));
      EXPECT_THAT(r.out, HasSubstr("Streams out             : none\n"));
      EXPECT_THAT(r.out, HasSubstr("0 B sent, 0 B received, 0 copies sent whole"));
      r = Tessera({"admin", "netstats", "--json", "--addr", addr});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(nlohmann::json::parse(r.out)["stream_throughput_mb_per_second"], 16) << r.out;
    }
    r = Tessera({"admin", set, "0", "--addr", addr});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("unlimited"));
    // A bad value is a usage error.
    EXPECT_EQ(Tessera({"admin", set, "abc", "--addr", addr}).exit_code, 2);
    EXPECT_EQ(Tessera({"admin", set, "-1", "--addr", addr}).exit_code, 2);
    EXPECT_EQ(Tessera({"admin", set, "--addr", addr}).exit_code, 2);
  }
  // The compaction still runs (unthrottled).
  EXPECT_EQ(Tessera({"admin", "compact", "--addr", addr}).exit_code, 0);
}

// `admin ring` on one node: its token, chosen when it first registered, owns the whole ring.
// The ring is kept in the lock service (here embedded in the data folder), so a restart finds
// it again; a test server listens on a new port each start, and a node at another address is
// another member of the ring (replicas are named by endpoint): it takes the next token, and
// the old address keeps its own until removed.
TEST(CliProcessTest, AdminRingShowsTheTokensAndTheyOutliveARestart) {
  testing::TempDir dir;
  std::string first;
  for (int start = 0; start < 2; ++start) {
    auto server = testing::TestServer::StartTesseraServe(TESSERA_BINARY_PATH, dir.path());
    ASSERT_TRUE(server.ok()) << server.status();
    const std::string addr = (*server)->endpoint();
    ProcessResult r = Tessera({"admin", "ring", "--addr", addr});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    r = Tessera({"admin", "ring", "--json", "--addr", addr});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    if (start == 0) {
      first = addr;
      ASSERT_EQ(j["nodes"].size(), 1u) << r.out;
      EXPECT_EQ(j["nodes"][0]["endpoint"], addr);
      EXPECT_EQ(j["nodes"][0]["token"], "8000000000000000");
      EXPECT_EQ(j["nodes"][0]["owns"], 1.0);
      EXPECT_EQ(j["nodes"][0]["state"], "up normal");
      continue;
    }
    ASSERT_EQ(j["nodes"].size(), 2u) << r.out;
    EXPECT_EQ(j["nodes"][0]["endpoint"], addr);  // ring order: 0x00.. first
    EXPECT_EQ(j["nodes"][0]["token"], "0000000000000000");
    EXPECT_EQ(j["nodes"][1]["endpoint"], first);
    EXPECT_EQ(j["nodes"][1]["token"], "8000000000000000");
    EXPECT_EQ(j["nodes"][1]["owns"], 0.5);
    EXPECT_THAT(r.out, HasSubstr("\"state\":\"?\""));
  }
  PortHolder silent;
  ProcessResult r = Tessera({"admin", "ring", "--timeout-ms", "300", "--addr",
                             "127.0.0.1:" + std::to_string(silent.port())});
  EXPECT_EQ(r.exit_code, 1) << r.err;
}

// `tessera sim --nodes 3000` aborted with std::bad_alloc under `ulimit -v`; it now refuses what
// cannot fit before allocating. A 400 MB limit keeps the test quick.
TEST(CliProcessTest, SimRefusesAClusterThatDoesNotFitInMemory) {
  const std::string limit = "ulimit -v 400000; exec " + std::string(TESSERA_BINARY_PATH);
  auto big = RunProcess({"/bin/sh", "-c", limit + " sim --scenario crash --nodes 1000,3000"}, "",
                        {}, std::chrono::seconds(60));
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->exit_code, 2) << big->err;
  EXPECT_THAT(big->err, HasSubstr("more than the address-space limit (ulimit -v) allows")) << big->err;
  EXPECT_THAT(big->err, HasSubstr("at most")) << big->err;
  EXPECT_THAT(big->err, Not(HasSubstr("bad_alloc"))) << big->err;
  EXPECT_EQ(big->out, "");  // refused before the first run

  auto small = RunProcess(
      {"/bin/sh", "-c", limit + " sim --scenario join --nodes 30 --measure-rounds 5 --json"}, "",
      {}, std::chrono::seconds(60));
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->exit_code, 0) << small->err;
}

}  // namespace
}  // namespace tessera::cli
