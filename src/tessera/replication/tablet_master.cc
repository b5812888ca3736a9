#include "tessera/replication/tablet_master.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "tessera/catalog/metadata_table.h"
#include "tessera/catalog/placement.h"
#include "tessera/catalog/ring_store.h"
#include "tessera/catalog/table_placement.h"
#include "tessera/catalog/tablet_id.h"
#include "tessera/replication/consistency.h"
#include "tessera/replication/coordinator.h"
#include "tessera/replication/replica_node.h"
#include "tessera/util/logging.h"
#include "tessera/v1/replica.pb.h"

namespace tessera::replication {
namespace {

using catalog::TabletConfig;
using catalog::TabletConfigState;

constexpr std::string_view kConfigPrefix = "tablets/";
// Promotions begun: "sealing/<tablet id>" -> the epoch being replaced, in decimal.
constexpr std::string_view kSealingPrefix = "sealing/";

template <typename... Args>
void Append(std::string* log, const Args&... args) {
  *log += StrCat(args...);
}

// How `table`'s tablets are placed over `live` nodes.
StatusOr<catalog::PlacementPolicy> PolicyFor(const catalog::TableInfo& table,
                                             const std::vector<catalog::PlacementNode>& live,
                                             int max_replication_factor) {
  return catalog::IsMetadataTable(table.full_name) && table.schema.options.placement.empty()
             ? catalog::MetadataPlacement(live, max_replication_factor)
             : catalog::StoredTablePlacement(table.schema.options.placement,
                                             static_cast<int>(live.size()), max_replication_factor);
}

// The nodes of `live` a tablet of `policy` may go to, each with the replicas it holds.
std::vector<catalog::PlacementNode> Candidates(const catalog::PlacementPolicy& policy,
                                               const std::vector<catalog::PlacementNode>& live,
                                               std::map<std::string, size_t>& load) {
  const bool ring = policy.strategy == catalog::PlacementPolicy::Strategy::kRing;
  std::vector<catalog::PlacementNode> nodes;
  for (const catalog::PlacementNode& n : live) {
    // A node that registered but has not written its token yet is not on the ring.
    if (ring && n.token.empty()) continue;
    nodes.push_back(n);
    nodes.back().load = load[n.endpoint];
  }
  return nodes;
}

// A tablet of a table, as the catalog holds it.
struct PlacedTablet {
  std::shared_ptr<const catalog::TableInfo> table;
  catalog::TabletRef ref;
};

}  // namespace

std::optional<size_t> ChooseNewPrimary(const TabletConfig& old,
                                       const std::map<size_t, SealedReplica>& sealed) {
  std::optional<size_t> best;
  uint64_t required = 0;  // the most of the lineage any sealed replica holds
  for (const auto& [index, replica] : sealed) {
    const std::optional<uint64_t> prefix =
        old.LineagePrefix(replica.joined_epoch, replica.last_sequence);
    if (prefix.has_value()) required = std::max(required, *prefix);
    if (prefix != replica.last_sequence) continue;  // diverged: never the primary
    if (!best.has_value() || replica.last_sequence > sealed.at(*best).last_sequence) best = index;
  }
  // A diverged replica may be the only live one holding part of the lineage (acknowledged
  // writes included) when those that stayed in it lag: none of them may lead yet.
  if (best.has_value() && sealed.at(*best).last_sequence < required) return std::nullopt;
  return best;
}

struct TabletMaster::Promotion {
  TabletConfig config;  // the configuration being replaced
  int64_t version = 0;
  int64_t started_us = 0;
  size_t pending = 0;
  // Replica index -> what it answered, for the replicas that sealed.
  std::map<size_t, SealedReplica> sealed;
  std::optional<Move> move;  // a decommission's
};

TabletMaster::TabletMaster(RpcChannel* channel, Executor* executor, Clock* clock, TablesFn tables,
                           std::function<bool()> is_master, TabletMasterOptions options)
    : channel_(channel),
      executor_(executor),
      clock_(clock),
      tables_(std::move(tables)),
      is_master_(std::move(is_master)),
      options_(options) {}

TabletMaster::~TabletMaster() { Stop(); }

void TabletMaster::Attach(coord::Session* session) {
  absl::MutexLock l(&step_mu_);
  session_ = session;
}

void TabletMaster::Detach() {
  absl::MutexLock l(&step_mu_);
  session_ = nullptr;
}

void TabletMaster::Start() {
  absl::MutexLock l(&mu_);
  if (running_) return;
  running_ = true;
  ScheduleStep();
}

void TabletMaster::Stop() {
  absl::MutexLock l(&mu_);
  if (running_) {
    running_ = false;
    executor_->Cancel(timer_);
  }
  mu_.Await(absl::Condition(
      +[](bool* stepping) { return !*stepping; }, &stepping_));
}

void TabletMaster::ScheduleStep() {
  timer_ = executor_->ScheduleAfter(options_.step_us, [this] {
    {
      absl::MutexLock l(&mu_);
      if (!running_) return;
      stepping_ = true;
    }
    std::string log = Step();
    if (!log.empty()) TLOG_INFO("tablet master: {}", log);
    absl::MutexLock l(&mu_);
    stepping_ = false;
    if (running_) ScheduleStep();
  });
}

bool TabletMaster::WriteConfig(coord::Session* session, const TabletConfig& config, int64_t version,
                               std::string* log) {
  coord::PutOptions put;
  put.expected_version = version;
  StatusOr<coord::FileInfo> written =
      session->Put(catalog::TabletConfigName(config.tablet_id), config.Encode(), put);
  if (!written.ok()) {
    if (!absl::IsAborted(written.status())) {
      Append(log, "writing ", catalog::TabletConfigName(config.tablet_id), ": ",
             written.status().ToString(), "; ");
    }
    return false;
  }
  return true;
}

std::string TabletMaster::Step() {
  absl::MutexLock step(&step_mu_);
  if (session_ == nullptr || !is_master_()) return "";
  std::string log;
  StatusOr<catalog::ClusterView> cluster = catalog::ReadClusterView(session_);
  StatusOr<coord::Listing> configs = session_->List(kConfigPrefix);
  StatusOr<coord::Listing> sealing = session_->List(kSealingPrefix);
  if (!sealing.ok()) configs = sealing.status();
  if (!cluster.ok() || !configs.ok()) {
    return StrCat("cannot read the lock service: ",
                  (!cluster.ok() ? cluster.status() : configs.status()).ToString());
  }
  std::set<std::string> alive;
  for (const catalog::PlacementNode& n : cluster->live) alive.insert(n.endpoint);
  // Nothing new goes to a node that is leaving.
  std::vector<catalog::PlacementNode> live;
  for (const catalog::PlacementNode& n : cluster->live) {
    if (cluster->leaving.count(n.endpoint) == 0) live.push_back(n);
  }

  std::map<uint64_t, std::pair<TabletConfig, int64_t>> known;  // id -> (config, version)
  Counts load;                                                 // endpoint -> replicas held
  Counts leading;                                              // endpoint -> primaries held
  for (const coord::FileInfo& f : configs->files) {
    StatusOr<uint64_t> id = catalog::ParseTabletConfigName(f.name);
    StatusOr<TabletConfig> c = TabletConfig::Decode(f.value);
    if (!id.ok() || !c.ok()) continue;
    for (const std::string& r : c->replicas) ++load[r];
    ++leading[c->primary_endpoint()];
    known.emplace(*id, std::make_pair(*std::move(c), f.version));
  }

  if (!live.empty()) PlaceNewTablets(live, known, &load, &leading, &log);

  // Promotions begun (by this master or an earlier one) and not yet written: owed.
  std::map<uint64_t, uint64_t> owed;  // tablet -> the epoch being replaced
  for (const coord::FileInfo& f : sealing->files) {
    uint64_t id = 0, epoch = 0;
    if (!absl::SimpleAtoi(f.name.substr(kSealingPrefix.size()), &id) ||
        !absl::SimpleAtoi(f.value, &epoch)) {
      continue;
    }
    auto k = known.find(id);
    if (k == known.end() || k->second.first.epoch != epoch) {
      (void)session_->Delete(f.name, f.version);  // done, or its tablet is gone
      continue;
    }
    owed[id] = epoch;
  }
  // The catalog's tablets by id, for the placement of a replica that moves.
  std::map<uint64_t, PlacedTablet> placed;
  if (!cluster->leaving.empty()) {
    for (const std::shared_ptr<const catalog::TableInfo>& table : tables_()) {
      for (const catalog::TabletRef& t : table->tablets) placed[t.id] = PlacedTablet{table, t};
    }
  }
  // Where the replica a configuration holds on a leaving node goes, or nullopt.
  auto move_of = [&](uint64_t id, const TabletConfig& c) -> std::optional<Move> {
    if (!c.needs_rebuild.empty()) return std::nullopt;  // one move at a time, once caught up
    std::optional<size_t> index;
    for (size_t i = 0; i < c.replicas.size() && !index.has_value(); ++i) {
      if (cluster->leaving.count(c.replicas[i]) != 0) index = i;
    }
    if (!index.has_value()) return std::nullopt;
    auto t = placed.find(id);
    if (t == placed.end()) return std::nullopt;  // its table is being deleted
    StatusOr<catalog::PlacementPolicy> policy =
        PolicyFor(*t->second.table, live, options_.max_replication_factor);
    StatusOr<std::vector<std::string>> chosen =
        policy.ok() ? catalog::Place(
                          *policy, Candidates(*policy, live, load),
                          catalog::TabletRange{id, t->second.ref.start_row, t->second.ref.end_row})
                    : StatusOr<std::vector<std::string>>(policy.status());
    if (chosen.ok()) {
      for (const std::string& e : *chosen) {
        if (c.IndexOf(e) < 0) return Move{*index, e};
      }
      chosen = absl::FailedPreconditionError("every node it may go to holds it already");
    }
    Append(&log, catalog::TabletName(id), ": cannot move its replica off leaving ",
           c.replicas[*index], ": ", chosen.status().ToString(), "; ");
    return std::nullopt;
  };
  // Primaries without a live session: promote. Replicas on leaving nodes: move.
  std::vector<uint64_t> finished;
  std::vector<std::pair<uint64_t, std::optional<Move>>> to_seal;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [known_id, entry] : known) {
      const uint64_t id = known_id;
      const TabletConfig& c = entry.first;
      auto p = promotions_.find(id);
      if (p != promotions_.end()) {
        if (p->second->config.epoch != c.epoch || p->second->version != entry.second) {
          promotions_.erase(p);  // the configuration changed under it
        } else if (p->second->pending == 0 ||
                   clock_->MonotonicMicros() - p->second->started_us > options_.seal_timeout_us) {
          finished.push_back(id);
        }
        continue;
      }
      if (c.state != TabletConfigState::kServing) continue;
      std::optional<Move> move;
      if (alive.count(c.primary_endpoint()) != 0 && owed.count(id) == 0) {
        move = move_of(id, c);
        if (!move.has_value()) continue;
      }
      // A move needs a live majority among the replicas that stay (FinishPromotion): sealing
      // without one would only stop the writes until a replica came back.
      size_t reachable = 0;
      for (size_t i = 0; i < c.replicas.size(); ++i) {
        if (!move.has_value() || i != move->index) reachable += alive.count(c.replicas[i]);
      }
      if (move.has_value() && reachable < Majority(c.replicas.size())) {
        Append(&log, catalog::TabletName(id), ": only ", reachable, " of the replicas that stay ",
               "live; the move off ", c.replicas[move->index], " waits; ");
        continue;
      }
      if (reachable < Majority(c.replicas.size())) {
        Append(&log, catalog::TabletName(id), ": primary ", c.primary_endpoint(),
               " is gone and only ", reachable, " of ", c.replicas.size(),
               " replicas live; waiting; ");
        continue;
      }
      to_seal.emplace_back(id, std::move(move));
    }
  }
  for (auto& [id, move] : to_seal) {
    const auto& [c, version] = known.at(id);
    if (owed.count(id) == 0) {
      // The intent first, so that whoever is master next finishes what the seals begin.
      StatusOr<coord::FileInfo> put =
          session_->Put(StrCat(kSealingPrefix, id), StrCat(c.epoch), coord::PutOptions());
      if (!put.ok()) {
        Append(&log, catalog::TabletName(id),
               ": cannot record the promotion: ", put.status().ToString(), "; ");
        continue;
      }
    }
    absl::MutexLock l(&mu_);
    StartSealLocked(id, c, version, alive, std::move(move), &log);
  }
  for (uint64_t id : finished) FinishPromotion(session_, id, &log);
  ClearRebuildMarks(session_, known, alive, &log);
  return log;
}

void TabletMaster::StartSealLocked(uint64_t id, const TabletConfig& c, int64_t version,
                                   const std::set<std::string>& alive, std::optional<Move> move,
                                   std::string* log) {
  auto promotion = std::make_unique<Promotion>();
  promotion->config = c;
  promotion->move = move;
  promotion->version = version;
  promotion->started_us = clock_->MonotonicMicros();
  Promotion* raw = promotion.get();
  promotions_[id] = std::move(promotion);
  v1::SealRequest seal;
  seal.set_tablet_id(id);
  seal.set_epoch(c.epoch + 1);
  const std::string bytes = seal.SerializeAsString();
  for (size_t i = 0; i < c.replicas.size(); ++i) {
    if (alive.count(c.replicas[i]) == 0 || c.NeedsRebuild(i)) continue;
    ++raw->pending;
    const uint64_t epoch = c.epoch;
    executor_->Schedule([this, id, i, epoch, to = c.replicas[i], bytes] {
      channel_->Call(
          to, kSealMethod, bytes, options_.seal_timeout_us,
          [this, id, i, epoch](StatusOr<std::string> response) {
            v1::SealResponse sealed;
            const bool ok = response.ok() && sealed.ParseFromString(*response);
            absl::MutexLock l(&mu_);
            auto p = promotions_.find(id);
            if (p == promotions_.end() || p->second->config.epoch != epoch) return;
            if (p->second->pending > 0) --p->second->pending;
            if (ok && sealed.epoch() == epoch + 1) {
              p->second->sealed[i] = SealedReplica{sealed.last_sequence(), sealed.joined()};
            }
          });
    });
  }
  if (move.has_value()) {
    Append(log, catalog::TabletName(id), ": moving the replica on leaving ",
           c.replicas[move->index], " to ", move->to, "; sealing epoch ", c.epoch + 1, "; ");
  } else {
    Append(log, catalog::TabletName(id), ": primary ", c.primary_endpoint(),
           alive.count(c.primary_endpoint()) ? " came back during its promotion" : " is gone",
           "; sealing epoch ", c.epoch + 1, "; ");
  }
}

void TabletMaster::PlaceNewTablets(
    const std::vector<catalog::PlacementNode>& live,
    const std::map<uint64_t, std::pair<TabletConfig, int64_t>>& known, Counts* load,
    Counts* leading, std::string* log) {
  for (const std::shared_ptr<const catalog::TableInfo>& table : tables_()) {
    StatusOr<catalog::PlacementPolicy> policy =
        PolicyFor(*table, live, options_.max_replication_factor);
    if (!policy.ok()) {
      Append(log, "table ", table->full_name, ": ", policy.status().ToString(), "; ");
      continue;
    }
    const bool ring = policy->strategy == catalog::PlacementPolicy::Strategy::kRing;
    for (const catalog::TabletRef& t : table->tablets) {
      // Only the cluster's own tablets are placed; a node's own stay where they are.
      if (known.count(t.id) != 0 || !catalog::IsClusterTabletId(t.id)) continue;
      StatusOr<std::vector<std::string>> chosen =
          catalog::Place(*policy, Candidates(*policy, live, *load),
                         catalog::TabletRange{t.id, t.start_row, t.end_row});
      if (!chosen.ok()) {
        Append(log, "placing tablet ", t.id, ": ", chosen.status().ToString(), "; ");
        continue;
      }
      TabletConfig c;
      c.tablet_id = t.id;
      c.epoch = 1;
      c.state = TabletConfigState::kServing;
      c.replicas = *chosen;
      // The primary: on the ring, the first node clockwise (Place's first); otherwise the
      // chosen replica leading the fewest tablets (then placement order), so that primaries,
      // and with them the writes, spread over the nodes.
      c.primary = 0;
      for (size_t i = 1; !ring && i < chosen->size(); ++i) {
        if ((*leading)[(*chosen)[i]] < (*leading)[(*chosen)[c.primary]]) c.primary = i;
      }
      c.history = {{1, 0}};
      if (WriteConfig(session_, c, 0, log)) {
        for (const std::string& r : *chosen) ++(*load)[r];
        ++(*leading)[c.primary_endpoint()];
        Append(log, "placed ", table->full_name, " tablet ", t.id, " (",
               catalog::FormatPlacementPolicy(*policy), ") on ", absl::StrJoin(*chosen, ","), "; ");
      }
    }
  }
}

void TabletMaster::FinishPromotion(coord::Session* session, uint64_t tablet_id, std::string* log) {
  std::unique_ptr<Promotion> p;
  {
    absl::MutexLock l(&mu_);
    auto it = promotions_.find(tablet_id);
    if (it == promotions_.end()) return;
    p = std::move(it->second);
    promotions_.erase(it);
  }
  const TabletConfig& old = p->config;
  if (p->sealed.size() < Majority(old.replicas.size())) {
    Append(log, catalog::TabletName(tablet_id), ": only ", p->sealed.size(), " of ",
           old.replicas.size(), " replicas sealed epoch ", old.epoch + 1, "; retrying; ");
    return;
  }
  // A move: the primary comes from the replicas that stay, a majority of them sealed (so one
  // holds every acknowledged write even if the leaving one was the only other to have it).
  std::map<size_t, SealedReplica> candidates = p->sealed;
  if (p->move.has_value()) {
    candidates.erase(p->move->index);
    if (candidates.size() < Majority(old.replicas.size())) {
      Append(log, catalog::TabletName(tablet_id), ": only ", candidates.size(),
             " of the replicas that stay sealed epoch ", old.epoch + 1, "; retrying; ");
      return;
    }
  }
  std::optional<size_t> best = ChooseNewPrimary(old, candidates);
  if (!best.has_value()) {
    Append(log, catalog::TabletName(tablet_id),
           ": no sealed replica holds all that the sealed ones hold of the lineage of epoch ",
           old.epoch, "; retrying; ");
    return;
  }
  const uint64_t start = p->sealed.at(*best).last_sequence;
  TabletConfig next = old.NextEpoch(*best, start);
  if (p->move.has_value()) {
    next.replicas[p->move->index] = p->move->to;
    next.needs_rebuild.push_back(p->move->index);
    std::sort(next.needs_rebuild.begin(), next.needs_rebuild.end());
  }
  if (WriteConfig(session, next, p->version, log)) {
    Append(log, catalog::TabletName(tablet_id), ": epoch ", next.epoch, " primary ",
           next.primary_endpoint(), " from sequence ", start,
           p->move.has_value() ? StrCat(", ", p->move->to, " replacing ",
                                        old.replicas[p->move->index], " (to be rebuilt)")
                               : std::string(),
           "; ");
  }
}

void TabletMaster::ClearRebuildMarks(
    coord::Session* session, const std::map<uint64_t, std::pair<TabletConfig, int64_t>>& known,
    const std::set<std::string>& alive, std::string* log) {
  std::map<uint64_t, std::pair<uint64_t, std::string>> caught_up;
  {
    absl::MutexLock l(&mu_);
    caught_up.swap(caught_up_);
  }
  for (const auto& [id, entry] : known) {
    const auto& [c, version] = entry;
    if (c.state != TabletConfigState::kServing || c.needs_rebuild.empty()) continue;
    {
      absl::MutexLock l(&mu_);
      if (promotions_.count(id) != 0) continue;
    }
    auto done = caught_up.find(id);
    if (done != caught_up.end() && done->second.first == c.epoch) {
      const int index = c.IndexOf(done->second.second);
      if (index >= 0 && c.NeedsRebuild(static_cast<size_t>(index))) {
        TabletConfig next = c;
        next.needs_rebuild.erase(std::find(next.needs_rebuild.begin(), next.needs_rebuild.end(),
                                           static_cast<size_t>(index)));
        if (WriteConfig(session, next, version, log)) {
          Append(log, catalog::TabletName(id), ": ", done->second.second,
                 " caught up: a full replica of epoch ", c.epoch, "; ");
        }
        continue;
      }
    }
    // Ask the marked replicas where they are; the next step acts on the answers.
    v1::ForwardPositionRequest ask;
    ask.set_tablet_id(id);
    for (size_t i : c.needs_rebuild) {
      if (alive.count(c.replicas[i]) == 0) continue;
      channel_->Call(
          c.replicas[i], kForwardPositionMethod, ask.SerializeAsString(), options_.seal_timeout_us,
          [this, id = id, epoch = c.epoch, start = c.epoch_start_sequence,
           endpoint = c.replicas[i]](StatusOr<std::string> response) {
            v1::ForwardPositionResponse p;
            if (!response.ok() || !p.ParseFromString(*response) || p.status().code() != 0 ||
                p.joined_epoch() != epoch || p.sequence() < start) {
              return;
            }
            absl::MutexLock l(&mu_);
            caught_up_[id] = {epoch, endpoint};
          });
    }
  }
}

}  // namespace tessera::replication
