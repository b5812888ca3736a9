#include "tessera/cli/ycsb_generators.h"

#include <algorithm>
#include <cmath>

namespace tessera::cli::ycsb {

uint64_t FnvHash64(uint64_t v) {
  constexpr uint64_t kOffsetBasis = 0xcbf29ce484222325ull;
  constexpr uint64_t kPrime = 1099511628211ull;
  uint64_t h = kOffsetBasis;
  for (int i = 0; i < 8; i++) {
    h ^= v & 0xff;
    h *= kPrime;
    v >>= 8;
  }
  // Java's Math.abs on the signed value (2^63 stays 2^63, as the unsigned reading of MIN_VALUE).
  return (h >> 63) != 0 ? 0 - h : h;
}

void KeyName(uint64_t keynum, std::string* out) {
  char digits[20];
  int n = 0;
  uint64_t h = FnvHash64(keynum);
  do {
    digits[n++] = static_cast<char>('0' + h % 10);
    h /= 10;
  } while (h != 0);
  out->assign("user");
  while (n > 0) out->push_back(digits[--n]);
}

std::string KeyName(uint64_t keynum) {
  std::string key;
  KeyName(keynum, &key);
  return key;
}

double NextDouble(Random* rng) { return static_cast<double>(rng->Next64() >> 11) * 0x1.0p-53; }

// ---------------------------------------------------------------------------------------------

ZipfianGenerator::ZipfianGenerator(uint64_t min, uint64_t max, double theta)
    : ZipfianGenerator(min, max, theta, Zeta(0, max - min + 1, theta)) {}

ZipfianGenerator::ZipfianGenerator(uint64_t min, uint64_t max, double theta, double zetan)
    : base_(min),
      items_(max - min + 1),
      theta_(theta),
      alpha_(1.0 / (1.0 - theta)),
      zeta2theta_(Zeta(0, 2, theta)),
      count_for_zeta_(items_),
      zetan_(zetan) {
  SetEta();
}

double ZipfianGenerator::Zeta(uint64_t from, uint64_t to, double theta, double initial) {
  double sum = initial;
  for (uint64_t i = from; i < to; i++) sum += 1.0 / std::pow(static_cast<double>(i + 1), theta);
  return sum;
}

void ZipfianGenerator::SetEta() {
  // With one or two items Next never reaches the formula that uses eta (see NextOf).
  eta_ = (1.0 - std::pow(2.0 / static_cast<double>(count_for_zeta_), 1.0 - theta_)) /
         (1.0 - zeta2theta_ / zetan_);
}

uint64_t ZipfianGenerator::NextOf(Random* rng, uint64_t item_count) {
  if (item_count != count_for_zeta_) {
    zetan_ = item_count > count_for_zeta_ ? Zeta(count_for_zeta_, item_count, theta_, zetan_)
                                          : Zeta(0, item_count, theta_);
    count_for_zeta_ = item_count;
    SetEta();
  }
  // Gray et al.: the first two items by their exact probabilities, the rest by the inverse of
  // an approximation of the cumulative distribution.
  const double u = NextDouble(rng);
  const double uz = u * zetan_;
  if (uz < 1.0) return base_;
  if (uz < 1.0 + std::pow(0.5, theta_)) return base_ + 1;
  const double scaled = static_cast<double>(item_count) * std::pow(eta_ * u - eta_ + 1.0, alpha_);
  const uint64_t offset = static_cast<uint64_t>(scaled);
  return base_ + std::min(offset, item_count - 1);
}

ScrambledZipfianGenerator::ScrambledZipfianGenerator(uint64_t min, uint64_t max)
    : min_(min),
      count_(max - min + 1),
      zipfian_(0, kItemCount - 1, ZipfianGenerator::kZipfianConstant, kZetan) {}

// ---------------------------------------------------------------------------------------------

void AcknowledgedCounter::Acknowledge(uint64_t v) {
  absl::MutexLock lock(&mu_);
  uint64_t last = last_.load(std::memory_order_relaxed);
  if (v != last + 1) {
    ahead_.insert(v);
    return;
  }
  last = v;
  while (!ahead_.empty() && *ahead_.begin() == last + 1) {
    last = *ahead_.begin();
    ahead_.erase(ahead_.begin());
  }
  last_.store(last, std::memory_order_release);
}

// ---------------------------------------------------------------------------------------------

namespace {
constexpr size_t kValueBufferSize = 1 << 16;
}  // namespace

ValueGenerator::ValueGenerator(uint64_t seed, size_t value_size)
    : rng_(seed), value_size_(value_size) {
  buffer_.resize(kValueBufferSize + value_size);
  for (char& c : buffer_) c = static_cast<char>(' ' + rng_.Uniform('~' - ' ' + 1));
}

std::string_view ValueGenerator::Next() {
  const size_t offset = rng_.Uniform(kValueBufferSize);
  return std::string_view(buffer_).substr(offset, value_size_);
}

}  // namespace tessera::cli::ycsb
