#!/usr/bin/env bash
# Runs `tessera bench` (YCSB load, then A and C) against a 3-node cluster (etcd and three
# `tessera serve` on 127.0.0.1, tables at RF 3, writes at QUORUM, the default) and against one
# node (RF 1), in one go on the same machine, and prints the cluster's figures over the single
# node's. Used by `make bench` after scripts/bench_server.sh (issue 11, "Speed").
#
#   scripts/bench_cluster.sh
#
# Setups, one after the other, each fresh (new data folders, free ports), never two at once:
#   1node          `tessera serve` alone (embedded lock service, RF 1), the client on it
#   3node-spread   the cluster, the client's threads spread over the three nodes (thread t on
#                  node t mod 3), so most requests are forwarded once to a tablet's primary
#   3node-one      the cluster, every thread on one node (node 1, not the one tables are made
#                  through)
# In every setup the table is made with the same split keys (BENCH_CLUSTER_TABLETS tablets of
# about equal numbers of records), so on the cluster each node is the primary of a tablet; after
# the load, `tessera admin tablets` shows the replica sets, which the script checks (every
# tablet on RF distinct nodes) and prints. Every node runs with `--sync batch` (a write is
# acknowledged once durable in the commit logs of a quorum).
#
# CPU per operation is the sum over the setup's `tessera serve` processes of utime + stime
# (/proc/PID/stat, every thread) across the run, divided by its operations (bench_lib.sh's
# run_workload, the same measurement as bench_server.sh); etcd's CPU over the run is given apart.
#
# Output: one JSON object per line on stdout (also written to $BENCH_CLUSTER_OUT):
#   {"kind":"run", "setup", "nodes", "rf", "client", "workload", "ops", "seconds",
#    "throughput", "errors", "server_cpu_s", "server_cpu_us_per_op", "client_cpu_us_per_op",
#    "etcd_cpu_s", "latency_us": {TYPE: {"p50","p99","p999"}}, "bench": <tessera bench's line>}
#   {"kind":"tablets", "setup", "tablets": [{"start_row","end_row","primary","replicas"}]}
#   {"kind":"ratio", "setup" (a 3-node one), "workload", "throughput_ratio" (3-node / 1-node),
#    "p99_ratio" {TYPE: 3-node p99 / 1-node p99}, "p99_ratio_worst", "cpu_per_op_ratio",
#    "target_throughput_ratio_min": 0.5, "target_p99_ratio_max": 2, "meets_targets"}
# followed by a readable table. Exits non-zero if a run failed or counted errors; a target
# missed is reported, not an error.
#
# Environment (defaults in brackets); the sizes are bench_server.sh's variables:
#   BUILD_DIR [build]  TESSERA_NO_BUILD []  TESSERA [$BUILD_DIR/src/tessera/cli/tessera]
#   ETCD [etcd on the PATH]      without one, the 3-node setups are skipped (loudly; no ratios)
#   BENCH_CLUSTER_SETUPS [1node,3node-spread,3node-one]
#   BENCH_CLUSTER_WORKLOADS [A,C]   the load always runs first
#   BENCH_CLUSTER_TABLETS [3]
#   BENCH_RECORDS [50000]  BENCH_OPERATIONS [20000]  BENCH_DURATION_S [30] (per workload)
#   BENCH_THREADS [8]  BENCH_FIELDS [10]  BENCH_VALUE_SIZE [100]
#   BENCH_EXTRA_ARGS []          more `tessera bench` flags
#   BENCH_RUN_TIMEOUT_S [900]    a `tessera bench` run still going after this is killed (a failure)
#   BENCH_SERVE_ARGS []          more `tessera serve` flags, every node of every setup
#   BENCH_CLUSTER_SERVE_ARGS []  more `tessera serve` flags, every node of every setup (both
#                                sides of a ratio run the same server)
#   BENCH_CLUSTER_OUT [$BUILD_DIR/cluster_bench.jsonl]
#   BENCH_KEEP [0]               1: keep the temporary directory (logs, data)
set -euo pipefail
# One block, so bash reads all of it before running any (edits during a run change nothing).
{

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH_TAG=bench_cluster
# shellcheck source=scripts/bench_lib.sh
source "$ROOT/scripts/bench_lib.sh"
ETCD="${ETCD:-$(command -v etcd || true)}"
SETUPS="${BENCH_CLUSTER_SETUPS:-1node,3node-spread,3node-one}"
WORKLOADS="${BENCH_CLUSTER_WORKLOADS:-A,C}"
TABLETS="${BENCH_CLUSTER_TABLETS:-3}"
read -r -a SERVE_ARGS <<<"${BENCH_SERVE_ARGS:-} ${BENCH_CLUSTER_SERVE_ARGS:-}"
OUT="${BENCH_CLUSTER_OUT:-$BUILD_DIR/cluster_bench.jsonl}"
PROJECT=tessera-bench
INSTANCE=bench
IFS=',' read -r -a SETUP_LIST <<<"$SETUPS"
declare -a RUN_SETUPS=()
for setup in "${SETUP_LIST[@]}"; do
  case "$setup" in
    1node | 3node-spread | 3node-one) ;;
    *)
      say "unknown setup \"$setup\" in BENCH_CLUSTER_SETUPS (1node, 3node-spread, 3node-one)"
      exit 2
      ;;
  esac
  if [[ $setup == 3node-* && ! -x $ETCD ]]; then
    say "SKIPPED $setup: no etcd binary (install etcd-server or set ETCD); no ratios"
    continue
  fi
  RUN_SETUPS+=("$setup")
done
if ((${#RUN_SETUPS[@]} == 0)); then
  say "no setup to benchmark"
  exit 1
fi

bench_prepare bench_cluster
SIDE="$WORK/side.jsonl"  # etcd CPU per run, tablets per setup
: >"$SIDE"

# The split keys giving $TABLETS tablets of about equal record counts: quantiles of the load's
# keys (docs/bench.md: record k is "user" + decimal(FNV-1a-64(k)), YCSB's hashed insert order).
split_keys() {
  python3 - "$RECORDS" "$TABLETS" <<'PY'
import sys

records, tablets = int(sys.argv[1]), int(sys.argv[2])

def fnv(v):
    h = 0xCBF29CE484222325
    for _ in range(8):
        h = ((h ^ (v & 0xFF)) * 1099511628211) % 2**64
        v >>= 8
    return (2**64 - h) % 2**64 if h >> 63 else h  # Java's Math.abs on the signed value

keys = sorted("user%d" % fnv(k) for k in range(records))
print(",".join(keys[len(keys) * i // tablets] for i in range(1, tablets)))
PY
}

# Waits (at most 60 s) until every node of the cluster at $NODE_ENDPOINTS serves, sees the
# three up and names one master.
wait_converged() {
  local deadline=$((SECONDS + 60)) e ok
  while ((SECONDS < deadline)); do
    ok=1
    for e in "${NODE_ENDPOINTS[@]}"; do
      if ! "$TESSERA" admin status --json --timeout-ms 2000 --addr "$e" 2>/dev/null |
        python3 -c 'import json, sys
s = json.load(sys.stdin)
up = [n for n in s.get("nodes", []) if n.get("liveness") == "up"]
sys.exit(0 if s.get("serving") and s.get("master") and len(up) == 3 else 1)'; then
        ok=0
        break
      fi
    done
    ((ok)) && return 0
    sleep 0.5
  done
  say "the cluster did not converge within 60 s; the nodes' logs end:"
  for e in "${NODE_PIDS[@]}"; do tail -5 "${BENCH_LOG_OF[$e]}" >&2; done
  exit 1
}

# start_setup <setup>: sets NODE_PIDS, NODE_ENDPOINTS, CLIENT_ENDPOINTS, NODES, RF, CLIENT.
start_setup() {
  local setup="$1" dir="$WORK/$1" i
  NODE_PIDS=()
  NODE_ENDPOINTS=()
  ETCD_PID=""
  if [[ $setup == 1node ]]; then
    start_server tessera "$dir/node0" --sync batch "${SERVE_ARGS[@]}"
    NODE_PIDS=("$STARTED_PID")
    NODE_ENDPOINTS=("$ENDPOINT")
    CLIENT_ENDPOINTS="$ENDPOINT"
    NODES=1 RF=1 CLIENT=node0
    return
  fi
  start_etcd "$dir/etcd"
  for ((i = 0; i < 3; i++)); do
    local seeds=()
    ((i == 0)) || seeds=(--seeds "${NODE_ENDPOINTS[0]}")
    start_server tessera "$dir/node$i" --sync batch --lock-service "etcd://$ETCD_ENDPOINT" \
      --cluster-name bench "${seeds[@]}" "${SERVE_ARGS[@]}"
    NODE_PIDS+=("$STARTED_PID")
    NODE_ENDPOINTS+=("$ENDPOINT")
  done
  wait_converged
  NODES=3 RF=3
  if [[ $setup == 3node-spread ]]; then
    CLIENT_ENDPOINTS="$(IFS=,; echo "${NODE_ENDPOINTS[*]}")"
    CLIENT=spread
  else
    CLIENT_ENDPOINTS="${NODE_ENDPOINTS[1]}"
    CLIENT=node1
  fi
  say "$setup: 3 nodes ${NODE_ENDPOINTS[*]}, the client on $CLIENT_ENDPOINTS"
}

stop_setup() {
  local pid
  for pid in "${NODE_PIDS[@]}"; do stop_pid "$pid"; done
  [[ -z $ETCD_PID ]] || stop_pid "$ETCD_PID"
}

# Makes the table through the first node (a one-record `tessera bench` load: the same table, by
# the same code, as the measured runs) and waits (at most 30 s) until every node's data path
# serves it. On the cluster a table made through one node reaches the others a moment later;
# until then they answer NOT_FOUND, and rows the load sends there are lost to the benchmark.
make_table() {
  local setup="$1" e deadline=$((SECONDS + 30)) start
  start="$(date +%s%N)"
  if ! "$TESSERA" bench --endpoint "${NODE_ENDPOINTS[0]}" --workload load --records 1 \
    --batch-size 1 --threads 1 --fields "$FIELDS" --value-size "$VALUE_SIZE" \
    ${SPLITS:+--split "$SPLITS"} >/dev/null 2>>"$WORK/bench.err"; then
    say "$setup: could not make the table through ${NODE_ENDPOINTS[0]}:"
    tail -3 "$WORK/bench.err" >&2
    exit 1
  fi
  for e in "${NODE_ENDPOINTS[@]}"; do
    # Record 0's key (docs/bench.md); a row that is not there is fine, a table that is not, not.
    until "$TESSERA" shell --endpoint "$e" --project "$PROJECT" --instance "$INSTANCE" \
      --timeout 5 --read-timeout 5 -e "get usertable user6284781860667377211" >/dev/null 2>&1; do
      if ((SECONDS >= deadline)); then
        say "$setup: $e did not serve the table within 30 s of its creation"
        exit 1
      fi
      sleep 0.05
    done
  done
  say "$setup: every node serves the table $((($(date +%s%N) - start) / 1000000)) ms after the request to make it"
}

# Checks the table's tablets after the load (each on $RF distinct nodes, $TABLETS of them) and
# records them in SIDE.
check_tablets() {
  local setup="$1" out rc=0
  out="$("$TESSERA" admin tablets --json --timeout-ms 10000 --addr "${NODE_ENDPOINTS[0]}" \
    --table usertable --project "$PROJECT" --instance "$INSTANCE" 2>&1)" || rc=$?
  if ((rc != 0)); then
    say "$setup: tessera admin tablets exited $rc: $out"
    FAILED=1
    return
  fi
  TABLETS_JSON="$out" python3 - "$setup" "$RF" "$TABLETS" "$SIDE" <<'PY' || FAILED=1
import json
import os
import sys

setup, rf, count, side = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
tablets = []
for t in json.loads(os.environ["TABLETS_JSON"])["tablets"]:
    replicas = sorted({r["endpoint"] for r in t["replicas"]})
    tablets.append({"start_row": t["start_row"], "end_row": t["end_row"],
                    "primary": next((r["endpoint"] for r in t["replicas"] if r["primary"]), None),
                    "replicas": replicas})
with open(side, "a") as f:
    f.write(json.dumps({"kind": "tablets", "setup": setup, "tablets": tablets}) + "\n")
bad = [t for t in tablets if len(t["replicas"]) != rf or t["primary"] is None]
if len(tablets) != count or bad:
    print(f"bench_cluster: {setup}: expected {count} tablets on {rf} replicas each with a "
          f"primary, got {tablets}", file=sys.stderr)
    sys.exit(1)
PY
}

# measure <setup> <workload> <flags...>: run_workload, with etcd's CPU over the run.
measure() {
  local setup="$1" workload="$2" etcd_before=0 etcd_after=0 rc=0
  shift 2
  [[ -z $ETCD_PID ]] || etcd_before="$(cpu_ticks "$ETCD_PID")"
  run_workload "$setup" "$workload" "$CLIENT_ENDPOINTS" "${NODE_PIDS[*]}" "$@" || rc=$?
  [[ -z $ETCD_PID ]] || etcd_after="$(cpu_ticks "$ETCD_PID")"
  printf '{"kind":"etcd","setup":"%s","workload":"%s","etcd_cpu_s":%s,"nodes":%d,"rf":%d,"client":"%s"}\n' \
    "$setup" "$workload" "$(((etcd_after - etcd_before) * 100 / CLK_TCK))e-2" "$NODES" "$RF" \
    "$CLIENT" >>"$SIDE"
  return "$rc"
}

SPLITS="$(split_keys)"
for setup in "${RUN_SETUPS[@]}"; do
  start_setup "$setup"
  say "$setup: load of $RECORDS records in $TABLETS tablets, then $WORKLOADS ($OPERATIONS ops or ${DURATION_S} s each, $THREADS threads)"
  make_table "$setup"
  if measure "$setup" load "${COMMON[@]}" ${SPLITS:+--split "$SPLITS"}; then
    check_tablets "$setup"
    IFS=',' read -r -a list <<<"$WORKLOADS"
    for w in "${list[@]}"; do
      measure "$setup" "$w" "${COMMON[@]}" --operations "$OPERATIONS" \
        --duration-s "$DURATION_S" || break
    done
  fi
  stop_setup
done

mkdir -p "$(dirname "$OUT")"
python3 - "$RAW" "$SIDE" "$OUT" "$ROOT/scripts" <<'PY'
import json
import sys

raw_path, side_path, out_path = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, sys.argv[4])
from bench_runs import fmt, main_latency, read_raw, run_record, write_lines

TARGET_THROUGHPUT, TARGET_P99 = 0.5, 2.0
runs, _ = read_raw(raw_path)
etcd, tablets = {}, []
with open(side_path) as f:
    for line in f:
        r = json.loads(line)
        if r["kind"] == "etcd":
            etcd[(r["setup"], r["workload"])] = r
        else:
            tablets.append(r)

out, flat = [], {}
for key, raw in runs.items():
    run = run_record(raw)
    side = etcd[key]
    rec = {"kind": "run", "setup": run.pop("server"), "nodes": side["nodes"], "rf": side["rf"],
           "client": side["client"]}
    rec.update(run)
    rec["etcd_cpu_s"] = side["etcd_cpu_s"] if side["nodes"] > 1 else None
    del rec["rss_mb"], rec["peak_rss_mb"]  # of one node only: not the setup's
    flat[key] = rec
    out.append(rec)
out.extend(tablets)

setups = list(dict.fromkeys(s for s, _ in runs))
workloads = list(dict.fromkeys(w for _, w in runs))
ratios = []
for setup in setups:
    if setup == "1node":
        continue
    for w in workloads:
        c, o = flat.get((setup, w)), flat.get(("1node", w))
        if not c or not o or not c["throughput"] or not o["throughput"]:
            continue
        p99 = {t: c["latency_us"][t]["p99"] / o["latency_us"][t]["p99"]
               for t in c["latency_us"] if t in o["latency_us"] and o["latency_us"][t]["p99"]}
        cpu = None
        if c["server_cpu_us_per_op"] is not None and o["server_cpu_us_per_op"]:
            cpu = c["server_cpu_us_per_op"] / o["server_cpu_us_per_op"]
        throughput = c["throughput"] / o["throughput"]
        worst = max(p99.values()) if p99 else None
        r = {"kind": "ratio", "setup": setup, "workload": w, "throughput_ratio": throughput,
             "p99_ratio": p99, "p99_ratio_worst": worst, "cpu_per_op_ratio": cpu,
             "target_throughput_ratio_min": TARGET_THROUGHPUT, "target_p99_ratio_max": TARGET_P99,
             "meets_targets": throughput >= TARGET_THROUGHPUT and worst is not None
                              and worst <= TARGET_P99}
        ratios.append(r)
        out.append(r)

write_lines(out, out_path)

print()
for t in tablets:
    print(f"{t['setup']}: " + "; ".join(
        f"[{x['start_row'] or '-'}, {x['end_row'] or '-'}) primary {x['primary']}"
        for x in t["tablets"]))
print()
print(f"{'workload':<9}{'setup':<14}{'ops/s':>9}{'srv cpu us/op':>15}{'client us/op':>14}"
      f"{'type':>14}{'p50 us':>9}{'p99 us':>9}{'errors':>8}")
for w in workloads:
    for setup in setups:
        r = flat.get((setup, w))
        if not r:
            continue
        types = list(r["latency_us"]) or ["-"]
        for i, t in enumerate(types):
            lat = r["latency_us"].get(t)
            head = (f"{w:<9}{setup:<14}{fmt(r['throughput'], '9.0f')}"
                    f"{fmt(r['server_cpu_us_per_op'], '15.1f')}"
                    f"{fmt(r['client_cpu_us_per_op'], '14.1f')}") if i == 0 else " " * 61
            print(f"{head}{t:>14}{fmt(lat and lat['p50'], '9.0f')}{fmt(lat and lat['p99'], '9.0f')}"
                  f"{fmt(r['errors'], '8d') if i == 0 else ''}")
if ratios:
    print()
    print(f"{'workload':<9}{'setup':<14}{'throughput x':>13}{'p99 x (worst)':>15}{'cpu/op x':>10}"
          f"   targets: throughput x >= {TARGET_THROUGHPUT}, p99 x <= {TARGET_P99}")
    for r in ratios:
        print(f"{r['workload']:<9}{r['setup']:<14}{r['throughput_ratio']:>13.2f}"
              f"{fmt(r['p99_ratio_worst'], '15.2f')}{fmt(r['cpu_per_op_ratio'], '10.2f')}"
              f"   {'met' if r['meets_targets'] else 'MISSED'}")
PY

bench_exit
}
