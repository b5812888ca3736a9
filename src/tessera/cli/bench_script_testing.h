// Test-only: runs one of the server benchmark scripts (scripts/bench_server.sh,
// scripts/bench_cluster.sh) with the tessera binary of this build and reads the JSON lines it
// prints, for the script tests (bench_server_script_test, bench_cluster_script_test).
//
// Thread-safety: RunBenchScript may run concurrently (each run has its own process).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tessera/testing/test_servers.h"

namespace tessera::cli {

// Runs TESSERA_SOURCE_DIR/scripts/<script> with TESSERA set to this build's binary (not
// rebuilt) and `env` added, bounded by `timeout`. Adds a fatal failure if it cannot run or
// exits non-zero; otherwise sets *lines to the objects of its stdout lines that start with
// '{' and *out to all of its stdout. Callers return on HasFatalFailure().
inline void RunBenchScript(const std::string& script, std::vector<std::string> env,
                           std::chrono::minutes timeout, std::vector<nlohmann::json>* lines,
                           std::string* out) {
  env.push_back("TESSERA=" TESSERA_BINARY_PATH);
  env.push_back("TESSERA_NO_BUILD=1");
  StatusOr<testing::ProcessResult> r =
      testing::RunProcess({"/bin/bash", TESSERA_SOURCE_DIR "/scripts/" + script}, "", env, timeout);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->exit_code, 0) << r->err << r->out;
  *out = r->out;
  size_t begin = 0;
  while (begin < out->size()) {
    size_t end = out->find('\n', begin);
    if (end == std::string::npos) end = out->size();
    if (end > begin && (*out)[begin] == '{') {
      lines->push_back(nlohmann::json::parse(out->substr(begin, end - begin)));
    }
    begin = end + 1;
  }
}

// A "kind":"run" line of either script: its operations ran, none failed, and the servers' CPU
// per operation was measured.
inline void ExpectCleanRun(const nlohmann::json& run) {
  const std::string line = run.dump();
  EXPECT_EQ(run["errors"], 0) << line;
  EXPECT_GT(run["ops"].get<int>(), 0) << line;
  EXPECT_GT(run["throughput"].get<double>(), 0) << line;
  EXPECT_GE(run["server_cpu_us_per_op"].get<double>(), 0) << line;
}

}  // namespace tessera::cli
