#!/usr/bin/env bash
# Builds tessera_engine_bench in an already configured build directory and runs it with its
# default settings (Tessera vs RocksDB vs LevelDB, 1M keys), then prints Tessera's throughput
# relative to the best peer per benchmark. Used by `make bench`. Then runs the server
# benchmark, scripts/bench_server.sh (tessera bench against `tessera serve` and the emulator),
# and the cluster benchmark, scripts/bench_cluster.sh (3 nodes at RF 3 against one node).
#
#   scripts/bench.sh [extra tessera_engine_bench flags, e.g. --num 100000]
#
# Then fillrandom, readrandom and readseq again at 10 M keys (the second configuration).
#
# Environment: BUILD_DIR (default: build), BENCH_OUT (the JSON lines; default:
# $BUILD_DIR/engine_bench.jsonl; the second configuration's go beside it, *_large.jsonl),
# BENCH_LARGE_NUM (keys of the second configuration; default 10000000, 0 skips it).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
BENCH_OUT="${BENCH_OUT:-$BUILD_DIR/engine_bench.jsonl}"

if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  echo "bench.sh: $BUILD_DIR is not a configured build directory" >&2
  exit 1
fi
cmake --build "$BUILD_DIR" --target tessera_engine_bench

# Prints the table of one engine run's JSON lines: Tessera against the best peer per benchmark,
# peak memory and the amplification lines.
summarize() {
python3 - "$1" <<'PY'
import json
import sys

results, memory, ratios, amplification = {}, {}, {}, []
with open(sys.argv[1]) as f:
    for line in f:
        line = line.strip()
        if not line:
            continue
        r = json.loads(line)
        if r["engine"] == "ratio":
            ratios[r["benchmark"]] = r
        elif r["benchmark"] == "peak_memory":
            memory[r["engine"]] = r["peak_rss_mb"]
        elif r["benchmark"] == "amplification":
            amplification.append(r)
        else:
            results.setdefault(r["benchmark"], {})[r["engine"]] = r

print()
if not ratios:
    print("no ratios: tessera and at least one peer must both run")
    sys.exit(0)
print(f"{'benchmark':<12} {'tessera ops/s':>14} {'best peer':>10} {'peer ops/s':>12} {'ratio':>7}")
for name, r in ratios.items():
    if name == "peak_memory":
        continue
    ours = results[name]["tessera"]["ops_per_sec"]
    peer = results[name][r["best_peer"]]["ops_per_sec"]
    print(f"{name:<12} {ours:>14.0f} {r['best_peer']:>10} {peer:>12.0f} "
          f"{r['tessera_vs_best_peer']:>6.2f}x")
if "peak_memory" in ratios:
    r = ratios["peak_memory"]
    print(f"{'peak RSS MB':<12} {memory['tessera']:>14.1f} {r['best_peer']:>10} "
          f"{memory[r['best_peer']]:>12.1f} {r['tessera_vs_best_peer']:>6.2f}x")
print("ratio: tessera / best peer; above 1 is faster (peak RSS: below 1 is smaller)")
if amplification:
    print()
    print(f"{'after':<12} {'engine':<8} {'write amp':>9} {'compaction':>10} {'space amp':>9}")
    for a in amplification:
        c = a["compaction_write_amplification"]
        print(f"{a['after']:<12} {a['engine']:<8} {a['write_amplification']:>9.2f} "
              f"{'-' if c is None else format(c, '.2f'):>10} {a['space_amplification']:>9.2f}")
    print("write amp: sorted-file bytes written (flushes + compactions) / user bytes; "
          "space amp: disk bytes / live user bytes")
PY
}

# JSON lines go to the file (and the terminal, as progress); settings come on stderr.
"$BUILD_DIR/bench/tessera_engine_bench" --json "$@" | tee "$BENCH_OUT"
summarize "$BENCH_OUT"

# The second configuration (issue 12): ten times the keys for the lines that depend most on
# the data outgrowing the caches. BENCH_LARGE_NUM=0 skips it.
BENCH_LARGE_NUM="${BENCH_LARGE_NUM:-10000000}"
if [ "$BENCH_LARGE_NUM" != 0 ]; then
  echo
  echo "engine, second configuration: $BENCH_LARGE_NUM keys"
  BENCH_OUT_LARGE="${BENCH_OUT%.jsonl}_large.jsonl"
  "$BUILD_DIR/bench/tessera_engine_bench" --json --num "$BENCH_LARGE_NUM" \
    --benchmarks fillrandom,readrandom,readseq | tee "$BENCH_OUT_LARGE"
  summarize "$BENCH_OUT_LARGE"
fi

# The server benchmark: YCSB workloads against `tessera serve` and the official emulator.
echo
BUILD_DIR="$BUILD_DIR" bash "$ROOT/scripts/bench_server.sh"

# The cluster benchmark (issue 11): YCSB load, A and C against 3 nodes at RF 3 (QUORUM writes),
# the client spread over them and then on one, and against one node at RF 1; the ratios.
echo
BUILD_DIR="$BUILD_DIR" bash "$ROOT/scripts/bench_cluster.sh"

# The cluster simulator (issue 4): failure detection and gossip on 100 simulated nodes, at the
# Cassandra paper's settings (exponential phi, 1 s rounds) and at Tessera's defaults; rounds to
# converge after a join for N = 10, 100, 1000. One JSON object per scenario run.
echo
echo "cluster simulator: paper settings (--paper), then Tessera's defaults"
TESSERA="$BUILD_DIR/src/tessera/cli/tessera"
for settings in --paper ""; do
  "$TESSERA" sim --scenario crash,loss,partition --nodes 100 --json $settings
  "$TESSERA" sim --scenario join --nodes 10,100,1000 --json $settings
done
