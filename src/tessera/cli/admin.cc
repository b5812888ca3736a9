// `tessera admin`: operator commands against a running node. `status` shows the cluster as the
// node sees it (tessera.v1.ClusterAdmin/GetClusterStatus); `removenode HOST:PORT` forgets a dead
// node on every node (ClusterAdmin/RemoveNode), like Cassandra's `nodetool removenode`.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "CLI/CLI.hpp"
#include "fmt/format.h"
#include "grpcpp/grpcpp.h"
#include "tessera/cli/cli_flags.h"
#include "tessera/cli/commands.h"
#include "tessera/cli/proto_json.h"
#include "tessera/v1/cluster.grpc.pb.h"

namespace tessera::cli {

namespace {

std::string HumanBytes(int64_t bytes) {
  if (bytes < 0) return "?";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

void PrintStatus(const ::tessera::v1::ClusterStatus& s) {
  std::string master =
      s.master().empty() ? "none" : fmt::format("{} (term {})", s.master(), s.master_term());
  fmt::print("cluster '{}': {} node{}, master {}, {} lock service; answered by {}{}\n",
             s.cluster_name(), s.nodes_size(), s.nodes_size() == 1 ? "" : "s", master,
             s.lock_service(), s.self(),
             s.serving() ? "" : " (NOT SERVING: no lock-service session)");
  if (!s.lock_service_error().empty()) {
    fmt::print("lock service unreachable: {} (master and directory from gossip)\n",
               s.lock_service_error());
  }
  if (s.refused_messages() > 0) {
    fmt::print("refused {} gossip messages from another cluster\n", s.refused_messages());
  }
  size_t width = 8;
  for (const auto& n : s.nodes()) width = std::max(width, n.endpoint().size());
  fmt::print("{:<{}}  {:<6} {:<8} {:<8} {:>6} {:>10} {:>11} {:>9}  {:<8} {}\n", "ENDPOINT",
             width, "DC", "RACK", "STATE", "PHI", "LOAD", "GENERATION", "HEARTBEAT", "STATUS",
             "ROLE");
  for (const auto& n : s.nodes()) {
    std::string role;
    if (n.is_master()) role += "master ";
    if (n.is_self()) role += "(this node) ";
    if (!n.registered()) role += "unregistered";
    while (!role.empty() && role.back() == ' ') role.pop_back();
    fmt::print("{:<{}}  {:<6} {:<8} {:<8} {:>6.2f} {:>10} {:>11} {:>9}  {:<8} {}\n",
               n.endpoint(), width, n.dc(), n.rack(), n.liveness(), n.phi(),
               HumanBytes(n.load_bytes()), n.generation(), n.heartbeat(), n.status(), role);
  }
}

int RunStatus(const std::string& addr, int64_t timeout_ms, bool json) {
  auto channel = grpc::CreateChannel(addr, grpc::InsecureChannelCredentials());
  auto stub = ::tessera::v1::ClusterAdmin::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  ::tessera::v1::GetClusterStatusRequest request;
  ::tessera::v1::ClusterStatus status;
  grpc::Status rpc = stub->GetClusterStatus(&ctx, request, &status);
  if (!rpc.ok()) {
    std::fprintf(stderr, "tessera admin status: %s: %s\n", addr.c_str(),
                 rpc.error_message().c_str());
    return 1;
  }
  if (json) {
    std::printf("%s\n", ProtoToJson(status).dump().c_str());
  } else {
    PrintStatus(status);
  }
  return 0;
}

int RunRemoveNode(const std::string& addr, int64_t timeout_ms, const std::string& endpoint,
                  bool force) {
  auto channel = grpc::CreateChannel(addr, grpc::InsecureChannelCredentials());
  auto stub = ::tessera::v1::ClusterAdmin::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  ::tessera::v1::RemoveNodeRequest request;
  request.set_endpoint(endpoint);
  request.set_force(force);
  ::tessera::v1::RemoveNodeResponse response;
  grpc::Status rpc = stub->RemoveNode(&ctx, request, &response);
  if (!rpc.ok()) {
    std::fprintf(stderr, "tessera admin removenode: %s: %s\n", addr.c_str(),
                 rpc.error_message().c_str());
    return 1;
  }
  std::printf("%s\n", response.message().c_str());
  return 0;
}

}  // namespace

int RunAdmin(int argc, char** argv) {
  CLI::App app{"tessera admin: operator commands against a running node", "tessera admin"};
  SetUpCommandLine(&app);
  app.require_subcommand(1);
  const char* env = std::getenv("BIGTABLE_EMULATOR_HOST");
  const bool from_env = env != nullptr && *env != '\0';
  std::string addr = from_env ? env : "127.0.0.1:8086";
  int64_t timeout_ms = 10000;
  bool json = false;
  CLI::App* status = app.add_subcommand(
      "status",
      "every node of the cluster as the node at --addr sees it: address, dc/rack, "
      "up/suspect/down with phi, load, generation, and which one is master");
  status->add_option("--addr", addr, "HOST:PORT of any node (default: $BIGTABLE_EMULATOR_HOST "
                                     "or 127.0.0.1:8086)")
      ->check(HostPortCheck())
      ->capture_default_str();
  status->add_option("--timeout-ms", timeout_ms, "give up after this long")
      ->check(CLI::Range(int64_t{1}, int64_t{600000}))
      ->capture_default_str();
  status->add_flag("--json", json, "print the status as one JSON object");
  std::string endpoint;
  bool force = false;
  CLI::App* removenode = app.add_subcommand(
      "removenode",
      "forget a dead node on every node: it no longer shows in `status` (refused while the "
      "node is up; a restart of it joins again)");
  removenode->add_option("endpoint", endpoint, "HOST:PORT of the dead node, as `status` lists it")
      ->check(HostPortCheck())
      ->required();
  removenode->add_option("--addr", addr, "HOST:PORT of any live node (default: "
                                         "$BIGTABLE_EMULATOR_HOST or 127.0.0.1:8086)")
      ->check(HostPortCheck())
      ->capture_default_str();
  removenode->add_option("--timeout-ms", timeout_ms, "give up after this long")
      ->check(CLI::Range(int64_t{1}, int64_t{600000}))
      ->capture_default_str();
  removenode->add_flag("--force", force,
                       "also when the node, though down in gossip, is still registered (a hung "
                       "process keeps its lock-service session): end that session");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ExitForParseError(app, e);
  }
  CLI::App* command = status->parsed() ? status : removenode;
  if (command->get_option("--addr")->count() == 0 && from_env) {
    if (Status s = CheckHostPort("$BIGTABLE_EMULATOR_HOST", addr); !s.ok()) {
      std::fprintf(stderr, "tessera admin: %s\n", std::string(s.message()).c_str());
      return 2;
    }
  }
  if (status->parsed()) return RunStatus(addr, timeout_ms, json);
  if (removenode->parsed()) return RunRemoveNode(addr, timeout_ms, endpoint, force);
  return 2;
}

}  // namespace tessera::cli
