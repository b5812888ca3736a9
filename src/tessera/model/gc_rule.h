// A column family's garbage-collection rule, as in Bigtable's GcRule: which cell versions may be
// dropped. Rules nest to any depth (bounded at kMaxDepth when decoded or parsed):
//
//   None                  keep everything
//   MaxNumVersions(n)     collect a version when n newer versions exist in its column (n >= 1)
//   MaxAge(a)             collect a cell whose timestamp is more than `a` micros before now
//   Union(r1, r2, ...)    collect if any child would (an empty union collects nothing)
//   Intersection(r1, ...) collect if every child would (an empty intersection collects nothing)
//
// GC is lazy (docs/data_model.md): a collectable cell may stay readable until a compaction
// drops it.
//
// Text forms:
//   ToString() prints cbt's notation: "versions() > 2", "age() > 1d", "(age() > 1d || versions()
//   > 3)", "(... && ...)", "never".
//   Parse() accepts that notation and the shell's: "maxversions=2", "maxage=1d12h",
//   "maxage=1d or maxversions=3", "maxage=7d and maxversions=2", "never", with parentheses;
//   "and"/"&&" binds tighter than "or"/"||". Durations are a sequence of <integer><unit> with
//   units d, h, m, s, ms, us.
//
// Thread-safety: an immutable value after construction; const methods may run concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/util/status.h"

namespace tessera::model {

class GcRule {
 public:
  enum class Kind : uint8_t {
    kNone = 0,
    kMaxNumVersions = 1,
    kMaxAge = 2,
    kUnion = 3,
    kIntersection = 4,
  };
  static constexpr int kMaxDepth = 32;

  GcRule() = default;  // None

  static GcRule None() { return GcRule(); }
  // REQUIRES: n >= 1 (Validate() reports violations).
  static GcRule MaxNumVersions(int n);
  // REQUIRES: max_age_micros > 0.
  static GcRule MaxAge(int64_t max_age_micros);
  static GcRule Union(std::vector<GcRule> rules);
  static GcRule Intersection(std::vector<GcRule> rules);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  int max_num_versions() const { return static_cast<int>(value_); }  // kMaxNumVersions
  int64_t max_age_micros() const { return value_; }                  // kMaxAge
  const std::vector<GcRule>& rules() const { return rules_; }        // kUnion, kIntersection

  // Whether a cell may be collected. `version_rank` is the number of visible versions newer than
  // it in its column (0 = the newest); the cell's timestamp and now are in micros.
  bool ShouldCollect(int64_t version_rank, int64_t cell_timestamp_micros, int64_t now_micros) const;

  // InvalidArgument naming the problem if a limit is out of range or nesting exceeds kMaxDepth.
  Status Validate() const;

  // Binary form (for the manifest):
  //   rule := kind(1 byte) body
  //   body := ""                          kNone
  //         | varint32(n)                 kMaxNumVersions, n >= 1
  //         | varint64(micros)            kMaxAge, micros > 0 (as uint64)
  //         | varint32(count) rule*count  kUnion, kIntersection
  void EncodeTo(std::string* dst) const;
  std::string Encode() const;
  // Decodes exactly one rule spanning all of `encoded`. DataLoss on malformed input, including
  // nesting deeper than kMaxDepth or a child count larger than the remaining bytes.
  static StatusOr<GcRule> Decode(std::string_view encoded);

  std::string ToString() const;
  // InvalidArgument with the position of the problem on bad input.
  static StatusOr<GcRule> Parse(std::string_view text);

  bool operator==(const GcRule& other) const;

 private:
  Kind kind_ = Kind::kNone;
  int64_t value_ = 0;
  std::vector<GcRule> rules_;
};

// Formats micros as a sequence of units, largest first: 90 minutes -> "1h30m", 1 day -> "1d",
// 1500 micros -> "1ms500us", 0 -> "0s". Parsed back by ParseDuration.
std::string FormatDurationMicros(int64_t micros);
// Parses "1d", "36h", "1h30m", "250ms", "10us"; InvalidArgument on bad input or overflow.
StatusOr<int64_t> ParseDurationMicros(std::string_view text);

}  // namespace tessera::model
