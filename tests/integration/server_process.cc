#include "server_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>
#include <thread>

#include "gtest/gtest.h"
#include "tessera/rpc/bearer_token.h"
#include "tessera/testing/child_process.h"

namespace tessera::integration {

namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// The process helpers (util/child_process.h), under the names this file uses.
StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  return ::tessera::testing::Spawn(argv, {.log_path = log_path, .append_log = true});
}
using ::tessera::testing::Exited;
std::string Tail(const std::string& path, size_t max_bytes) {
  return ::tessera::testing::ReadFileTail(path, max_bytes);
}
std::string ReadFile(const std::string& path) { return ::tessera::testing::ReadFileOrEmpty(path); }

std::atomic<int> spawn_counter{0};

}  // namespace

StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::StartTessera(
    const std::string& tessera_binary, const std::string& data_dir,
    const std::vector<std::string>& extra_args) {
  if (access(tessera_binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(StrCat("tessera binary ", tessera_binary, " is not executable"));
  }
  const int n = spawn_counter.fetch_add(1);
  const std::string port_file = StrCat(data_dir, ".port");
  const std::string log_path = StrCat(data_dir, ".serve-", n, ".log");
  std::error_code ec;
  fs::remove(port_file, ec);
  fs::create_directories(data_dir, ec);
  std::vector<std::string> argv = {tessera_binary, "serve",      "--listen", "127.0.0.1:0",
                                   "--port-file",  port_file,    "--data-dir", data_dir,
                                   "--log-level",  "warn"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  ASSIGN_OR_RETURN(pid_t pid, Spawn(argv, log_path));
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline) {
    int status = 0;
    if (Exited(pid, &status)) {
      return absl::UnavailableError(StrCat("tessera serve exited with status ", status,
                                           " before serving; log:\n", Tail(log_path, 4000)));
    }
    std::string text = ReadFile(port_file);
    if (!text.empty() && text.back() == '\n') {
      int port = std::atoi(text.c_str());
      if (port > 0) {
        return std::unique_ptr<ServerProcess>(
            new ServerProcess(pid, StrCat("127.0.0.1:", port), log_path));
      }
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return absl::UnavailableError(StrCat("tessera serve wrote no port file within 30 s; log:\n",
                                       Tail(log_path, 4000)));
}

StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::StartEmulator(
    const std::string& emulator_binary, const std::string& log_dir) {
  if (access(emulator_binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(StrCat("emulator ", emulator_binary, " is not executable"));
  }
  const std::string log_path =
      StrCat(log_dir, "/emulator-", spawn_counter.fetch_add(1), ".log");
  ASSIGN_OR_RETURN(pid_t pid,
                   Spawn({emulator_binary, "-host", "127.0.0.1", "-port", "0"}, log_path));
  const std::regex running(R"(running on 127\.0\.0\.1:([0-9]+))");
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline) {
    int status = 0;
    if (Exited(pid, &status)) {
      return absl::UnavailableError(StrCat("emulator exited with status ", status,
                                           "; log:\n", Tail(log_path, 4000)));
    }
    std::smatch m;
    std::string text = ReadFile(log_path);
    if (std::regex_search(text, m, running)) {
      return std::unique_ptr<ServerProcess>(
          new ServerProcess(pid, StrCat("127.0.0.1:", m[1].str()), log_path));
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return absl::UnavailableError("emulator reported no port within 30 s");
}

ServerProcess::~ServerProcess() { Kill(); }

std::string ServerProcess::LogTail(size_t max_bytes) const { return Tail(log_path_, max_bytes); }

StatusOr<int> ServerProcess::WaitExit(milliseconds timeout) {
  if (reaped_) return absl::FailedPreconditionError("server already stopped");
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    int status = 0;
    if (Exited(pid_, &status)) {
      reaped_ = true;
      return status;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  return absl::DeadlineExceededError(
      StrCat("server ", pid_, " still running after ", timeout.count(), " ms"));
}

StatusOr<int> ServerProcess::Stop(milliseconds timeout) {
  if (reaped_) return absl::FailedPreconditionError("server already stopped");
  kill(pid_, SIGTERM);
  StatusOr<int> exited = WaitExit(timeout);
  if (exited.ok()) return exited;
  Kill();
  return absl::DeadlineExceededError(
      StrCat("server ", pid_, " did not exit within ", timeout.count(), " ms of SIGTERM"));
}

void ServerProcess::Kill() {
  if (reaped_) return;
  ::tessera::testing::KillAndReap(pid_);
  reaped_ = true;
}

std::shared_ptr<grpc::Channel> ServerProcess::NewChannel() const {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);
  args.SetMaxSendMessageSize(256 << 20);
  // Separate connections per channel (the tests use several channels to load the server).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return rpc::CreateChannelWithToken(endpoint_, grpc::InsecureChannelCredentials(), args, token_);
}

bool ParseTestFlags(int argc, char** argv,
                    const std::vector<std::pair<std::string, std::string*>>& flags,
                    const std::vector<std::string>& required, const std::string& usage) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    bool known = false;
    for (const auto& [name, value] : flags) {
      const std::string prefix = StrCat("--", name, "=");
      if (arg.rfind(prefix, 0) == 0) {
        *value = arg.substr(prefix.size());
        known = true;
        break;
      }
    }
    if (!known) {
      std::fprintf(stderr, "unknown argument %s\nusage: %s %s\n", arg.c_str(), argv[0],
                   usage.c_str());
      return false;
    }
  }
  for (const std::string& name : required) {
    for (const auto& [flag, value] : flags) {
      if (flag == name && value->empty()) {
        std::fprintf(stderr, "--%s is required\nusage: %s %s\n", name.c_str(), argv[0],
                     usage.c_str());
        return false;
      }
    }
  }
  return true;
}

int RunTestsWithTesseraBinary(int argc, char** argv, std::string* tessera_binary) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!ParseTestFlags(argc, argv, {{"tessera", tessera_binary}}, {"tessera"},
                      "--tessera=<tessera binary> [gtest flags]")) {
    return 2;
  }
  return RUN_ALL_TESTS();
}

Status FromGrpc(const grpc::Status& status) {
  return Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

std::string TableName(const std::string& table_id) {
  return StrCat(kInstanceName, "/tables/", table_id);
}

Status ReadAllRows(google::bigtable::v2::Bigtable::Stub* stub,
                   const google::bigtable::v2::ReadRowsRequest& request,
                   std::vector<model::Row>* rows, milliseconds timeout,
                   const std::vector<std::pair<std::string, std::string>>& metadata) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  for (const auto& [key, value] : metadata) context.AddMetadata(key, value);
  auto reader = stub->ReadRows(&context, request);
  client::RowMerger merger(request.reversed());
  google::bigtable::v2::ReadRowsResponse response;
  Status merge_status;
  while (reader->Read(&response)) {
    if (merge_status.ok()) merge_status = merger.Add(response);
    while (merger.HasRow()) rows->push_back(merger.TakeRow());
  }
  grpc::Status rpc = reader->Finish();
  if (!rpc.ok()) return FromGrpc(rpc);
  RETURN_IF_ERROR(merge_status);
  RETURN_IF_ERROR(merger.Finish());
  while (merger.HasRow()) rows->push_back(merger.TakeRow());
  return Status();
}

}  // namespace tessera::integration
