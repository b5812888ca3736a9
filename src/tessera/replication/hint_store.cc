#include "tessera/replication/hint_store.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "tessera/util/logging.h"

namespace tessera::replication {

HintStore::HintStore(HintLog* log, Clock* clock, HintStoreOptions options)
    : log_(log), clock_(clock), options_(options) {
  tokens_ = static_cast<double>(options_.burst_bytes);
  refilled_at_us_ = clock_->MonotonicMicros();
  disk_ = log_->Stats();
}

void HintStore::Spill(uint64_t tablet_id, uint64_t first, uint64_t last, int64_t written_at_us,
                      std::string mutation) {
  absl::MutexLock l(&mu_);
  Pending& p = pending_[tablet_id];
  if (!p.records.empty() && p.records.rbegin()->second.last + 1 != first) {
    p.records.clear();
    p.bytes = 0;
  }
  p.bytes += mutation.size();
  p.records.insert_or_assign(first,
                             HintRecord{tablet_id, first, last, written_at_us, std::move(mutation)});
}

bool HintStore::Holds(uint64_t tablet_id, uint64_t sequence) const {
  absl::MutexLock l(&mu_);
  if (auto p = pending_.find(tablet_id); p != pending_.end()) {
    auto it = p->second.records.upper_bound(sequence);
    if (it != p->second.records.begin() && std::prev(it)->second.last >= sequence) return true;
  }
  auto d = disk_.find(tablet_id);
  return d != disk_.end() && d->second.first <= sequence && sequence <= d->second.last;
}

HintTabletStats HintStore::Stats(uint64_t tablet_id) const {
  absl::MutexLock l(&mu_);
  HintTabletStats s;
  if (auto d = disk_.find(tablet_id); d != disk_.end()) s = d->second;
  if (auto p = pending_.find(tablet_id); p != pending_.end() && !p->second.records.empty()) {
    if (s.records == 0) s.first = p->second.records.begin()->second.first;
    s.last = std::max(s.last, p->second.records.rbegin()->second.last);
    s.bytes += p->second.bytes;
    s.records += p->second.records.size();
  }
  return s;
}

uint64_t HintStore::TakeBudget(uint64_t want) {
  if (options_.delivery_bytes_per_s == 0) return want;
  absl::MutexLock l(&mu_);
  const int64_t now = clock_->MonotonicMicros();
  tokens_ = std::min(static_cast<double>(options_.burst_bytes),
                     tokens_ + static_cast<double>(options_.delivery_bytes_per_s) *
                                   static_cast<double>(now - refilled_at_us_) / 1e6);
  refilled_at_us_ = now;
  if (tokens_ < 1) return 0;
  const uint64_t give = std::min<uint64_t>(want, static_cast<uint64_t>(tokens_));
  tokens_ -= static_cast<double>(give);
  return give;
}

void HintStore::Settle(uint64_t taken, uint64_t used) {
  if (options_.delivery_bytes_per_s == 0) return;
  absl::MutexLock l(&mu_);
  tokens_ += static_cast<double>(taken) - static_cast<double>(used);
}

void HintStore::Refresh() {
  std::map<uint64_t, HintTabletStats> stats = log_->Stats();
  absl::MutexLock l(&mu_);
  disk_ = std::move(stats);
}

void HintStore::Flush() {
  std::map<uint64_t, std::vector<HintRecord>> work;
  {
    absl::MutexLock l(&mu_);
    for (auto& [id, p] : pending_) {
      for (const auto& [first, r] : p.records) work[id].push_back(r);
    }
  }
  if (work.empty()) return;
  const std::map<uint64_t, HintTabletStats> disk = log_->Stats();
  for (auto& [id, records] : work) {
    auto d = disk.find(id);
    // After a restart the memory may hold again what the log holds.
    const uint64_t on_disk = d != disk.end() ? d->second.last : 0;
    auto from = std::find_if(records.begin(), records.end(),
                             [&](const HintRecord& r) { return r.first > on_disk; });
    Status s;
    if (from != records.end() && d != disk.end() && from->first != on_disk + 1) {
      // The run on disk ended before a mutation that nobody needed: it is not needed either.
      s = log_->DropTablet(id);
    }
    if (s.ok() && from != records.end()) {
      s = log_->Append(id, std::span<const HintRecord>(records).subspan(
                               static_cast<size_t>(from - records.begin())));
    }
    if (!s.ok()) {
      TLOG_WARN("hints: tablet {:016x}: {}; dropping {} pending hints (a peer that needs them is "
                "rebuilt)",
                id, s.ToString(), records.size());
    }
    absl::MutexLock l(&mu_);
    auto p = pending_.find(id);
    if (p == pending_.end()) continue;
    for (const HintRecord& r : records) {
      auto it = p->second.records.find(r.first);
      if (it == p->second.records.end() || it->second.last != r.last) continue;
      p->second.bytes -= it->second.mutation.size();
      p->second.records.erase(it);
    }
    if (p->second.records.empty()) pending_.erase(p);
  }
  Refresh();
}

StatusOr<std::vector<HintRecord>> HintStore::Read(uint64_t tablet_id, uint64_t sequence,
                                                  size_t max_bytes) const {
  {
    absl::MutexLock l(&mu_);
    if (auto p = pending_.find(tablet_id); p != pending_.end()) {
      auto it = p->second.records.upper_bound(sequence);
      if (it != p->second.records.begin() && std::prev(it)->second.last >= sequence) {
        std::vector<HintRecord> out;
        size_t bytes = 0;
        for (it = std::prev(it); it != p->second.records.end() && (out.empty() || bytes < max_bytes);
             ++it) {
          bytes += it->second.mutation.size();
          out.push_back(it->second);
        }
        return out;
      }
    }
  }
  return log_->Read(tablet_id, sequence, max_bytes);
}

void HintStore::DropThrough(uint64_t tablet_id, uint64_t sequence) {
  {
    absl::MutexLock l(&mu_);
    auto p = pending_.find(tablet_id);
    if (p != pending_.end()) {
      auto& records = p->second.records;
      while (!records.empty() && records.begin()->second.last <= sequence) {
        p->second.bytes -= records.begin()->second.mutation.size();
        records.erase(records.begin());
      }
      if (records.empty()) pending_.erase(p);
    }
    auto d = disk_.find(tablet_id);
    if (d == disk_.end() || d->second.first > sequence) return;  // nothing on disk to drop
  }
  if (Status s = log_->DropThrough(tablet_id, sequence); !s.ok()) {
    TLOG_WARN("hints: tablet {:016x}: dropping what every replica has: {}", tablet_id, s.ToString());
  }
  Refresh();
}

void HintStore::DropTablet(uint64_t tablet_id) {
  {
    absl::MutexLock l(&mu_);
    pending_.erase(tablet_id);
  }
  if (Status s = log_->DropTablet(tablet_id); !s.ok()) {
    TLOG_WARN("hints: tablet {:016x}: dropping its hints: {}", tablet_id, s.ToString());
  }
  Refresh();
}

void HintStore::Maintain() {
  const int64_t cutoff = clock_->NowMicros() - options_.window_us;
  {
    absl::MutexLock l(&mu_);
    for (auto p = pending_.begin(); p != pending_.end();) {
      auto& records = p->second.records;
      while (!records.empty() && records.begin()->second.appended_at_us < cutoff) {
        p->second.bytes -= records.begin()->second.mutation.size();
        records.erase(records.begin());
      }
      p = records.empty() ? pending_.erase(p) : std::next(p);
    }
  }
  const uint64_t before = log_->total_bytes();
  if (Status s = log_->DropWrittenBefore(cutoff); !s.ok()) {
    TLOG_WARN("hints: dropping hints older than the window: {}", s.ToString());
  }
  if (Status s = log_->DropToSize(options_.max_bytes); !s.ok()) {
    TLOG_WARN("hints: dropping hints beyond the size limit: {}", s.ToString());
  }
  if (const uint64_t after = log_->total_bytes(); after != before) {
    TLOG_INFO("hints: dropped {} bytes of hints past the window or the size limit ({} left)",
              before - after, after);
    Refresh();
  }
}

}  // namespace tessera::replication
