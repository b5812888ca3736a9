// Commands that ask every node at once (`tessera admin snapshot | listsnapshots |
// clearsnapshot | restore | repair`): the asking, and the walk over the answers.
//
// Thread-safety: AskAll runs one thread per node and joins them before it returns.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "tessera/cli/admin_node.h"
#include "tessera/v1/node_admin.grpc.pb.h"

namespace tessera::cli {

// Asks every node at once; the answers (or failures) in `nodes`' order.
template <typename Request, typename Response>
std::vector<std::pair<grpc::Status, Response>> AskAll(
    const char* command, const std::vector<std::string>& nodes, int64_t timeout_ms,
    grpc::Status (::tessera::v1::NodeAdmin::Stub::*method)(grpc::ClientContext*, const Request&,
                                                           Response*),
    const Request& request) {
  std::vector<std::pair<grpc::Status, Response>> answers(nodes.size());
  std::vector<std::thread> askers;
  for (size_t i = 0; i < nodes.size(); ++i) {
    askers.emplace_back([&, i] {
      answers[i].first =
          AskNode(command, nodes[i], timeout_ms, method, request, &answers[i].second);
    });
  }
  for (std::thread& t : askers) t.join();
  return answers;
}

// Hands each node's answer to `one` (a failed node was reported on stderr by AskNode), which
// prints it or, with --json, adds it to the array printed at the end. Exit status: 0 when every
// node answered, else 1.
template <typename Response>
int ForEachAnswer(const std::vector<std::string>& nodes,
                  const std::vector<std::pair<grpc::Status, Response>>& answers, bool json,
                  const std::function<void(const std::string& node, const Response& response,
                                           nlohmann::json* out)>& one) {
  nlohmann::json out = nlohmann::json::array();
  bool all = true;
  for (size_t i = 0; i < nodes.size(); ++i) {
    all = all && answers[i].first.ok();
    if (answers[i].first.ok()) one(nodes[i], answers[i].second, &out);
  }
  if (json) std::printf("%s\n", out.dump().c_str());
  return all ? 0 : 1;
}

}  // namespace tessera::cli
