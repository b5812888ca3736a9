// A one-line progress display for long scans and counts: "<n> rows  (<rate> rows/s)" rewritten
// in place on a terminal (carriage return + erase line), throttled, and erased when done.
// Nothing is drawn for operations shorter than the start delay, so quick commands print
// nothing extra.
//
// Thread-safety: one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace tessera::cli::shell {

class Progress {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    bool enabled = false;                          // off: Add() and Finish() do nothing
    std::chrono::milliseconds start_delay{500};    // first draw no sooner than this
    std::chrono::milliseconds interval{200};       // then at most once per interval
    std::function<Clock::time_point()> now = [] { return Clock::now(); };
  };

  // `out` (stderr) must outlive the Progress.
  Progress(std::FILE* out, Options options);
  ~Progress() { Finish(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Counts `n` more rows; draws if due.
  void Add(int64_t n = 1);
  // Erases the line if anything was drawn. Idempotent.
  void Finish();

  int64_t count() const { return count_; }
  int draws() const { return draws_; }

  // The text drawn for `count` rows after `elapsed` (no control characters), e.g.
  // "12,345 rows  (4,567 rows/s)".
  static std::string Text(int64_t count, std::chrono::nanoseconds elapsed);

 private:
  std::FILE* const out_;
  const Options options_;
  const Clock::time_point start_;
  Clock::time_point last_draw_;
  int64_t count_ = 0;
  int draws_ = 0;
  bool drawn_ = false;
};

// 1234567 -> "1,234,567".
std::string GroupThousands(int64_t n);

}  // namespace tessera::cli::shell
