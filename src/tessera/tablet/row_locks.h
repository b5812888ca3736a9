// RowLocks: striped locks that make read-modify-write operations (CheckAndMutateRow,
// ReadModifyWriteRow) atomic on their row with respect to every other write of that row.
// replication::LocalTableAccess holds them (replication/local_table_access.h).
//
// Every write of a row holds the row's stripe around Engine::Apply:
//   * plain writes (MutateRow, MutateRows entries, DropRowRange's deletes) in shared mode —
//     they do not conflict with each other (Engine::Apply is atomic per row), so they still
//     group-commit together;
//   * read-modify-writes in exclusive mode around their read and their Apply — no other write
//     of the row can land between the two.
// A stripe is chosen by a hash of (table, row), so unrelated rows share a stripe now and then;
// that costs only waiting, never correctness. Memory is fixed: stripes, not a map of rows.
//
// Lock order: a caller holds one stripe, or (LockRowsForWrite, a batch of plain writes) several
// in shared mode, taken in increasing stripe index; a read-modify-write holds one. Every chain
// of waits therefore climbs the stripe indices, so stripes cannot deadlock among themselves. No
// other lock is taken while holding a stripe except inside the engine.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <cstddef>
#include <functional>
#include <algorithm>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace tessera::tablet {

class RowLocks {
 public:
  static constexpr size_t kDefaultStripes = 4096;

  // REQUIRES: stripes > 0.
  explicit RowLocks(size_t stripes = kDefaultStripes)
      : num_stripes_(stripes), stripes_(std::make_unique<Stripe[]>(stripes)) {}

  RowLocks(const RowLocks&) = delete;
  RowLocks& operator=(const RowLocks&) = delete;

  // Holds one row's stripe until destroyed; movable, so it can be returned.
  class [[nodiscard]] Guard {
   public:
    Guard(Guard&& other) noexcept : mu_(other.mu_), exclusive_(other.exclusive_) {
      other.mu_ = nullptr;
    }
    Guard& operator=(Guard&&) = delete;
    Guard(const Guard&) = delete;
    ~Guard() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      if (mu_ == nullptr) return;
      if (exclusive_) {
        mu_->Unlock();
      } else {
        mu_->ReaderUnlock();
      }
    }

   private:
    friend class RowLocks;
    Guard(absl::Mutex* mu, bool exclusive) : mu_(mu), exclusive_(exclusive) {}
    absl::Mutex* mu_;
    bool exclusive_;
  };

  // For a plain write of (table, row): shared with other plain writes of rows in the stripe.
  Guard LockForWrite(std::string_view table, std::string_view row) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    absl::Mutex* mu = &StripeFor(table, row);
    mu->ReaderLock();
    return Guard(mu, false);
  }

  // For plain writes of several rows of `table` at once (a MutateRows batch): LockForWrite on
  // the stripe of each of `rows`, each distinct stripe once, in increasing stripe order.
  template <typename Rows>
  std::vector<Guard> LockRowsForWrite(std::string_view table,
                                      const Rows& rows) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    std::vector<size_t> indexes;
    indexes.reserve(std::size(rows));
    for (std::string_view row : rows) indexes.push_back(Index(table, row));
    std::sort(indexes.begin(), indexes.end());
    indexes.erase(std::unique(indexes.begin(), indexes.end()), indexes.end());
    std::vector<Guard> guards;
    guards.reserve(indexes.size());
    for (size_t i : indexes) {
      absl::Mutex* mu = &stripes_[i].mu;
      mu->ReaderLock();
      guards.push_back(Guard(mu, false));
    }
    return guards;
  }

  // For a read-modify-write of (table, row): excludes every other write of the stripe.
  Guard LockForReadModifyWrite(std::string_view table,
                               std::string_view row) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    absl::Mutex* mu = &StripeFor(table, row);
    mu->Lock();
    return Guard(mu, true);
  }

  // The stripe index of (table, row); exposed for tests.
  size_t StripeIndexForTesting(std::string_view table, std::string_view row) const {
    return Index(table, row);
  }
  size_t num_stripes() const { return num_stripes_; }

 private:
  // One mutex per cache line, so that neighbouring stripes do not share one.
  struct alignas(64) Stripe {
    absl::Mutex mu;
  };

  size_t Index(std::string_view table, std::string_view row) const {
    const size_t h1 = std::hash<std::string_view>()(table);
    const size_t h2 = std::hash<std::string_view>()(row);
    // Mix (boost's hash_combine constant), then reduce.
    const size_t h = h2 ^ (h1 + 0x9e3779b97f4a7c15ull + (h2 << 6) + (h2 >> 2));
    return h % num_stripes_;
  }
  absl::Mutex& StripeFor(std::string_view table, std::string_view row) {
    return stripes_[Index(table, row)].mu;
  }

  const size_t num_stripes_;
  const std::unique_ptr<Stripe[]> stripes_;
};

}  // namespace tessera::tablet
