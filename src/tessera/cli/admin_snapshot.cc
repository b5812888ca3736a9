#include "tessera/cli/admin_snapshot.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "fmt/format.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "tessera/cli/admin_fanout.h"
#include "tessera/cli/admin_node.h"
#include "tessera/cli/admin_tablets_format.h"
#include "tessera/cli/cli_flags.h"
#include "tessera/cli/proto_json.h"
#include "tessera/v1/node_admin.grpc.pb.h"

namespace tessera::cli {

namespace {

namespace v1 = ::tessera::v1;
namespace btadmin = ::google::bigtable::admin::v2;

uint64_t FileBytes(const google::protobuf::RepeatedPtrField<v1::SnapshotTablet>& tablets) {
  uint64_t bytes = 0;
  for (const v1::SnapshotTablet& t : tablets) bytes += t.file_bytes();
  return bytes;
}

// A request of a snapshot command: its table and tag ("" = any).
template <typename Request>
Request ForTableAndTag(const std::string& table, const std::string& tag) {
  Request request;
  request.set_table_name(table);
  request.set_tag(tag);
  return request;
}

std::unique_ptr<btadmin::BigtableTableAdmin::Stub> TableAdmin(const std::string& addr) {
  return btadmin::BigtableTableAdmin::NewStub(NewChannel(addr));
}

void SetDeadline(grpc::ClientContext* ctx, int64_t timeout_ms) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
}

// One tablet of the snapshot as the restore takes it: from the node with the highest sequence.
struct Chosen {
  std::string node;
  v1::SnapshotTablet tablet;
};

}  // namespace

int RunSnapshot(const std::vector<std::string>& nodes, int64_t timeout_ms, bool json,
                const std::string& table, const std::string& tag) {
  auto answers = AskAll("snapshot", nodes, timeout_ms, &v1::NodeAdmin::Stub::TakeSnapshot,
                        ForTableAndTag<v1::TakeSnapshotRequest>(table, tag));
  return ForEachAnswer<v1::TakeSnapshotResponse>(
      nodes, answers, json,
      [&](const std::string& node, const v1::TakeSnapshotResponse& response, nlohmann::json* out) {
        if (json) {
          nlohmann::json one = ProtoToJson(response);
          one["endpoint"] = node;
          out->push_back(std::move(one));
          return;
        }
        std::printf("%s: snapshot \"%s\" of %s: %d tablets, %s\n", node.c_str(), tag.c_str(),
                    table.c_str(), response.tablets_size(),
                    HumanBytes(static_cast<int64_t>(FileBytes(response.tablets()))).c_str());
      });
}

int RunListSnapshots(const std::vector<std::string>& nodes, int64_t timeout_ms, bool json,
                     const std::string& table, const std::string& tag) {
  auto answers = AskAll("listsnapshots", nodes, timeout_ms, &v1::NodeAdmin::Stub::ListSnapshots,
                        ForTableAndTag<v1::ListSnapshotsRequest>(table, tag));
  std::string text = fmt::format("{:<24} {:<44} {:<22} {:>7} {:>12} {:>10}\n", "Snapshot name",
                                 "Table", "Node", "Tablets", "Sequences", "Size");
  bool any = false;
  const int status = ForEachAnswer<v1::ListSnapshotsResponse>(
      nodes, answers, json,
      [&](const std::string& node, const v1::ListSnapshotsResponse& response, nlohmann::json* out) {
        for (const v1::SnapshotInfo& s : response.snapshots()) {
          any = true;
          uint64_t sequences = 0;
          for (const v1::SnapshotTablet& t : s.tablets()) sequences += t.sequence();
          text += fmt::format("{:<24} {:<44} {:<22} {:>7} {:>12} {:>10}\n", s.tag(), s.table_name(),
                              node, s.tablets_size(), sequences,
                              HumanBytes(static_cast<int64_t>(FileBytes(s.tablets()))));
          nlohmann::json one = ProtoToJson(s);
          one.erase("schema");
          one["endpoint"] = node;
          out->push_back(std::move(one));
        }
      });
  if (!json) std::fputs(any ? text.c_str() : "There are no snapshots\n", stdout);
  return status;
}

int RunClearSnapshot(const std::vector<std::string>& nodes, int64_t timeout_ms, bool json,
                     const std::string& table, const std::string& tag) {
  auto answers = AskAll("clearsnapshot", nodes, timeout_ms, &v1::NodeAdmin::Stub::ClearSnapshot,
                        ForTableAndTag<v1::ClearSnapshotRequest>(table, tag));
  return ForEachAnswer<v1::ClearSnapshotResponse>(
      nodes, answers, json,
      [&](const std::string& node, const v1::ClearSnapshotResponse& response, nlohmann::json* out) {
        out->push_back({{"endpoint", node}, {"files_removed", response.files_removed()}});
        if (!json) {
          std::printf("%s: removed %llu snapshot files\n", node.c_str(),
                      static_cast<unsigned long long>(response.files_removed()));
        }
      });
}

int RunRestore(const std::string& addr, const std::vector<std::string>& nodes, int64_t timeout_ms,
               bool json, const std::string& table, const std::string& tag,
               const std::string& target_or_empty) {
  const std::string& target = target_or_empty.empty() ? table : target_or_empty;
  auto fail = [](const std::string& message) {
    std::fprintf(stderr, "tessera admin restore: %s\n", message.c_str());
    return 1;
  };
  // 1. Every node's files of the snapshot; per tablet, the copy with the highest sequence.
  auto answers = AskAll("restore", nodes, timeout_ms, &v1::NodeAdmin::Stub::ListSnapshots,
                        ForTableAndTag<v1::ListSnapshotsRequest>(table, tag));
  std::map<uint64_t, Chosen> chosen;
  const btadmin::Table* schema = nullptr;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!answers[i].first.ok()) {
      return fail(
          fmt::format("{} could not be asked for its files; restoring without them "
                      "could miss the newest copy of a tablet",
                      nodes[i]));
    }
    for (const v1::SnapshotInfo& s : answers[i].second.snapshots()) {
      schema = &s.schema();
      for (const v1::SnapshotTablet& t : s.tablets()) {
        auto [it, fresh] = chosen.try_emplace(t.tablet_id(), Chosen{nodes[i], t});
        if (!fresh && t.sequence() > it->second.tablet.sequence()) it->second = {nodes[i], t};
      }
    }
  }
  if (chosen.empty()) {
    return fail(fmt::format("no node has a snapshot \"{}\" of {}", tag, table));
  }
  // 2. The tablets must tile the row space.
  std::vector<const Chosen*> by_start;
  for (const auto& [id, c] : chosen) by_start.push_back(&c);
  std::sort(by_start.begin(), by_start.end(), [](const Chosen* a, const Chosen* b) {
    return a->tablet.start_row() < b->tablet.start_row();
  });
  std::string covered;  // rows before this are covered
  for (const Chosen* c : by_start) {
    if (c->tablet.start_row() != covered) {
      return fail(
          fmt::format("snapshot \"{}\" of {} is incomplete: no node has rows from "
                      "\"{}\" to \"{}\"",
                      tag, table, covered, c->tablet.start_row()));
    }
    covered = c->tablet.end_row();
    if (covered.empty()) break;
  }
  if (!by_start.back()->tablet.end_row().empty()) {
    return fail(
        fmt::format("snapshot \"{}\" of {} is incomplete: no node has the rows from "
                    "\"{}\" on",
                    tag, table, by_start.back()->tablet.end_row()));
  }
  // 3. The target: the snapshot's own table emptied, or a new table made like it.
  auto admin = TableAdmin(addr);
  {
    grpc::ClientContext ctx;
    SetDeadline(&ctx, timeout_ms);
    btadmin::GetTableRequest get;
    get.set_name(target);
    get.set_view(btadmin::Table::NAME_ONLY);
    btadmin::Table existing;
    grpc::Status got = admin->GetTable(&ctx, get, &existing);
    if (got.ok() && target != table) {
      return fail(
          fmt::format("table {} already exists: restore into a new table, or into "
                      "the snapshot's own table (which is emptied first)",
                      target));
    }
    if (!got.ok() && got.error_code() != grpc::StatusCode::NOT_FOUND) {
      return fail(fmt::format("{}: {}", addr, got.error_message()));
    }
    grpc::ClientContext ctx2;
    SetDeadline(&ctx2, timeout_ms);
    google::protobuf::Empty empty;
    grpc::Status made;
    if (got.ok()) {
      btadmin::DropRowRangeRequest drop;
      drop.set_name(target);
      drop.set_delete_all_data_from_table(true);
      made = admin->DropRowRange(&ctx2, drop, &empty);
    } else {
      btadmin::CreateTableRequest create;
      const size_t cut = target.rfind("/tables/");
      create.set_parent(target.substr(0, cut));
      create.set_table_id(target.substr(cut + 8));
      *create.mutable_table() = *schema;
      create.mutable_table()->clear_name();
      for (const Chosen* c : by_start) {
        if (!c->tablet.start_row().empty()) {
          create.add_initial_splits()->set_key(c->tablet.start_row());
        }
      }
      btadmin::Table created;
      made = admin->CreateTable(&ctx2, create, &created);
    }
    if (!made.ok()) return fail(fmt::format("{}: {}: {}", addr, target, made.error_message()));
  }
  // 4. Each chosen node writes its tablets. A node that has not yet seen a new target's
  //    schema says NOT_FOUND: asked again for up to 10 s.
  std::map<std::string, std::vector<uint64_t>> by_node;
  for (const auto& [id, c] : chosen) by_node[c.node].push_back(id);
  uint64_t rows = 0, cells = 0;
  nlohmann::json out = {{"table", table}, {"tag", tag}, {"target", target}};
  for (const auto& [node, ids] : by_node) {
    v1::RestoreSnapshotRequest request;
    request.set_tag(tag);
    request.set_table_name(table);
    request.set_target_table_name(target);
    for (uint64_t id : ids) request.add_tablet_ids(id);
    v1::RestoreSnapshotResponse response;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    grpc::Status rpc;
    while (true) {
      auto stub = v1::NodeAdmin::NewStub(NewChannel(node));
      grpc::ClientContext ctx;
      SetDeadline(&ctx, timeout_ms);
      response.Clear();
      rpc = stub->RestoreSnapshot(&ctx, request, &response);
      if (rpc.error_code() != grpc::StatusCode::NOT_FOUND ||
          std::chrono::steady_clock::now() > give_up) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    if (!rpc.ok()) return fail(fmt::format("{}: {}", node, rpc.error_message()));
    rows += response.rows();
    cells += response.cells();
    out["nodes"].push_back({{"endpoint", node},
                            {"tablets", ids.size()},
                            {"rows", response.rows()},
                            {"cells", response.cells()}});
  }
  out["rows"] = rows;
  out["cells"] = cells;
  if (json) {
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf(
        "restored snapshot \"%s\" of %s into %s: %zu tablets from %zu nodes, %llu rows, "
        "%llu cells\n",
        tag.c_str(), table.c_str(), target.c_str(), chosen.size(), by_node.size(),
        static_cast<unsigned long long>(rows), static_cast<unsigned long long>(cells));
  }
  return 0;
}

}  // namespace tessera::cli
