// `tessera admin`: operator commands against a running node. `status` shows the cluster as the
// node sees it (tessera.v1.ClusterAdmin/GetClusterStatus) with the tablets each node holds;
// `tablets` asks every registered node for its tablets (tessera.v1.TabletAdmin/GetTablets) and
// prints them merged (admin_tablets_format.h); `ring` shows each node's token and share of the
// ring (TabletAdmin/GetRing with the status, admin_ring_format.h), like Cassandra's `nodetool
// ring`; `removenode HOST:PORT` forgets a dead node on every node (ClusterAdmin/RemoveNode),
// like Cassandra's `nodetool removenode`. `info`, `compactionstats`, `netstats`, `tablestats`,
// `flush`, `compact` and the throughput pairs act on the node at --addr alone, as nodetool's do
// (admin_node.h).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "fmt/format.h"
#include "grpcpp/grpcpp.h"
#include "tessera/catalog/table_definition.h"
#include "tessera/cli/admin_access.h"
#include "tessera/cli/admin_node.h"
#include "tessera/cli/admin_repair.h"
#include "tessera/cli/admin_ring_format.h"
#include "tessera/cli/admin_snapshot.h"
#include "tessera/cli/admin_tablets_format.h"
#include "tessera/cli/cli_flags.h"
#include "tessera/cli/commands.h"
#include "tessera/cli/proto_json.h"
#include "tessera/v1/cluster.grpc.pb.h"
#include "tessera/v1/tablet_admin.grpc.pb.h"

namespace tessera::cli {

namespace {

namespace v1 = ::tessera::v1;

std::chrono::system_clock::time_point Deadline(int64_t timeout_ms) {
  return std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms);
}

grpc::Status AskStatus(const std::string& addr, int64_t timeout_ms, v1::ClusterStatus* status) {
  auto stub = v1::ClusterAdmin::NewStub(NewChannel(addr));
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline(timeout_ms));
  return stub->GetClusterStatus(&ctx, v1::GetClusterStatusRequest(), status);
}

// Whether a node of a status may hold tablets: registered, or the answering node itself.
bool MayHoldTablets(const v1::NodeStatus& n) { return n.registered() || n.is_self(); }

// Which nodes of a status to ask for their tablets.
enum class Ask {
  kRegistered,  // every node that may hold tablets: registered, or the answering node
  kUp,          // of those, only the ones seen up (a status is not held up by a dead node)
};

// The nodes `ask` names, asked for their tablets at once; each answer or why there is none, in
// the status's order.
std::vector<NodeAnswer> AskTablets(const v1::ClusterStatus& status, Ask ask,
                                   const std::string& table, int64_t timeout_ms) {
  std::vector<NodeAnswer> answers;
  for (const v1::NodeStatus& n : status.nodes()) {
    if (!MayHoldTablets(n)) continue;
    if (ask == Ask::kUp && n.liveness() != "up") continue;
    answers.push_back(NodeAnswer{n.endpoint(), {}, ""});
  }
  std::vector<std::thread> askers;
  for (NodeAnswer& answer : answers) {
    askers.emplace_back([&answer, &table, timeout_ms] {
      auto stub = v1::TabletAdmin::NewStub(NewChannel(answer.endpoint));
      grpc::ClientContext ctx;
      ctx.set_deadline(Deadline(timeout_ms));
      v1::GetTabletsRequest request;
      request.set_table_name(table);
      v1::NodeTablets tablets;
      grpc::Status rpc = stub->GetTablets(&ctx, request, &tablets);
      if (rpc.ok()) {
        answer.tablets = std::move(tablets);
      } else {
        answer.error = rpc.error_message();
      }
    });
  }
  for (std::thread& t : askers) t.join();
  return answers;
}

std::optional<TabletCounts> CountsOf(const std::vector<NodeAnswer>& answers,
                                     const std::string& endpoint) {
  for (const NodeAnswer& a : answers) {
    if (a.endpoint == endpoint && a.tablets.has_value()) return CountTablets(*a.tablets);
  }
  return std::nullopt;
}

void PrintStatus(const v1::ClusterStatus& s, const std::vector<NodeAnswer>& tablets) {
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
  std::vector<std::string> roles;
  size_t role_width = 4;
  for (const auto& n : s.nodes()) {
    std::string role;
    if (n.is_master()) role += "master ";
    if (n.is_self()) role += "(this node) ";
    if (!n.registered()) role += "unregistered";
    while (!role.empty() && role.back() == ' ') role.pop_back();
    role_width = std::max(role_width, role.size());
    roles.push_back(std::move(role));
  }
  fmt::print("{:<{}}  {:<6} {:<8} {:<8} {:>6} {:>10} {:>11} {:>9}  {:<8} {:<{}} {:>7} {:>9}\n",
             "ENDPOINT", width, "DC", "RACK", "STATE", "PHI", "LOAD", "GENERATION", "HEARTBEAT",
             "STATUS", "ROLE", role_width, "TABLETS", "PRIMARIES");
  for (int i = 0; i < s.nodes_size(); ++i) {
    const v1::NodeStatus& n = s.nodes(i);
    const std::optional<TabletCounts> counts = CountsOf(tablets, n.endpoint());
    fmt::print("{:<{}}  {:<6} {:<8} {:<8} {:>6.2f} {:>10} {:>11} {:>9}  {:<8} {:<{}} {:>7} {:>9}\n",
               n.endpoint(), width, n.dc(), n.rack(), n.liveness(), n.phi(),
               HumanBytes(n.load_bytes()), n.generation(), n.heartbeat(), n.status(), roles[i],
               role_width, counts ? std::to_string(counts->tablets) : "?",
               counts ? std::to_string(counts->primaries) : "?");
  }
}

int RunStatus(const std::string& addr, int64_t timeout_ms, bool json) {
  v1::ClusterStatus status;
  if (grpc::Status rpc = AskStatus(addr, timeout_ms, &status); !rpc.ok()) {
    std::fprintf(stderr, "tessera admin status: %s: %s\n", addr.c_str(),
                 rpc.error_message().c_str());
    return 1;
  }
  // A node that cannot say, or is not up, shows "?" (null in JSON): the status is still the
  // status.
  const std::vector<NodeAnswer> tablets = AskTablets(status, Ask::kUp, "", timeout_ms);
  if (json) {
    nlohmann::json j = ProtoToJson(status);
    for (nlohmann::json& node : j["nodes"]) {
      const std::optional<TabletCounts> counts =
          CountsOf(tablets, node["endpoint"].get<std::string>());
      node["tablets"] = counts ? nlohmann::json(counts->tablets) : nullptr;
      node["primaries"] = counts ? nlohmann::json(counts->primaries) : nullptr;
    }
    std::printf("%s\n", j.dump().c_str());
  } else {
    PrintStatus(status, tablets);
  }
  return 0;
}

// Exit status: 0, 1 (the node at `addr` cannot be reached), 3 (some node could not be asked;
// what the others said is printed).
int RunTablets(const std::string& addr, int64_t timeout_ms, bool json, const std::string& table) {
  v1::ClusterStatus status;
  if (grpc::Status rpc = AskStatus(addr, timeout_ms, &status); !rpc.ok()) {
    std::fprintf(stderr, "tessera admin tablets: %s: %s\n", addr.c_str(),
                 rpc.error_message().c_str());
    return 1;
  }
  const TabletsView view = MergeTablets(AskTablets(status, Ask::kRegistered, table, timeout_ms));
  if (json) {
    std::printf("%s\n", TabletsToJson(view).dump().c_str());
  } else {
    std::fputs(FormatTablets(view).c_str(), stdout);
  }
  return view.complete() ? 0 : 3;
}

// Exit status: 0, 1 (the node at `addr` cannot be reached, or has no lock-service session).
int RunRing(const std::string& addr, int64_t timeout_ms, bool json) {
  v1::ClusterStatus status;
  if (grpc::Status rpc = AskStatus(addr, timeout_ms, &status); !rpc.ok()) {
    std::fprintf(stderr, "tessera admin ring: %s: %s\n", addr.c_str(), rpc.error_message().c_str());
    return 1;
  }
  auto stub = v1::TabletAdmin::NewStub(NewChannel(addr));
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline(timeout_ms));
  v1::Ring ring;
  if (grpc::Status rpc = stub->GetRing(&ctx, v1::GetRingRequest(), &ring); !rpc.ok()) {
    std::fprintf(stderr, "tessera admin ring: %s: %s\n", addr.c_str(), rpc.error_message().c_str());
    return 1;
  }
  const std::vector<RingLine> lines = MergeRing(status, ring);
  if (json) {
    std::printf("%s\n", RingToJson(status.cluster_name(), lines).dump().c_str());
  } else {
    std::fputs(FormatRing(status.cluster_name(), lines).c_str(), stdout);
  }
  return 0;
}

int RunRemoveNode(const std::string& addr, int64_t timeout_ms, const std::string& endpoint,
                  bool force) {
  auto stub = v1::ClusterAdmin::NewStub(NewChannel(addr));
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline(timeout_ms));
  v1::RemoveNodeRequest request;
  request.set_endpoint(endpoint);
  request.set_force(force);
  v1::RemoveNodeResponse response;
  grpc::Status rpc = stub->RemoveNode(&ctx, request, &response);
  if (!rpc.ok()) {
    std::fprintf(stderr, "tessera admin removenode: %s: %s\n", addr.c_str(),
                 rpc.error_message().c_str());
    return 1;
  }
  std::printf("%s\n", response.message().c_str());
  return 0;
}

// The nodes a snapshot command acts on: every node that may hold tablets (as `tablets` asks),
// from the status of the node at `addr`; empty after saying why on stderr.
std::vector<std::string> SnapshotNodes(const char* command, const std::string& addr,
                                       int64_t timeout_ms) {
  v1::ClusterStatus status;
  if (grpc::Status rpc = AskStatus(addr, timeout_ms, &status); !rpc.ok()) {
    std::fprintf(stderr, "tessera admin %s: %s: %s\n", command, addr.c_str(),
                 rpc.error_message().c_str());
    return {};
  }
  std::vector<std::string> nodes;
  for (const v1::NodeStatus& n : status.nodes()) {
    if (MayHoldTablets(n)) nodes.push_back(n.endpoint());
  }
  return nodes;
}

std::string EnvOr(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : std::move(fallback);
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
  const auto add_addr = [&](CLI::App* command, const std::string& which) {
    command
        ->add_option("--addr", addr,
                     "HOST:PORT of " + which +
                         " (default: $BIGTABLE_EMULATOR_HOST or "
                         "127.0.0.1:8086)")
        ->check(HostPortCheck())
        ->capture_default_str();
    command->add_option("--timeout-ms", timeout_ms, "give up after this long (per node)")
        ->check(CLI::Range(int64_t{1}, int64_t{600000}))
        ->capture_default_str();
    AddConnectionOptions(command);
  };
  CLI::App* status = app.add_subcommand(
      "status",
      "every node of the cluster as the node at --addr sees it: address, dc/rack, "
      "up/suspect/down with phi, load, generation, which one is master, and how many tablets "
      "each holds and leads");
  add_addr(status, "any node");
  status->add_flag("--json", json, "print the status as one JSON object");
  std::string table;
  std::string project = EnvOr("TESSERA_PROJECT", "p");
  std::string instance = EnvOr("TESSERA_INSTANCE", "i");
  CLI::App* tablets = app.add_subcommand(
      "tablets",
      "every tablet of the cluster, asked of every registered node: its rows, id, epoch, "
      "primary, replicas with their applied sequence and lag behind the primary, rebuild "
      "marks and hints pending.\nExit status: 0; 1 when the node at --addr cannot be reached; "
      "2 on bad flags; 3 when some node could not be asked (what the others said is printed)");
  add_addr(tablets, "any node");
  tablets->add_flag("--json", json, "print the merged view as one JSON object");
  const auto add_table = [&](CLI::App* command) {
    command->add_option("--table", table,
                        "only this table: its id in --project/--instance, or a full name "
                        "projects/P/instances/I/tables/T");
    command->add_option("--project", project,
                        "project of --table (default: $TESSERA_PROJECT, else p)");
    command->add_option("--instance", instance,
                        "instance of --table (default: $TESSERA_INSTANCE, else i)");
  };
  add_table(tablets);
  CLI::App* info = app.add_subcommand(
      "info",
      "the node at --addr: uptime, load (SSTable bytes), memtables, resident memory, tablets, "
      "block cache hits, commit-log segments, flushes and compactions pending (nodetool info)");
  add_addr(info, "the node");
  info->add_flag("--json", json, "print the answer as one JSON object");
  CLI::App* compactionstats = app.add_subcommand(
      "compactionstats",
      "the node's flushes and compactions: pending and running, done since it started, bytes "
      "written, write stalls (nodetool compactionstats)");
  add_addr(compactionstats, "the node");
  compactionstats->add_flag("--json", json, "print the answer as one JSON object");
  CLI::App* netstats = app.add_subcommand(
      "netstats",
      "the node's streams (replica rebuild copies): under way out and in with the bytes sent "
      "so far, bytes and copies since it started, the stream rate (nodetool netstats)");
  add_addr(netstats, "the node");
  netstats->add_flag("--json", json, "print the answer as one JSON object");
  CLI::App* tablestats = app.add_subcommand(
      "tablestats",
      "per table, the node's tablets: SSTables, space used, memtable size, local reads, scans "
      "and writes with their mean latency (nodetool tablestats)");
  add_addr(tablestats, "the node");
  tablestats->add_flag("--json", json, "print the answer as one JSON object");
  add_table(tablestats);
  CLI::App* flush = app.add_subcommand(
      "flush",
      "write the node's memtables (of --table, else of every table) to SSTables and wait "
      "(nodetool flush).\nExit status: 0; 1 when the node cannot be reached or does not know "
      "--table; 2 on bad flags");
  add_addr(flush, "the node");
  flush->add_flag("--json", json, "print the answer as one JSON object");
  add_table(flush);
  CLI::App* compact = app.add_subcommand(
      "compact",
      "major compaction of the node's tablets (of --table, else of every table): each "
      "tablet's files merged into one sorted run, GC rules applied, tombstones purged; waits "
      "(nodetool compact; --timeout-ms defaults to 10 minutes here).\nExit status: as flush");
  add_addr(compact, "the node");
  compact->add_flag("--json", json, "print the answer as one JSON object");
  add_table(compact);
  CLI::App* repair = app.add_subcommand(
      "repair",
      "compare every replica of each tablet (of --table, else of every table) with its "
      "primary's copy at one sequence, while writes go on; a replica that differs is rebuilt "
      "from a copy at the stream throughput. Each node checks the tablets it is the primary "
      "of (nodetool repair -pr on every node; --timeout-ms defaults to 1 hour).\nExit status: "
      "0 when every replica is consistent or being rebuilt; 1 when a node could not be asked "
      "or a replica was behind, busy or failed; 2 on bad flags");
  add_addr(repair, "any node");
  repair->add_flag("--json", json, "print the answers as JSON");
  add_table(repair);
  CLI::App* decommission = app.add_subcommand(
      "decommission",
      "the node at --addr leaves the cluster with its data handed on: the master moves each "
      "tablet replica it holds to another node (rebuilt from a copy while it stays a full "
      "replica), then it leaves the ring and stops serving (nodetool decommission; "
      "--timeout-ms defaults to 1 hour; run again to keep waiting).\nExit status: 0 once no "
      "tablet names it; 1 when it refuses (too few other nodes: nothing moves), cannot be "
      "reached or the deadline comes first; 2 on bad flags");
  add_addr(decommission, "the node that leaves");
  decommission->add_flag("--json", json, "print the answer as one JSON object");
  CLI::App* drain = app.add_subcommand(
      "drain",
      "the node at --addr stops serving for good — peers mark it down, its tablets get other "
      "primaries, data calls get UNAVAILABLE — and flushes its memtables, so that it can be "
      "stopped with nothing to replay (nodetool drain; --timeout-ms defaults to 10 minutes)."
      "\nExit status: 0; 1 when the node "
      "cannot be reached or the flush failed; 2 on bad flags");
  add_addr(drain, "the node");
  drain->add_flag("--json", json, "print the answer as one JSON object");
  CLI::App* ring = app.add_subcommand(
      "ring",
      "every node's token on the ring, with its dc, rack, state and the share of the row-key "
      "space it owns (ring tables place a tablet's primary on the owner of its start row)");
  add_addr(ring, "any node");
  ring->add_flag("--json", json, "print the ring as one JSON object");
  std::string endpoint;
  bool force = false;
  CLI::App* removenode = app.add_subcommand(
      "removenode",
      "forget a dead node on every node: it no longer shows in `status` (refused while the "
      "node is up; a restart of it joins again)");
  removenode->add_option("endpoint", endpoint, "HOST:PORT of the dead node, as `status` lists it")
      ->check(HostPortCheck())
      ->required();
  add_addr(removenode, "any live node");
  removenode->add_flag("--force", force,
                       "also when the node, though down in gossip, is still registered (a hung "
                       "process keeps its lock-service session): end that session");
  std::string tag;
  std::string target;
  const auto add_snapshot_flags = [&](CLI::App* command, bool tag_required) {
    add_addr(command, "any node");
    command->add_flag("--json", json, "print the answer as JSON");
    CLI::Option* t = command->add_option("--tag", tag, "the snapshot's name");
    if (tag_required) t->required();
    add_table(command);
  };
  CLI::App* snapshot = app.add_subcommand(
      "snapshot",
      "snapshot --table under --tag on every node holding it: each replica copied at one "
      "sequence into <data-dir>/snapshots/<tag>/ (nodetool snapshot; --timeout-ms defaults to "
      "10 minutes).\nExit status: 0; 1 when a node refused or could not be reached; 2 on bad "
      "flags");
  add_snapshot_flags(snapshot, /*tag_required=*/true);
  snapshot->get_option("--table")->required();
  CLI::App* listsnapshots =
      app.add_subcommand("listsnapshots",
                         "every node's snapshots (of --table, of --tag): tablets, sequences, size "
                         "(nodetool listsnapshots)");
  add_snapshot_flags(listsnapshots, /*tag_required=*/false);
  CLI::App* clearsnapshot = app.add_subcommand(
      "clearsnapshot",
      "delete snapshot files on every node: of --tag (only --table's with --table), or every "
      "snapshot without --tag (nodetool clearsnapshot)");
  add_snapshot_flags(clearsnapshot, /*tag_required=*/false);
  CLI::App* restore = app.add_subcommand(
      "restore",
      "write snapshot --tag of --table back: into the table itself (emptied first), or into a "
      "new table --target made with the snapshot's schema and tablets; each tablet from the "
      "node whose copy has the highest sequence, through the write path (--timeout-ms "
      "defaults to 10 minutes per node).\nExit status: 0; 1 when the snapshot is missing or "
      "incomplete, a node refused or could not be reached, or --target exists; 2 on bad flags");
  add_snapshot_flags(restore, /*tag_required=*/true);
  restore->get_option("--table")->required();
  restore->add_option("--target", target,
                      "restore into this new table (an id in --project/--instance, or a full "
                      "name) instead of the snapshot's own");
  // nodetool's set/get…throughput pairs: the compaction write rate and the rebuild stream rate.
  int64_t throughput = 0;
  struct ThroughputCommands {
    ThroughputKind kind;
    CLI::App* set;
    CLI::App* get;
  };
  auto add_throughput = [&](ThroughputKind kind, const std::string& what,
                            const std::string& rate_of, const std::string& flag) {
    CLI::App* set = app.add_subcommand(
        "set" + what + "throughput",
        "the rate at which " + rate_of + ", in MiB/s (0: unlimited), at once and until it " +
            "restarts (nodetool set" + what + "throughput; " + flag + " at start)");
    set->add_option("mb_per_second", throughput, "MiB/s, 0 = unlimited")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
        ->required();
    CLI::App* get = app.add_subcommand(
        "get" + what + "throughput",
        "the rate at which " + rate_of + " (nodetool get" + what + "throughput)");
    for (CLI::App* c : {set, get}) {
      add_addr(c, "the node");
      c->add_flag("--json", json, "print the answer as one JSON object");
    }
    return ThroughputCommands{kind, set, get};
  };
  const ThroughputCommands throughputs[] = {
      add_throughput(ThroughputKind::kCompaction, "compaction", "the node's compactions write",
                     "--compaction-mb-per-s"),
      add_throughput(ThroughputKind::kStream, "stream",
                     "rebuild copies leave the node, every copy together", "--stream-mb-per-s")};
  CLI::App* principals = app.add_subcommand(
      "principals",
      "with --auth: every principal, its tokens (by hash prefix; file: from --auth-tokens) and "
      "its grants");
  add_addr(principals, "any node");
  principals->add_flag("--json", json, "print the answer as one JSON object");
  std::string principal, permissions, resource, family;
  const auto add_grant_args = [&](CLI::App* command) {
    add_addr(command, "any node");
    command->add_flag("--json", json, "print the answer as one JSON object");
    command->add_option("principal", principal, "who")->required();
    command->add_option("permissions", permissions, "read, write, admin, or a set: read,write")
        ->required();
    command
        ->add_option("resource", resource,
                     "* (everything), projects/P/instances/I, a table's full name, or a table "
                     "id in --project/--instance")
        ->required();
    command->add_option("--family", family, "only this column family of the table");
    command->add_option("--project", project,
                        "project of a table id (default: $TESSERA_PROJECT, else p)");
    command->add_option("--instance", instance,
                        "instance of a table id (default: $TESSERA_INSTANCE, else i)");
  };
  CLI::App* grant = app.add_subcommand(
      "grant",
      "with --auth: give PRINCIPAL PERMISSIONS on RESOURCE and everything in it (a table's "
      "families, an instance's tables); applies on every node");
  add_grant_args(grant);
  CLI::App* revoke =
      app.add_subcommand("revoke", "with --auth: take PERMISSIONS on RESOURCE from PRINCIPAL");
  add_grant_args(revoke);
  CLI::App* token = app.add_subcommand("token", "with --auth: a principal's bearer tokens");
  token->require_subcommand(1);
  CLI::App* token_add =
      token->add_subcommand("add", "a new random token for PRINCIPAL, printed this once");
  CLI::App* token_remove =
      token->add_subcommand("remove", "delete every token of PRINCIPAL kept in the lock service");
  for (CLI::App* t : {token_add, token_remove}) {
    add_addr(t, "any node");
    t->add_flag("--json", json, "print the answer as one JSON object");
    t->add_option("principal", principal, "who")->required();
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ExitForParseError(app, e);
  }
  CLI::App* command = app.get_subcommands().front();
  if (command == token) command = command->get_subcommands().front();
  if (Status s = LoadConnectionOptions(); !s.ok()) {
    std::fprintf(stderr, "tessera admin: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  if (command->get_option("--addr")->count() == 0 && from_env) {
    if (Status s = CheckHostPort("$BIGTABLE_EMULATOR_HOST", addr); !s.ok()) {
      std::fprintf(stderr, "tessera admin: %s\n", std::string(s.message()).c_str());
      return 2;
    }
  }
  if (status->parsed()) return RunStatus(addr, timeout_ms, json);
  if (principals->parsed()) return RunPrincipals(addr, timeout_ms, json);
  if (grant->parsed() || revoke->parsed()) {
    return RunGrant(addr, timeout_ms, json, grant->parsed(), principal, permissions,
                    GrantResource(resource, family, project, instance));
  }
  if (token_add->parsed() || token_remove->parsed()) {
    return RunToken(addr, timeout_ms, json, token_add->parsed(), principal);
  }
  // A table flag as a full name ("" for none given); false after saying why it is malformed.
  const auto full_name = [&](const char* flag, const std::string& value, std::string* out) {
    if (value.empty()) return true;
    *out = value.find('/') != std::string::npos
               ? value
               : StrCat("projects/", project, "/instances/", instance, "/tables/", value);
    if (StatusOr<catalog::TableName> name = catalog::TableName::Parse(*out); !name.ok()) {
      std::fprintf(stderr, "tessera admin %s: %s: %s\n", command->get_name().c_str(), flag,
                   std::string(name.status().message()).c_str());
      return false;
    }
    return true;
  };
  std::string full, full_target;
  if (!full_name("--table", table, &full) || !full_name("--target", target, &full_target)) {
    return 2;
  }
  if (tablets->parsed()) return RunTablets(addr, timeout_ms, json, full);
  if (info->parsed()) return RunNodeInfo(addr, timeout_ms, json, NodeInfoView::kInfo);
  if (compactionstats->parsed()) {
    return RunNodeInfo(addr, timeout_ms, json, NodeInfoView::kCompactionStats);
  }
  if (netstats->parsed()) return RunNodeInfo(addr, timeout_ms, json, NodeInfoView::kNetStats);
  if (tablestats->parsed()) return RunTableStats(addr, timeout_ms, json, full);
  if (flush->parsed()) return RunFlushOrCompact(addr, timeout_ms, json, full, /*compact=*/false);
  if (compact->parsed()) {
    const int64_t wait_ms = compact->get_option("--timeout-ms")->count() > 0 ? timeout_ms : 600000;
    return RunFlushOrCompact(addr, wait_ms, json, full, /*compact=*/true);
  }
  if (snapshot->parsed() || listsnapshots->parsed() || clearsnapshot->parsed() ||
      restore->parsed()) {
    const std::string name = command->get_name();
    if (clearsnapshot->parsed() && tag.empty() && !full.empty()) {
      std::fprintf(stderr, "tessera admin clearsnapshot: --table needs --tag\n");
      return 2;
    }
    const bool long_wait = (snapshot->parsed() || restore->parsed()) &&
                           command->get_option("--timeout-ms")->count() == 0;
    const int64_t wait_ms = long_wait ? 600000 : timeout_ms;
    const std::vector<std::string> nodes = SnapshotNodes(name.c_str(), addr, timeout_ms);
    if (nodes.empty()) return 1;
    if (snapshot->parsed()) return RunSnapshot(nodes, wait_ms, json, full, tag);
    if (listsnapshots->parsed()) return RunListSnapshots(nodes, wait_ms, json, full, tag);
    if (clearsnapshot->parsed()) return RunClearSnapshot(nodes, wait_ms, json, full, tag);
    return RunRestore(addr, nodes, wait_ms, json, full, tag, full_target);
  }
  if (repair->parsed()) {
    const int64_t wait_ms =
        repair->get_option("--timeout-ms")->count() > 0 ? timeout_ms : 3'600'000;
    const std::vector<std::string> nodes = SnapshotNodes("repair", addr, timeout_ms);
    if (nodes.empty()) return 1;
    return RunRepair(nodes, wait_ms, json, full);
  }
  if (decommission->parsed()) {
    const int64_t wait_ms =
        decommission->get_option("--timeout-ms")->count() > 0 ? timeout_ms : 3'600'000;
    return RunDecommission(addr, wait_ms, json);
  }
  if (drain->parsed()) {
    const int64_t wait_ms = drain->get_option("--timeout-ms")->count() > 0 ? timeout_ms : 600000;
    return RunDrain(addr, wait_ms, json);
  }
  for (const ThroughputCommands& t : throughputs) {
    if (t.set->parsed()) return RunThroughput(t.kind, addr, timeout_ms, json, throughput);
    if (t.get->parsed()) return RunThroughput(t.kind, addr, timeout_ms, json, -1);
  }
  if (ring->parsed()) return RunRing(addr, timeout_ms, json);
  if (removenode->parsed()) return RunRemoveNode(addr, timeout_ms, endpoint, force);
  return 2;
}

}  // namespace tessera::cli
