// Everything nondeterministic a library touches, passed in as one value: the file system, the
// clock, the executor (background work and timers) and a seed for randomness. A server gets
// the real ones (SystemEnv); a simulation gives every node the in-memory file system, a
// ManualClock and a SimExecutor, so that whole nodes run in one process, replayably from one
// seed (docs/simulation.md). Code that takes an Env starts no thread, sleeps on no real clock and
// seeds no generator of its own.
//
// Lifetime: an Env is a bundle of pointers; the objects must outlive everything given the Env.
// Thread-safety: the pointed-to objects are thread-safe (their own headers say so); an Env
// value is immutable once built.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "tessera/util/clock.h"
#include "tessera/util/executor.h"
#include "tessera/util/file_system.h"
#include "tessera/util/random.h"

namespace tessera {

struct Env {
  FileSystem* fs = nullptr;
  Clock* clock = nullptr;
  Executor* executor = nullptr;
  uint64_t seed = 0;

  // A generator for one purpose ("gossip", "election", ...): the same (seed, stream) always
  // gives the same numbers, and different streams are independent, so adding randomness in
  // one component does not shift another's. Each caller owns its generator.
  Random NewRandom(std::string_view stream) const;
};

// The real machine: PosixFileSystem, SystemClock, a thread pool of `threads`, and a seed from
// the operating system's entropy. Owns the pool; env() is valid while the SystemEnv lives.
class SystemEnv {
 public:
  explicit SystemEnv(int threads);
  const Env& env() const { return env_; }

 private:
  std::unique_ptr<Executor> pool_;
  Env env_;
};

}  // namespace tessera
