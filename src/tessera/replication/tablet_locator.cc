#include "tessera/replication/tablet_locator.h"

#include <algorithm>
#include <utility>

#include "tessera/catalog/metadata_table.h"
#include "tessera/replication/coordinator.h"

namespace tessera::replication {

// One read of a table's METADATA rows, for every lookup waiting for it.
struct TabletLocator::Lookup {
  std::string table;
  uint64_t tablet_prefix = 0;
  int64_t deadline_us = 0;
  int64_t timeout_us = 0;  // what each waiter gave; 0: the default
  int64_t delay_us = 0;
  std::vector<model::Row> rows;
};

namespace {
constexpr int64_t kFirstRetryDelayUs = 20'000;
constexpr int64_t kMaxRetryDelayUs = 500'000;
// Beyond this many tables the cache starts again (a table dropped leaves its entry behind).
constexpr size_t kMaxCachedTables = 100'000;
}  // namespace

TabletLocator::TabletLocator(Coordinator* coordinator, Executor* executor, Clock* clock,
                             std::function<StatusOr<TableSnapshot>()> metadata)
    : coordinator_(coordinator),
      retries_(executor),
      clock_(clock),
      metadata_(std::move(metadata)) {}

TableSnapshot TabletLocator::Routed(const catalog::TableInfo& table, Entry* entry) {
  if (entry->routed == nullptr || entry->routed->schema.version != table.schema.version ||
      entry->routed->schema != table.schema) {
    auto routed = std::make_shared<catalog::TableInfo>();
    routed->name = table.name;
    routed->full_name = table.full_name;
    routed->schema = table.schema;
    routed->tablet_prefix = table.tablet_prefix;
    routed->tablets = entry->tablets;
    entry->routed = std::move(routed);
  }
  return entry->routed;
}

void TabletLocator::Locate(const catalog::TableInfo& table, int64_t timeout_us,
                           std::function<void(StatusOr<TableSnapshot>)> done) {
  if (!catalog::LocatedThroughMetadata(table)) {
    done(std::make_shared<const catalog::TableInfo>(table));
    return;
  }
  std::shared_ptr<Lookup> lookup;
  TableSnapshot hit;
  {
    absl::MutexLock l(&mu_);
    auto it = cache_.find(table.full_name);
    if (it != cache_.end() && it->second.tablet_prefix == table.tablet_prefix) {
      ++stats_.hits;
      hit = Routed(table, &it->second);
    }
  }
  if (hit != nullptr) {
    done(std::move(hit));
    return;
  }
  {
    absl::MutexLock l(&mu_);
    Waiters& waiters = pending_[{table.full_name, table.tablet_prefix}];
    waiters.emplace_back(std::make_shared<const catalog::TableInfo>(table), std::move(done));
    if (waiters.size() > 1) return;  // the read under way answers this one too
    ++stats_.reads;
    lookup = std::make_shared<Lookup>();
    lookup->table = table.full_name;
    lookup->tablet_prefix = table.tablet_prefix;
  }
  lookup->timeout_us = timeout_us;
  const int64_t budget = timeout_us > 0 ? timeout_us : coordinator_->options().timeout_us;
  lookup->deadline_us = clock_->MonotonicMicros() + budget;
  lookup->delay_us = kFirstRetryDelayUs;
  Fetch(std::move(lookup));
}

void TabletLocator::Forget(std::string_view table) {
  absl::MutexLock l(&mu_);
  auto it = cache_.find(table);
  if (it != cache_.end()) cache_.erase(it);
}

TabletLocatorStats TabletLocator::stats() const {
  absl::MutexLock l(&mu_);
  return stats_;
}

void TabletLocator::Fetch(std::shared_ptr<Lookup> lookup) {
  StatusOr<TableSnapshot> metadata = metadata_();
  if (!metadata.ok()) {
    RetryOrFail(std::move(lookup),
                absl::UnavailableError(StrCat("cannot locate the tablets of ", lookup->table,
                                              ": this node does not know the METADATA table "
                                              "yet (", metadata.status().message(), ")")));
    return;
  }
  lookup->rows.clear();
  const model::RowRange range = catalog::MetadataRangeOf(lookup->table);
  std::vector<size_t> tablets = (*metadata)->TabletsOverlapping(range.start, range.end);
  ReadPages(std::move(lookup), std::move(*metadata), std::move(tablets), 0);
}

void TabletLocator::ReadPages(std::shared_ptr<Lookup> lookup, TableSnapshot metadata,
                              std::vector<size_t> tablets, size_t next) {
  if (next >= tablets.size()) {
    Complete(std::move(lookup));
    return;
  }
  model::RowRange range = catalog::MetadataRangeOf(lookup->table);
  if (!lookup->rows.empty()) range.start = lookup->rows.back().key + std::string(1, '\0');
  // At ONE, the nearest replica (this node's own, if it holds one): a table's rows are written
  // once, under its own tablet prefix, and never change while it lives, so a replica that is
  // behind can only lack some of them (the tiling check then reads again), never hold others.
  // METADATA stays readable wherever a replica of it runs, also when its primary is cut off
  // (a DC down) or being replaced.
  AccessOptions options;
  options.read_level = ReadLevel::kOne;
  options.timeout_us = std::max<int64_t>(1, lookup->deadline_us - clock_->MonotonicMicros());
  const size_t tablet = tablets[next];
  TableSnapshot meta = metadata;
  coordinator_->Read(
      std::move(meta), tablet, {range}, nullptr, 0, false, options,
      [this, lookup, metadata = std::move(metadata), tablets = std::move(tablets),
       next](StatusOr<ReadPage> page) mutable {
        if (!page.ok()) {
          RetryOrFail(lookup, Status(page.status().code(),
                                     StrCat("reading METADATA for ", lookup->table, ": ",
                                            page.status().message())));
          return;
        }
        // A page that is not the tablet's last carries rows (else it would be asked again).
        const bool tablet_done = page->done || page->rows.empty();
        for (model::Row& row : page->rows) lookup->rows.push_back(std::move(row));
        ReadPages(lookup, std::move(metadata), std::move(tablets), tablet_done ? next + 1 : next);
      });
}

void TabletLocator::Complete(std::shared_ptr<Lookup> lookup) {
  StatusOr<std::vector<catalog::TabletRef>> tablets =
      catalog::TabletsFromMetadata(lookup->table, lookup->tablet_prefix, lookup->rows);
  if (absl::IsUnavailable(tablets.status())) {
    {
      absl::MutexLock l(&mu_);
      ++stats_.incomplete;
    }
    RetryOrFail(std::move(lookup), tablets.status());
    return;
  }
  Answer(std::move(lookup), std::move(tablets));
}

void TabletLocator::Stop() { retries_.Close(); }

void TabletLocator::RetryOrFail(std::shared_ptr<Lookup> lookup, Status status) {
  const int64_t now = clock_->MonotonicMicros();
  const bool retryable = absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status);
  if (retryable && now + lookup->delay_us < lookup->deadline_us) {
    const int64_t delay = lookup->delay_us;
    lookup->delay_us = std::min(2 * lookup->delay_us, kMaxRetryDelayUs);
    if (retries_.ScheduleAfter(
            delay, [this, lookup] { Fetch(lookup); },
            [this, lookup] { Answer(lookup, absl::UnavailableError("the node is stopping")); }) ==
        0) {
      Answer(std::move(lookup), std::move(status));  // stopped: the failure as it is
    }
    return;
  }
  if (retryable && lookup->timeout_us > 0) {
    status = absl::DeadlineExceededError(status.message());
  }
  Answer(std::move(lookup), std::move(status));
}

void TabletLocator::Answer(std::shared_ptr<Lookup> lookup,
                           StatusOr<std::vector<catalog::TabletRef>> tablets) {
  std::vector<std::pair<std::function<void(StatusOr<TableSnapshot>)>, StatusOr<TableSnapshot>>>
      answers;
  {
    absl::MutexLock l(&mu_);
    auto node = pending_.extract({lookup->table, lookup->tablet_prefix});
    Waiters waiters;
    if (!node.empty()) waiters = std::move(node.mapped());
    if (tablets.ok()) {
      if (cache_.size() >= kMaxCachedTables) cache_.clear();
      Entry& entry = cache_[lookup->table];
      entry.tablet_prefix = lookup->tablet_prefix;
      entry.tablets = std::move(*tablets);
      entry.routed = nullptr;
      for (auto& [table, done] : waiters) answers.emplace_back(std::move(done), Routed(*table, &entry));
    } else {
      for (auto& [table, done] : waiters) answers.emplace_back(std::move(done), tablets.status());
    }
  }
  for (auto& [done, answer] : answers) done(std::move(answer));
}

}  // namespace tessera::replication
