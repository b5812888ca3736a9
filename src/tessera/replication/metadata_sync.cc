#include "tessera/replication/metadata_sync.h"

#include <iterator>
#include <set>
#include <utility>
#include <vector>

#include "tessera/catalog/metadata_table.h"
#include "tessera/util/logging.h"

namespace tessera::replication {

struct MetadataSync::Pass {
  TableSnapshot metadata;
  std::string fingerprint;
  std::map<std::string, catalog::MetadataEntry> desired;  // by row key
  std::set<std::string> known;                             // the catalog's tables
  std::vector<model::Row> rows;
  size_t written = 0;
  size_t deleted = 0;
};

MetadataSync::MetadataSync(Coordinator* coordinator, Executor* executor, Clock* clock,
                           TabletMaster::TablesFn tables, std::function<bool()> is_master,
                           std::function<Status()> create_metadata, MetadataSyncOptions options)
    : coordinator_(coordinator),
      executor_(executor),
      clock_(clock),
      tables_(std::move(tables)),
      is_master_(std::move(is_master)),
      create_metadata_(std::move(create_metadata)),
      options_(options) {}

MetadataSync::~MetadataSync() { Stop(); }

void MetadataSync::Start() {
  absl::MutexLock l(&mu_);
  if (running_) return;
  running_ = true;
  ScheduleStep();
}

void MetadataSync::Stop() {
  absl::MutexLock l(&mu_);
  if (running_) {
    running_ = false;
    executor_->Cancel(timer_);
  }
  mu_.Await(absl::Condition(
      +[](bool* stepping) { return !*stepping; }, &stepping_));
}

MetadataSync::Stats MetadataSync::stats() const {
  absl::MutexLock l(&mu_);
  return stats_;
}

bool MetadataSync::running() const {
  absl::MutexLock l(&mu_);
  return running_;
}

void MetadataSync::ScheduleStep() {
  timer_ = executor_->ScheduleAfter(options_.step_us, [this] {
    {
      absl::MutexLock l(&mu_);
      if (!running_) return;
      stepping_ = true;
    }
    Step();
    absl::MutexLock l(&mu_);
    stepping_ = false;
    if (running_) ScheduleStep();
  });
}

void MetadataSync::Step() {
  if (!running() || !is_master_()) return;
  {
    absl::MutexLock l(&mu_);
    if (pass_under_way_) return;
  }
  auto pass = std::make_shared<Pass>();
  std::vector<TableSnapshot> cluster_tables;
  for (TableSnapshot& t : tables_()) {
    if (catalog::IsMetadataTable(t->full_name)) {
      pass->metadata = t;
    } else if (catalog::LocatedThroughMetadata(*t)) {
      cluster_tables.push_back(std::move(t));
    }
  }
  if (pass->metadata == nullptr) {
    if (cluster_tables.empty()) return;
    Status s = create_metadata_();
    if (s.ok()) {
      TLOG_INFO("metadata: created {} for the tablets of {} tables", catalog::kMetadataTable,
                cluster_tables.size());
    } else {
      TLOG_WARN("metadata: could not create {}: {}", catalog::kMetadataTable, s.ToString());
    }
    return;
  }
  for (const TableSnapshot& t : cluster_tables) {
    pass->known.insert(t->full_name);
    pass->fingerprint += StrCat(t->full_name, "|", t->tablet_prefix);
    for (catalog::MetadataEntry& e : catalog::MetadataEntriesOf(*t)) {
      pass->fingerprint += StrCat("|", e.tablet.end_row.size(), ":", e.tablet.end_row);
      std::string key = catalog::MetadataRowKey(e.table, e.tablet.end_row);
      pass->desired.emplace(std::move(key), std::move(e));
    }
    pass->fingerprint.push_back('\n');
  }
  {
    absl::MutexLock l(&mu_);
    const int64_t now = clock_->MonotonicMicros();
    if (pass->fingerprint == synced_fingerprint_ && synced_at_us_ != 0 &&
        now - synced_at_us_ < options_.check_us) {
      return;
    }
    pass_under_way_ = true;
  }
  ReadRows(std::move(pass), 0);
}

void MetadataSync::ReadRows(std::shared_ptr<Pass> pass, size_t tablet) {
  if (!running()) return EndPass(std::move(pass), absl::CancelledError("stopped"));
  if (tablet >= pass->metadata->tablets.size()) return Write(std::move(pass));
  model::RowRange range;
  if (!pass->rows.empty()) range.start = pass->rows.back().key + std::string(1, '\0');
  AccessOptions options;
  options.read_level = ReadLevel::kPrimary;
  options.timeout_us = options_.timeout_us;
  TableSnapshot metadata = pass->metadata;
  coordinator_->Read(std::move(metadata), tablet, {range}, nullptr, 0, false, options,
                     [this, pass, tablet](StatusOr<ReadPage> page) {
                       if (!page.ok()) return EndPass(pass, page.status());
                       const bool tablet_done = page->done || page->rows.empty();
                       for (model::Row& row : page->rows) pass->rows.push_back(std::move(row));
                       ReadRows(pass, tablet_done ? tablet + 1 : tablet);
                     });
}

void MetadataSync::Write(std::shared_ptr<Pass> pass) {
  const int64_t now = clock_->MonotonicMicros();
  const int64_t timestamp = clock_->NowMicros() / 1000 * 1000;
  std::map<size_t, std::vector<model::RowMutation>> by_tablet;
  std::set<std::string> seen;  // keys METADATA holds
  std::vector<std::string> forgotten;
  {
    absl::MutexLock l(&mu_);
    std::set<std::string> unknown;
    for (const model::Row& row : pass->rows) {
      seen.insert(row.key);
      StatusOr<catalog::MetadataEntry> entry = catalog::ParseMetadataRow(row);
      auto want = pass->desired.find(row.key);
      if (want != pass->desired.end()) {
        if (!entry.ok() || !(*entry == want->second)) {
          by_tablet[pass->metadata->TabletIndexFor(row.key)].push_back(
              catalog::MetadataPut(want->second.table, want->second.tablet, timestamp));
          ++pass->written;
        }
        continue;
      }
      // Not a tablet the catalog names: of a known table (re-created, its old tablets), a row
      // that does not parse, or of a table this node does not know (dropped, or not yet seen).
      bool drop = !entry.ok() || pass->known.count(entry->table) > 0;
      if (!drop) {
        unknown.insert(entry->table);
        auto [it, added] = unknown_since_.emplace(entry->table, now);
        drop = now - it->second >= options_.forget_after_us;
        if (drop && forgotten.empty()) forgotten.push_back(entry->table);
      }
      if (drop) {
        model::RowMutation m(row.key);
        m.DeleteFromRow();
        by_tablet[pass->metadata->TabletIndexFor(row.key)].push_back(std::move(m));
        ++pass->deleted;
      }
    }
    for (auto it = unknown_since_.begin(); it != unknown_since_.end();) {
      it = unknown.count(it->first) > 0 ? std::next(it) : unknown_since_.erase(it);
    }
  }
  for (const auto& [key, entry] : pass->desired) {
    if (seen.count(key) > 0) continue;
    by_tablet[pass->metadata->TabletIndexFor(key)].push_back(
        catalog::MetadataPut(entry.table, entry.tablet, timestamp));
    ++pass->written;
  }
  if (by_tablet.empty()) return EndPass(std::move(pass), Status());
  if (!forgotten.empty()) {
    TLOG_INFO("metadata: dropping the rows of {} and others no longer in the catalog",
              forgotten.front());
  }
  struct Writes {
    absl::Mutex mu;
    size_t pending = 0;
    Status first_error;
  };
  auto writes = std::make_shared<Writes>();
  writes->pending = by_tablet.size();
  AccessOptions options;
  options.write_level = WriteLevel::kQuorum;
  options.timeout_us = options_.timeout_us;
  for (auto& [tablet, mutations] : by_tablet) {
    coordinator_->MutateBatch(
        pass->metadata, tablet, std::move(mutations), options,
        [this, pass, writes](std::vector<Status> statuses) {
          bool last = false;
          Status error;
          {
            absl::MutexLock l(&writes->mu);
            for (Status& s : statuses) {
              if (!s.ok() && writes->first_error.ok()) writes->first_error = std::move(s);
            }
            last = --writes->pending == 0;
            error = writes->first_error;
          }
          if (last) EndPass(pass, error);
        });
  }
}

void MetadataSync::EndPass(std::shared_ptr<Pass> pass, Status status) {
  absl::MutexLock l(&mu_);
  pass_under_way_ = false;
  if (!status.ok()) {
    if (!absl::IsCancelled(status)) {
      TLOG_WARN("metadata: a pass over {} failed, tried again at the next step: {}",
                catalog::kMetadataTable, status.ToString());
    }
    return;
  }
  ++stats_.passes;
  stats_.rows_written += pass->written;
  stats_.rows_deleted += pass->deleted;
  if (pass->written + pass->deleted > 0) {
    TLOG_INFO("metadata: wrote {} rows and deleted {} of {}", pass->written, pass->deleted,
              catalog::kMetadataTable);
  }
  synced_fingerprint_ = std::move(pass->fingerprint);
  synced_at_us_ = std::max<int64_t>(1, clock_->MonotonicMicros());
}

}  // namespace tessera::replication
