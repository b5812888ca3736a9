// Test-only: what the replicated simulations (sim_replication_test.cc, sim_dc_test.cc) ask of
// a SimCluster's nodes — a node's snapshot of a table, its coordinator, whether every tablet
// has a configuration everywhere, and one coordinator call run to its answer on simulated time.
//
// Thread-safety: the simulation's one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "tessera/replication/coordinator.h"
#include "tessera/testing/sim_cluster.h"

namespace tessera::testing {

inline constexpr char kSimTable[] = "projects/p/instances/i/tables/t";

// The table as node i knows it, or null (node down, or no such table there).
inline replication::TableSnapshot TableAt(const SimCluster& c, int i,
                                          const std::string& table = kSimTable) {
  if (c.core(i) == nullptr) return nullptr;
  auto t = c.core(i)->catalog()->GetTable(table);
  return t.ok() ? *t : nullptr;
}

// Node i's coordinator, or null when the node is down or does not replicate.
inline replication::Coordinator* CoordinatorOf(const SimCluster& c, int i) {
  if (c.core(i) == nullptr || c.core(i)->replicated() == nullptr) return nullptr;
  return c.core(i)->replicated()->coordinator();
}

// True once every node is up, knows the table and has a configuration of each of its tablets.
inline bool Configured(const SimCluster& c, const std::string& table = kSimTable) {
  for (int i = 0; i < c.size(); ++i) {
    replication::TableSnapshot t = TableAt(c, i, table);
    if (t == nullptr || c.core(i)->replicated() == nullptr) return false;
    for (const catalog::TabletRef& tablet : t->tablets) {
      if (!c.core(i)->replicated()->replicas()->GetConfig(tablet.id).has_value()) return false;
    }
  }
  return true;
}

// Starts `call` with a callback and runs the simulation until it has answered or `limit_us`
// of simulated time passed: the answer, or nullopt.
template <typename T>
std::optional<T> RunCall(SimCluster& c, const std::function<void(std::function<void(T)>)>& call,
                         int64_t limit_us = 20'000'000) {
  auto result = std::make_shared<std::optional<T>>();
  call([result](T v) { result->emplace(std::move(v)); });
  c.RunUntil([&] { return result->has_value(); }, limit_us);
  return *result;
}

}  // namespace tessera::testing
