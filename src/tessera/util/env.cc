#include "tessera/util/env.h"

#include <random>

namespace tessera {
namespace {

// splitmix64's finaliser: spreads (seed, stream) over all 64 bits.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

Random Env::NewRandom(std::string_view stream) const {
  uint64_t h = Mix(seed);
  for (unsigned char c : stream) h = Mix(h ^ c);
  return Random(h);
}

SystemEnv::SystemEnv(int threads) : pool_(NewThreadPoolExecutor(threads)) {
  std::random_device entropy;
  env_.fs = PosixFileSystem();
  env_.clock = SystemClock();
  env_.executor = pool_.get();
  env_.seed = (uint64_t{entropy()} << 32) ^ entropy();
}

}  // namespace tessera
