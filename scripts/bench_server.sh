#!/usr/bin/env bash
# Runs `tessera bench` (YCSB workloads, docs/bench.md) against `tessera serve` and against the
# official emulator (cbtemulator) in one go, measures each server's CPU time and memory, and
# prints the ratios Tessera/emulator. Used by `make bench` after the engine benchmark.
#
#   scripts/bench_server.sh
#
# Each server starts fresh on 127.0.0.1 and a free port (`tessera serve` with a new data folder
# under a temporary directory and `--sync batch`), gets the load and then each workload, one
# `tessera bench` run per workload. Around each run the server's CPU time (utime + stime of
# /proc/<pid>/stat, every thread) is read, so CPU per operation is the server's alone: on a
# 2-core machine the load generator competes with the server for the cores, which skews
# throughput but not CPU per operation. After the workloads, each server's RSS (VmRSS) and
# peak RSS (VmHWM) are read. Then the memory check: fresh servers each load MEMCHECK rows of
# one 100-byte cell and report their RSS and peak RSS.
#
# Output: one JSON object per line on stdout (also written to $BENCH_SERVER_OUT):
#   {"kind":"run", "server", "workload", "ops", "seconds", "throughput", "errors",
#    "server_cpu_s", "server_cpu_us_per_op", "client_cpu_us_per_op" (the load generator's),
#    "rss_mb", "peak_rss_mb", "latency_us": {TYPE:
#    {"p50","p99","p999"}}, "bench": <tessera bench's own JSON line>}
#   {"kind":"ratio", "server" (tessera or tessera-periodic), "workload", "throughput_tessera_over_emulator",
#    "cpu_per_op_tessera_over_emulator"}          (throughput: above 1 is faster; CPU: below 1
#                                                  is cheaper)
#   {"kind":"memory", "phase": "after_workloads"|"memcheck", "server", "rows", "rss_mb",
#    "peak_rss_mb"}
# followed by a readable table. Exits non-zero if a run failed or counted errors.
#
# Environment (defaults in brackets):
#   BUILD_DIR [build]            configured build directory; the `tessera` target is built
#   TESSERA_NO_BUILD []          non-empty: use the binary as it is, do not build
#   TESSERA [$BUILD_DIR/src/tessera/cli/tessera]
#   TESSERA_CBTEMULATOR [the Google Cloud CLI's cbtemulator]
#   BENCH_SERVERS [tessera,tessera-periodic,emulator]  tessera-periodic: `--sync periodic`
#   BENCH_WORKLOADS [A,B,C,D,E,F,ping]   the load always runs first
#   BENCH_RECORDS [50000]  BENCH_OPERATIONS [20000]  BENCH_DURATION_S [30] (per workload)
#   BENCH_THREADS [8]  BENCH_FIELDS [10]  BENCH_VALUE_SIZE [100]
#   BENCH_MEMCHECK_ROWS [220000] (0: skip the memory check)
#   BENCH_EXTRA_ARGS []          more `tessera bench` flags
#   BENCH_RUN_TIMEOUT_S [900]    a `tessera bench` run still going after this is killed (a failure)
#   BENCH_SERVE_ARGS []          more `tessera serve` flags
#   BENCH_SERVER_OUT [$BUILD_DIR/server_bench.jsonl]
#   BENCH_KEEP [0]               1: keep the temporary directory (server logs, data)
set -euo pipefail
# The whole script is one block, so bash reads all of it before running any: editing the file
# while a run is in progress cannot change what that run does.
{

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH_TAG=bench_server
# shellcheck source=scripts/bench_lib.sh
source "$ROOT/scripts/bench_lib.sh"
EMULATOR="${TESSERA_CBTEMULATOR:-/usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator}"
if [[ ! -x $EMULATOR ]] && command -v cbtemulator >/dev/null 2>&1; then
  EMULATOR="$(command -v cbtemulator)"
fi
SERVERS="${BENCH_SERVERS:-tessera,tessera-periodic,emulator}"
WORKLOADS="${BENCH_WORKLOADS:-A,B,C,D,E,F,ping}"
MEMCHECK_ROWS="${BENCH_MEMCHECK_ROWS:-220000}"
read -r -a SERVE_ARGS <<<"${BENCH_SERVE_ARGS:-}"
OUT="${BENCH_SERVER_OUT:-$BUILD_DIR/server_bench.jsonl}"
bench_prepare bench_server

# Which servers can run here; a missing one is announced loudly, never silently dropped.
declare -a RUN_SERVERS=()
IFS=',' read -r -a wanted <<<"$SERVERS"
for s in "${wanted[@]}"; do
  case "$s" in
    tessera | tessera-periodic)
      if "$TESSERA" --help | grep -q '^  serve '; then
        RUN_SERVERS+=("$s")
      else
        say "SKIPPED tessera: $TESSERA has no serve command (emulator only; no ratios)"
      fi
      ;;
    emulator)
      if [[ -x $EMULATOR ]]; then
        RUN_SERVERS+=(emulator)
      else
        say "SKIPPED emulator: cbtemulator not found at $EMULATOR (set TESSERA_CBTEMULATOR)"
      fi
      ;;
    *)
      say "unknown server \"$s\" in BENCH_SERVERS (tessera, tessera-periodic, emulator)"
      exit 2
      ;;
  esac
done
if ((${#RUN_SERVERS[@]} == 0)); then
  say "no server to benchmark"
  exit 1
fi

declare -A PIDS=()

# start <server> <dir>: starts it fresh (bench_lib.sh's start_server), sets PIDS[<server>] and
# ENDPOINT.
start() {
  if [[ $1 == tessera ]]; then
    start_server tessera "$2" --sync batch "${SERVE_ARGS[@]}"
  elif [[ $1 == tessera-periodic ]]; then
    start_server tessera "$2" --sync periodic "${SERVE_ARGS[@]}"
  else
    start_server emulator "$2"
  fi
  PIDS[$1]=$STARTED_PID
}

stop_server() {
  stop_pid "${PIDS[$1]}"
  unset "PIDS[$1]"
}

for server in "${RUN_SERVERS[@]}"; do
  start "$server" "$WORK/$server"
  say "$server: load of $RECORDS records, then $WORKLOADS ($OPERATIONS ops or ${DURATION_S} s each, $THREADS threads)"
  if run_workload "$server" load "$ENDPOINT" "${PIDS[$server]}" "${COMMON[@]}"; then
    IFS=',' read -r -a list <<<"$WORKLOADS"
    for w in "${list[@]}"; do
      run_workload "$server" "$w" "$ENDPOINT" "${PIDS[$server]}" "${COMMON[@]}" \
        --operations "$OPERATIONS" \
        --duration-s "$DURATION_S" || break
    done
    mem="$(memory_kb "${PIDS[$server]}")"
    printf '{"memory":"after_workloads","server":"%s","rows":%d,"rss_kb":%d,"hwm_kb":%d}\n' \
      "$server" "$RECORDS" ${mem% *} ${mem#* } >>"$RAW"
  fi
  stop_server "$server"
done

if ((MEMCHECK_ROWS > 0)); then
  for server in "${RUN_SERVERS[@]}"; do
    [[ $server == tessera-periodic ]] && continue  # the same memory as tessera's
    start "$server" "$WORK/memcheck-$server"
    say "$server: memory check, $MEMCHECK_ROWS rows of one 100-byte cell"
    before="$(cpu_ticks "${PIDS[$server]}")"
    rc=0
    line="$("$TESSERA" bench --endpoint "$ENDPOINT" --json --workload load --table memcheck \
      --records "$MEMCHECK_ROWS" --fields 1 --value-size 100 --threads "$THREADS" \
      2>>"$WORK/bench.err")" || rc=$?
    ((rc == 0)) || { say "memory check load failed on $server (exit $rc)"; FAILED=1; }
    mem="$(memory_kb "${PIDS[$server]}")"
    printf '{"memory":"memcheck","server":"%s","rows":%d,"rc":%d,"rss_kb":%d,"hwm_kb":%d,"bench":%s}\n' \
      "$server" "$MEMCHECK_ROWS" "$rc" ${mem% *} ${mem#* } "${line:-null}" >>"$RAW"
    stop_server "$server"
  done
fi

mkdir -p "$(dirname "$OUT")"
python3 - "$RAW" "$OUT" "$ROOT/scripts" <<'PY'
import json
import sys

raw_path, out_path = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
from bench_runs import fmt, main_latency, read_raw, run_record, write_lines

runs, memory = read_raw(raw_path)
out = []
flat = {}
for key, r in runs.items():
    rec = run_record(r)
    flat[key] = rec
    out.append(rec)

workloads = []
for (_, w) in runs:
    if w not in workloads:
        workloads.append(w)
servers = ("tessera", "tessera-periodic", "emulator")
ratios = {}  # (tessera server, workload) -> ratio line
for tessera in servers[:2]:
    for w in workloads:
        t, e = flat.get((tessera, w)), flat.get(("emulator", w))
        if not t or not e or not t["throughput"] or not e["throughput"]:
            continue
        cpu = None
        if t["server_cpu_us_per_op"] is not None and e["server_cpu_us_per_op"]:
            cpu = t["server_cpu_us_per_op"] / e["server_cpu_us_per_op"]
        ratios[(tessera, w)] = {"kind": "ratio", "server": tessera, "workload": w,
                                "throughput_tessera_over_emulator": t["throughput"] / e["throughput"],
                                "cpu_per_op_tessera_over_emulator": cpu}
        out.append(ratios[(tessera, w)])
for m in memory:
    rec = {"kind": "memory", "phase": m["memory"], "server": m["server"], "rows": m["rows"],
           "rss_mb": m["rss_kb"] / 1024, "peak_rss_mb": m["hwm_kb"] / 1024}
    if m.get("bench"):
        rec["load_seconds"] = m["bench"].get("seconds")
        rec["errors"] = m["bench"].get("errors")
    out.append(rec)

write_lines(out, out_path)

print()
print(f"{'workload':<9}{'server':<18}{'ops/s':>10}{'srv cpu us/op':>15}{'client us/op':>14}"
      f"{'p50 us':>9}{'p99 us':>9}{'errors':>8}")
for w in workloads:
    for server in servers:
        r = flat.get((server, w))
        if not r:
            continue
        main = main_latency(r)
        print(f"{w:<9}{server:<18}{fmt(r['throughput'], '10.0f')}"
              f"{fmt(r['server_cpu_us_per_op'], '15.1f')}"
              f"{fmt(r['client_cpu_us_per_op'], '14.1f')}"
              f"{fmt(main and main['p50'], '9.0f')}{fmt(main and main['p99'], '9.0f')}"
              f"{fmt(r['errors'], '8d')}")
if ratios:
    print()
    print(f"{'workload':<9}{'server':<18}{'throughput x':>14}{'cpu/op x':>10}   (tessera vs "
          f"emulator: throughput ratio, and emulator CPU/op over tessera CPU/op; above 1 is "
          f"better)")
    for (tessera, w), r in sorted(ratios.items(), key=lambda kv: kv[0][0] != "tessera"):
        cpu = r["cpu_per_op_tessera_over_emulator"]
        print(f"{w:<9}{tessera:<18}{r['throughput_tessera_over_emulator']:>14.2f}"
              f"{fmt(1 / cpu if cpu else None, '10.2f')}")
if memory:
    print()
    print(f"{'memory':<17}{'server':<18}{'rows':>8}{'RSS MiB':>10}{'peak MiB':>10}")
    for m in memory:
        print(f"{m['memory']:<17}{m['server']:<18}{m['rows']:>8}{m['rss_kb'] / 1024:>10.1f}"
              f"{m['hwm_kb'] / 1024:>10.1f}")
PY

bench_exit
}
