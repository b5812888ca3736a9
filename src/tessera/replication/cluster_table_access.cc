#include "tessera/replication/cluster_table_access.h"

#include <deque>
#include <map>
#include <utility>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"

namespace tessera::replication {
namespace {

// Waits for one asynchronous answer.
template <typename T>
class Waiter {
 public:
  std::function<void(T)> Callback() {
    return [this](T value) {
      value_.emplace(std::move(value));
      done_.Notify();
    };
  }
  T Wait() {
    done_.WaitForNotification();
    return std::move(*value_);
  }

 private:
  absl::Notification done_;
  std::optional<T> value_;
};

// `options` with what is left of the client's time (timeout_us; 0, the node's default per
// operation, stays) once a lookup that began at `start_us` is over: the lookup and the
// operation share the client's deadline.
AccessOptions LeftAfter(Coordinator* c, AccessOptions options, int64_t start_us) {
  if (options.timeout_us > 0) {
    options.timeout_us = std::max<int64_t>(
        1, options.timeout_us - (c->clock()->MonotonicMicros() - start_us));
  }
  return options;
}

// `table` with its tablets as METADATA names them (tablet_locator.h): the snapshot the
// coordinator's asynchronous operations take. Leaves in `*options` the time left.
StatusOr<TableSnapshot> Route(Coordinator* c, const catalog::TableInfo& table,
                              AccessOptions* options) {
  const int64_t start_us = c->clock()->MonotonicMicros();
  Waiter<StatusOr<TableSnapshot>> waiter;
  c->locator()->Locate(table, options->timeout_us, waiter.Callback());
  StatusOr<TableSnapshot> routed = waiter.Wait();
  *options = LeftAfter(c, *options, start_us);
  return routed;
}

// The caller's filter, shared for the length of a call it outlives.
std::shared_ptr<model::RowFilter> Borrow(model::RowFilter* filter) {
  return filter == nullptr ? nullptr : std::shared_ptr<model::RowFilter>(filter, [](auto*) {});
}

// The part of `ranges` inside [start, end) ("" end: unbounded).
std::vector<model::RowRange> Clip(const std::vector<model::RowRange>& ranges,
                                  const std::string& start, const std::string& end) {
  std::vector<model::RowRange> out;
  for (const model::RowRange& r : ranges) {
    model::RowRange c{std::max(r.start, start), r.end};
    if (!end.empty() && (c.end.empty() || c.end > end)) c.end = end;
    if (c.end.empty() || c.start < c.end) out.push_back(std::move(c));
  }
  return out;
}

class ClusterRowStream final : public RowStream {
 public:
  // `table` is routed (TabletLocator) by the first Step.
  ClusterRowStream(Coordinator* coordinator, TableSnapshot table, ReadRequest request,
                   const AccessOptions& options)
      : coordinator_(coordinator),
        options_(options),
        deadline_us_(options.timeout_us > 0
                         ? coordinator->clock()->MonotonicMicros() + options.timeout_us
                         : 0),
        unrouted_(std::move(table)),
        filter_(std::make_shared<model::RowFilter>(std::move(request.filter))),
        ranges_(request.rows.ranges()),
        limit_(request.rows_limit),
        reversed_(request.reversed) {}

  bool SetWaker(std::function<void()> wake) override {
    wake_ = std::move(wake);
    return true;
  }

  StatusOr<ReadStep> Step(model::Row* row) override {
    if (done_) return ReadStep::kEnd;
    if (table_ == nullptr) {
      std::optional<StatusOr<TableSnapshot>> routed =
          Ask<StatusOr<TableSnapshot>>(&routed_, [this](auto callback) {
            const int64_t left =
                deadline_us_ > 0
                    ? std::max<int64_t>(1, deadline_us_ - coordinator_->clock()->MonotonicMicros())
                    : 0;
            coordinator_->locator()->Locate(*unrouted_, left, std::move(callback));
          });
      if (!routed.has_value()) return ReadStep::kWait;
      if (!routed->ok()) return routed->status();
      table_ = **std::move(routed);
      for (size_t i = 0; i < table_->tablets.size(); ++i) {
        const catalog::TabletRef& t = table_->tablets[i];
        if (!Clip(ranges_, t.start_row, t.end_row).empty()) order_.push_back(i);
      }
      if (reversed_) std::reverse(order_.begin(), order_.end());
    }
    if (!buffer_.empty()) {
      *row = std::move(buffer_.front());
      buffer_.pop_front();
      ++progress_.rows_returned;
      progress_.cells_returned += static_cast<int64_t>(row->cells.size());
      if (limit_ > 0 && progress_.rows_returned >= limit_) done_ = true;
      return ReadStep::kRow;
    }
    if (next_ >= order_.size()) {
      done_ = true;
      return ReadStep::kEnd;
    }
    const catalog::TabletRef& t = table_->tablets[order_[next_]];
    std::vector<model::RowRange> ranges = Clip(ranges_, t.start_row, t.end_row);
    if (!resume_.empty()) {
      // Past the last row returned: after it forward, before it reversed.
      ranges = reversed_ ? Clip(ranges, "", resume_) : Clip(ranges, resume_ + '\0', "");
    }
    if (ranges.empty()) {
      ++next_;
      resume_.clear();
      return ReadStep::kNoRow;
    }
    const int64_t left = limit_ > 0 ? limit_ - progress_.rows_returned : 0;
    AccessOptions page_options = options_;
    if (deadline_us_ > 0) {
      // What is left of the client's time for the whole scan.
      const int64_t remaining = deadline_us_ - coordinator_->clock()->MonotonicMicros();
      if (remaining <= 0) {
        return absl::DeadlineExceededError(
            StrCat("the read's deadline ran out after ", progress_.rows_returned, " rows"));
      }
      page_options.timeout_us = remaining;
    }
    std::optional<StatusOr<ReadPage>> page =
        Ask<StatusOr<ReadPage>>(&page_, [&](auto callback) {
          coordinator_->Read(table_, order_[next_], std::move(ranges), filter_, left, reversed_,
                             page_options, std::move(callback));
        });
    if (!page.has_value()) return ReadStep::kWait;
    if (!page->ok()) return page->status();
    progress_.rows_seen += (*page)->rows_seen;
    progress_.cells_seen += (*page)->cells_seen;
    if (!(*page)->last_scanned_key.empty()) progress_.last_scanned_key = (*page)->last_scanned_key;
    if ((*page)->done) {
      ++next_;
      resume_.clear();
    } else if (!(*page)->last_scanned_key.empty()) {
      resume_ = (*page)->last_scanned_key;
    } else if (!(*page)->rows.empty()) {
      resume_ = (*page)->rows.back().key;
    }
    for (model::Row& r : (*page)->rows) buffer_.push_back(std::move(r));
    return ReadStep::kNoRow;
  }

  bool done() const override { return done_; }
  const ReadProgress& progress() const override { return progress_; }

 private:
  // Where the answer of the call Step started stands.
  enum class AskState { kIdle, kAsking, kParked, kAnswered };

  // One asynchronous call's answer for Step: the one a wake announced (in `*slot`), else
  // start(callback)'s — waited for without a waker; with one, taken if it came before start
  // returned, else nullopt (Step returns kWait; the callback keeps it in `*slot` and wakes).
  template <typename T>
  std::optional<T> Ask(std::optional<T>* slot,
                       const std::function<void(std::function<void(T)>)>& start) {
    {
      absl::MutexLock l(&mu_);
      if (state_ == AskState::kAnswered) return Take(slot);
    }
    if (wake_ == nullptr) {
      Waiter<T> waiter;
      start(waiter.Callback());
      return waiter.Wait();
    }
    {
      absl::MutexLock l(&mu_);
      state_ = AskState::kAsking;
    }
    start([this, slot](T value) {
      std::function<void()> wake;
      {
        absl::MutexLock l(&mu_);
        slot->emplace(std::move(value));
        if (state_ == AskState::kParked) wake = wake_;  // a copy: the call may end the stream
        state_ = AskState::kAnswered;
      }
      if (wake) wake();
    });
    absl::MutexLock l(&mu_);
    if (state_ == AskState::kAnswered) return Take(slot);
    state_ = AskState::kParked;
    return std::nullopt;
  }
  template <typename T>
  std::optional<T> Take(std::optional<T>* slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    state_ = AskState::kIdle;
    std::optional<T> value = std::move(*slot);
    slot->reset();
    return value;
  }

  Coordinator* const coordinator_;
  const AccessOptions options_;
  const int64_t deadline_us_;  // 0: none
  const TableSnapshot unrouted_;
  TableSnapshot table_;  // routed: null until the first Step has it
  const std::shared_ptr<model::RowFilter> filter_;
  const std::vector<model::RowRange> ranges_;
  const int64_t limit_;
  const bool reversed_;
  std::function<void()> wake_;  // set before the first Step, then never changed
  std::vector<size_t> order_;  // tablet indexes to visit
  size_t next_ = 0;
  std::string resume_;
  std::deque<model::Row> buffer_;
  ReadProgress progress_;
  bool done_ = false;

  absl::Mutex mu_;
  AskState state_ ABSL_GUARDED_BY(mu_) = AskState::kIdle;
  std::optional<StatusOr<TableSnapshot>> routed_ ABSL_GUARDED_BY(mu_);
  std::optional<StatusOr<ReadPage>> page_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

ClusterTableAccess::ClusterTableAccess(std::function<Coordinator*()> coordinator,
                                       LocalTableAccess* local)
    : coordinator_(std::move(coordinator)), local_(local) {}

StatusOr<Coordinator*> ClusterTableAccess::Get() const {
  Coordinator* c = coordinator_();
  if (c == nullptr) return absl::UnavailableError("this node is not serving its cluster's tables yet");
  return c;
}

Status ClusterTableAccess::Mutate(const catalog::TableInfo& table,
                                  const model::RowMutation& mutation,
                                  const AccessOptions& options) {
  // `table` outlives the wait, and the locator copies what it keeps.
  Waiter<Status> waiter;
  MutateAsync(TableSnapshot(&table, [](const catalog::TableInfo*) {}), mutation, options,
              /*blocking=*/nullptr, waiter.Callback());
  return waiter.Wait();
}

void ClusterTableAccess::MutateAsync(TableSnapshot table, model::RowMutation mutation,
                                     const AccessOptions& options, Executor* blocking,
                                     std::function<void(Status)> done) {
  StatusOr<Coordinator*> c = Get();
  if (!c.ok()) return done(c.status());
  auto m = std::make_shared<model::RowMutation>(std::move(mutation));
  const int64_t start_us = (*c)->clock()->MonotonicMicros();
  (*c)->locator()->Locate(*table, options.timeout_us,
                          [c = *c, m, options, start_us, blocking,
                           done = std::move(done)](StatusOr<TableSnapshot> routed) {
                            if (!routed.ok()) return done(routed.status());
                            c->Mutate(*std::move(routed), std::move(*m),
                                      LeftAfter(c, options, start_us), done, blocking);
                          });
}

std::vector<Status> ClusterTableAccess::MutateRows(const catalog::TableInfo& table,
                                                   std::span<const model::RowMutation> mutations,
                                                   const AccessOptions& options) {
  std::vector<Status> out(mutations.size());
  if (mutations.empty()) return out;
  StatusOr<Coordinator*> c = Get();
  if (!c.ok()) {
    out.assign(mutations.size(), c.status());
    return out;
  }
  AccessOptions left = options;
  StatusOr<TableSnapshot> routed = Route(*c, table, &left);
  if (!routed.ok()) {
    out.assign(mutations.size(), routed.status());
    return out;
  }
  const TableSnapshot& snapshot = *routed;
  const std::map<size_t, std::vector<size_t>> by_tablet = EntriesByTablet(*snapshot, mutations);
  // Each tablet's answer fills its entries; slots are distinct, so no lock is needed for them.
  absl::BlockingCounter pending(static_cast<int>(by_tablet.size()));
  for (const auto& [tablet_index, entries] : by_tablet) {
    std::vector<model::RowMutation> batch;
    batch.reserve(entries.size());
    for (size_t i : entries) batch.push_back(mutations[i]);
    // A pointer, not the binding: lambdas may not capture structured bindings before C++20's
    // P1091 (clang 16), and the thread-safety check builds with clang 14.
    const std::vector<size_t>* indexes = &entries;
    (*c)->MutateBatch(snapshot, tablet_index, std::move(batch), left,
                      [&out, &pending, indexes](std::vector<Status> statuses) {
                        for (size_t k = 0; k < indexes->size(); ++k) {
                          out[(*indexes)[k]] = std::move(statuses[k]);
                        }
                        pending.DecrementCount();
                      });
  }
  pending.Wait();
  return out;
}

StatusOr<bool> ClusterTableAccess::CheckAndMutate(const catalog::TableInfo& table,
                                                  std::string_view row_key,
                                                  model::RowFilter* predicate,
                                                  const model::RowMutation& on_true,
                                                  const model::RowMutation& on_false,
                                                  const AccessOptions& options) {
  ASSIGN_OR_RETURN(Coordinator * c, Get());
  AccessOptions left = options;
  ASSIGN_OR_RETURN(TableSnapshot routed, Route(c, table, &left));
  Waiter<StatusOr<bool>> waiter;
  c->CheckAndMutate(std::move(routed), std::string(row_key), Borrow(predicate), on_true, on_false,
                    left, waiter.Callback());
  return waiter.Wait();
}

StatusOr<model::Row> ClusterTableAccess::ReadModifyWrite(
    const catalog::TableInfo& table, std::string_view row_key,
    const std::vector<ReadModifyWriteRule>& rules, int64_t now_micros, size_t max_value_bytes,
    const AccessOptions& options) {
  ASSIGN_OR_RETURN(Coordinator * c, Get());
  AccessOptions left = options;
  ASSIGN_OR_RETURN(TableSnapshot routed, Route(c, table, &left));
  Waiter<StatusOr<model::Row>> waiter;
  c->ReadModifyWrite(std::move(routed), std::string(row_key), rules, now_micros, max_value_bytes,
                     left, waiter.Callback());
  return waiter.Wait();
}

StatusOr<std::unique_ptr<RowStream>> ClusterTableAccess::Read(TableSnapshot table,
                                                              ReadRequest request,
                                                              const AccessOptions& options) {
  ASSIGN_OR_RETURN(Coordinator * c, Get());
  return std::unique_ptr<RowStream>(
      std::make_unique<ClusterRowStream>(c, std::move(table), std::move(request), options));
}

StatusOr<std::vector<RowKeySample>> ClusterTableAccess::SampleRowKeys(
    const catalog::TableInfo& table, uint64_t every_bytes) {
  ASSIGN_OR_RETURN(Coordinator * c, Get());
  AccessOptions defaults;
  ASSIGN_OR_RETURN(TableSnapshot routed, Route(c, table, &defaults));
  return local_->SampleRowKeys(*routed, every_bytes);
}

StatusOr<uint64_t> ClusterTableAccess::DropRowRange(const catalog::TableInfo& table,
                                                    std::string_view prefix,
                                                    const AccessOptions& options) {
  ASSIGN_OR_RETURN(Coordinator * c, Get());
  // Each tablet's rows are deleted at its primary, row by row as replicated writes.
  AccessOptions left = options;
  ASSIGN_OR_RETURN(TableSnapshot snapshot, Route(c, table, &left));
  const model::RowRange range = model::RowRange::WithPrefix(prefix);
  uint64_t deleted = 0;
  for (size_t i : snapshot->TabletsOverlapping(range.start, range.end)) {
    Waiter<StatusOr<uint64_t>> waiter;
    c->DropRowRange(snapshot, i, std::string(prefix), left, waiter.Callback());
    ASSIGN_OR_RETURN(uint64_t n, waiter.Wait());
    deleted += n;
  }
  return deleted;
}

}  // namespace tessera::replication
