#include "tessera/replication/cluster_table_access.h"

#include <atomic>
#include <deque>
#include <map>
#include <utility>

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

// Finds `table`'s tablets as METADATA names them (tablet_locator.h), the snapshot the
// coordinator's operations take, and gives it to `then` with `options` holding the time left.
void Located(Coordinator* c, const catalog::TableInfo& table, const AccessOptions& options,
             std::function<void(StatusOr<TableSnapshot> routed, const AccessOptions& left)> then) {
  const int64_t start_us = c->clock()->MonotonicMicros();
  c->locator()->Locate(table, options.timeout_us,
                       [c, options, start_us, then = std::move(then)](StatusOr<TableSnapshot> r) {
                         then(std::move(r), LeftAfter(c, options, start_us));
                       });
}

// A snapshot of `table` that does not own it, for a synchronous call that waits for its
// asynchronous form (the locator copies what it keeps).
TableSnapshot Unowned(const catalog::TableInfo& table) {
  return TableSnapshot(&table, [](const catalog::TableInfo*) {});
}

// Located, waited for: the routed table, and in `*options` the time left.
StatusOr<TableSnapshot> Route(Coordinator* c, const catalog::TableInfo& table,
                              AccessOptions* options) {
  Waiter<StatusOr<TableSnapshot>> waiter;
  Located(c, table, *options, [options, done = waiter.Callback()](
                                  StatusOr<TableSnapshot> routed, const AccessOptions& left) {
    *options = left;
    done(std::move(routed));
  });
  return waiter.Wait();
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
  Waiter<Status> waiter;
  MutateAsync(Unowned(table), mutation, options, /*blocking=*/nullptr, waiter.Callback());
  return waiter.Wait();
}

void ClusterTableAccess::MutateAsync(TableSnapshot table, model::RowMutation mutation,
                                     const AccessOptions& options, Executor* blocking,
                                     std::function<void(Status)> done) {
  StatusOr<Coordinator*> c = Get();
  if (!c.ok()) return done(c.status());
  auto m = std::make_shared<model::RowMutation>(std::move(mutation));
  Located(*c, *table, options,
          [c = *c, m, blocking, done = std::move(done)](StatusOr<TableSnapshot> routed,
                                                         const AccessOptions& left) mutable {
            if (!routed.ok()) return done(routed.status());
            c->Mutate(*std::move(routed), std::move(*m), left, std::move(done), blocking);
          });
}

std::vector<Status> ClusterTableAccess::MutateRows(const catalog::TableInfo& table,
                                                   std::span<const model::RowMutation> mutations,
                                                   const AccessOptions& options) {
  Waiter<std::vector<Status>> waiter;
  MutateRowsAsync(Unowned(table), std::vector<model::RowMutation>(mutations.begin(), mutations.end()),
                  options, /*blocking=*/nullptr, waiter.Callback());
  return waiter.Wait();
}

void ClusterTableAccess::MutateRowsAsync(TableSnapshot table,
                                         std::vector<model::RowMutation> mutations,
                                         const AccessOptions& options, Executor* blocking,
                                         std::function<void(std::vector<Status>)> done) {
  if (mutations.empty()) return done({});
  StatusOr<Coordinator*> c = Get();
  if (!c.ok()) return done(std::vector<Status>(mutations.size(), c.status()));
  auto ms = std::make_shared<std::vector<model::RowMutation>>(std::move(mutations));
  Located(*c, *table, options,
          [c = *c, ms, blocking, done = std::move(done)](StatusOr<TableSnapshot> routed,
                                                          const AccessOptions& left) mutable {
            if (!routed.ok()) return done(std::vector<Status>(ms->size(), routed.status()));
            // Each tablet's answer fills its entries (distinct slots); the last one answers.
            struct Batches {
              std::vector<Status> out;
              std::atomic<size_t> pending{0};
              std::function<void(std::vector<Status>)> done;
            };
            auto b = std::make_shared<Batches>();
            b->out.resize(ms->size());
            b->done = std::move(done);
            const std::map<size_t, std::vector<size_t>> by_tablet = EntriesByTablet(**routed, *ms);
            b->pending.store(by_tablet.size());
            for (const auto& [tablet_index, entries] : by_tablet) {
              std::vector<model::RowMutation> batch;
              batch.reserve(entries.size());
              for (size_t i : entries) batch.push_back(std::move((*ms)[i]));
              // Copied, not the binding: lambdas may not capture structured bindings before
              // C++20's P1091 (clang 16), and the thread-safety check builds with clang 14.
              c->MutateBatch(*routed, tablet_index, std::move(batch), left,
                             [b, indexes = entries](std::vector<Status> statuses) {
                               for (size_t k = 0; k < indexes.size(); ++k) {
                                 b->out[indexes[k]] = std::move(statuses[k]);
                               }
                               if (b->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
                                 b->done(std::move(b->out));
                               }
                             },
                             blocking);
            }
          });
}

StatusOr<bool> ClusterTableAccess::CheckAndMutate(const catalog::TableInfo& table,
                                                  std::string_view row_key,
                                                  model::RowFilter* predicate,
                                                  const model::RowMutation& on_true,
                                                  const model::RowMutation& on_false,
                                                  const AccessOptions& options) {
  Waiter<StatusOr<bool>> waiter;
  CheckAndMutateAsync(Unowned(table), std::string(row_key), Borrow(predicate), on_true, on_false,
                      options, /*blocking=*/nullptr, waiter.Callback());
  return waiter.Wait();
}

void ClusterTableAccess::CheckAndMutateAsync(TableSnapshot table, std::string row_key,
                                             std::shared_ptr<model::RowFilter> predicate,
                                             model::RowMutation on_true,
                                             model::RowMutation on_false,
                                             const AccessOptions& options, Executor* blocking,
                                             std::function<void(StatusOr<bool>)> done) {
  StatusOr<Coordinator*> c = Get();
  if (!c.ok()) return done(c.status());
  auto args = std::make_shared<std::pair<model::RowMutation, model::RowMutation>>(
      std::move(on_true), std::move(on_false));
  Located(*c, *table, options,
          [c = *c, row_key = std::move(row_key), predicate = std::move(predicate), args, blocking,
           done = std::move(done)](StatusOr<TableSnapshot> routed,
                                   const AccessOptions& left) mutable {
            if (!routed.ok()) return done(routed.status());
            c->CheckAndMutate(*std::move(routed), row_key, predicate, std::move(args->first),
                              std::move(args->second), left, std::move(done), blocking);
          });
}

StatusOr<model::Row> ClusterTableAccess::ReadModifyWrite(
    const catalog::TableInfo& table, std::string_view row_key,
    const std::vector<ReadModifyWriteRule>& rules, int64_t now_micros, size_t max_value_bytes,
    const AccessOptions& options) {
  Waiter<StatusOr<model::Row>> waiter;
  ReadModifyWriteAsync(Unowned(table), std::string(row_key), rules, now_micros, max_value_bytes,
                       options, /*blocking=*/nullptr, waiter.Callback());
  return waiter.Wait();
}

void ClusterTableAccess::ReadModifyWriteAsync(TableSnapshot table, std::string row_key,
                                              std::vector<ReadModifyWriteRule> rules,
                                              int64_t now_micros, size_t max_value_bytes,
                                              const AccessOptions& options, Executor* blocking,
                                              std::function<void(StatusOr<model::Row>)> done) {
  StatusOr<Coordinator*> c = Get();
  if (!c.ok()) return done(c.status());
  auto r = std::make_shared<std::vector<ReadModifyWriteRule>>(std::move(rules));
  Located(*c, *table, options,
          [c = *c, row_key = std::move(row_key), r, now_micros, max_value_bytes, blocking,
           done = std::move(done)](StatusOr<TableSnapshot> routed,
                                   const AccessOptions& left) mutable {
            if (!routed.ok()) return done(routed.status());
            c->ReadModifyWrite(*std::move(routed), row_key, std::move(*r), now_micros,
                               max_value_bytes, left, std::move(done), blocking);
          });
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
