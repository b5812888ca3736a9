# shellcheck shell=bash disable=SC2034  # sourced: the variables it sets are the callers'
# bench_lib.sh: what the server benchmarks share (scripts/bench_server.sh, against `tessera
# serve` and the emulator, and scripts/bench_cluster.sh, against a 3-node cluster and one node):
# starting servers and etcd on free ports, stopping them by PID, and one measured `tessera
# bench` run. Sourced, not run.
#
# The caller sets ROOT (the repository) and BENCH_TAG (the prefix of messages: "bench_server",
# "bench_cluster") before sourcing. Sourcing sets, from the environment (defaults in brackets):
#   BUILD_DIR [$ROOT/build]  TESSERA [$BUILD_DIR/src/tessera/cli/tessera]
#   RECORDS [$BENCH_RECORDS or 50000]  OPERATIONS [$BENCH_OPERATIONS or 20000]
#   DURATION_S [$BENCH_DURATION_S or 30]  THREADS [$BENCH_THREADS or 8]
#   FIELDS [$BENCH_FIELDS or 10]  VALUE_SIZE [$BENCH_VALUE_SIZE or 100]
#   EXTRA_ARGS (array, from $BENCH_EXTRA_ARGS)  COMMON (array: the record flags of every run)
#   RUN_TIMEOUT_S [$BENCH_RUN_TIMEOUT_S or 900]: a `tessera bench` run is killed after this long
# FAILED is set to 1 when a run fails or counts errors; bench_exit exits with it.
#
#   bench_prepare <name>
#       Builds `tessera` (unless TESSERA_NO_BUILD is set or BUILD_DIR is not configured),
#       checks it has the bench command, makes WORK (a fresh temporary folder named after
#       <name>) and RAW (the file run_workload appends to), and installs the EXIT trap: every
#       process started here is stopped, newest first (so nodes go before their etcd), and WORK
#       is removed unless BENCH_KEEP=1.
#   bench_exit
#       Exits 1 (saying so) if FAILED, else 0.
#   start_server tessera|emulator <dir> [tessera serve flags...]
#       Starts the server fresh in <dir> (data in <dir>/data, log <dir>/server.log), waits at
#       most 30 s until it serves, and sets STARTED_PID and ENDPOINT (127.0.0.1:<port>).
#   start_etcd <dir>
#       A one-member etcd ($ETCD, else etcd on the PATH) on two free ports, ready within 30 s
#       (three attempts); sets ETCD_ENDPOINT and ETCD_PID.
#   stop_pid <pid>
#       SIGTERM, at most 10 s, then SIGKILL; forgets the PID.
#   run_workload <label> <workload> <endpoints> <pids> [tessera bench flags...]
#       One `tessera bench --json` run against <endpoints> (a comma list), with the CPU time
#       (utime + stime of every thread) of the server processes <pids> (a space-separated
#       list) read before and after it, so CPU per operation is the servers' alone; appends one
#       raw line to RAW. Returns 1 when a server died during the run.
#   memory_kb <pid>   "<VmRSS kB> <VmHWM kB>"

BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
TESSERA="${TESSERA:-$BUILD_DIR/src/tessera/cli/tessera}"
RECORDS="${BENCH_RECORDS:-50000}"
OPERATIONS="${BENCH_OPERATIONS:-20000}"
DURATION_S="${BENCH_DURATION_S:-30}"
THREADS="${BENCH_THREADS:-8}"
FIELDS="${BENCH_FIELDS:-10}"
VALUE_SIZE="${BENCH_VALUE_SIZE:-100}"
read -r -a EXTRA_ARGS <<<"${BENCH_EXTRA_ARGS:-}"
RUN_TIMEOUT_S="${BENCH_RUN_TIMEOUT_S:-900}"
COMMON=(--records "$RECORDS" --fields "$FIELDS" --value-size "$VALUE_SIZE")
CLK_TCK="$(getconf CLK_TCK)"
FAILED=0
declare -a BENCH_PIDS=()   # every process started here, oldest first
declare -A BENCH_LOG_OF=() # pid -> its log

say() { echo "$BENCH_TAG: $*" >&2; }

# The state letter of /proc/<pid>/stat, empty once the process is gone.
process_state() { sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null; }

# True while the process runs (a zombie, exited but not yet reaped, counts as stopped).
process_running() {
  local state
  state="$(process_state "$1")"
  [[ -n $state && $state != Z ]]
}

stop_pid() {
  local pid="$1" i kept=()
  for i in "${BENCH_PIDS[@]}"; do [[ $i == "$pid" ]] || kept+=("$i"); done
  BENCH_PIDS=("${kept[@]}")
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do
    process_running "$pid" || break
    sleep 0.1
  done
  if process_running "$pid"; then
    say "process $pid ignored SIGTERM for 10 s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

bench_prepare() {
  if [[ -f "$BUILD_DIR/CMakeCache.txt" && -z ${TESSERA_NO_BUILD:-} ]]; then
    cmake --build "$BUILD_DIR" --target tessera >&2
  fi
  if [[ ! -x $TESSERA ]]; then
    say "no tessera binary at $TESSERA (set BUILD_DIR or TESSERA)"
    exit 1
  fi
  if ! "$TESSERA" --help | grep -q '^  bench '; then
    say "$TESSERA has no bench command"
    exit 1
  fi
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/tessera_$1.XXXXXX")"
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
  RAW="$WORK/raw.jsonl"
  : >"$RAW"
}

bench_exit() {
  if ((FAILED)); then
    say "some runs failed or counted errors (see above)"
    exit 1
  fi
  exit 0
}

bench_cleanup() {
  local i
  for ((i = ${#BENCH_PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${BENCH_PIDS[i]}"; done
  if [[ ${BENCH_KEEP:-0} == 1 ]]; then
    say "kept $WORK"
  else
    rm -rf "$WORK"
  fi
}

# Records a started process, for bench_cleanup and for run_workload's report of a death.
track_pid() {
  BENCH_PIDS+=("$1")
  BENCH_LOG_OF[$1]="$2"
}

start_server() {
  local server="$1" dir="$2" port="" i pid
  shift 2
  mkdir -p "$dir"
  # The server's shell opens its log after the fork: make it now, so the wait below can read it
  # at once.
  : >"$dir/server.log"
  if [[ $server == tessera ]]; then
    "$TESSERA" serve --listen 127.0.0.1:0 --port-file "$dir/port" --data-dir "$dir/data" \
      --log-level warn "$@" >"$dir/server.log" 2>&1 &
  else
    "$EMULATOR" -host 127.0.0.1 -port 0 >"$dir/server.log" 2>&1 &
  fi
  pid=$!
  track_pid "$pid" "$dir/server.log"
  for ((i = 0; i < 300; i++)); do
    if ! process_running "$pid"; then
      say "$server exited before serving; its log:"
      cat "$dir/server.log" >&2
      exit 1
    fi
    if [[ $server == tessera ]]; then
      [[ -s "$dir/port" ]] && port="$(tr -d '[:space:]' <"$dir/port")"
    else
      port="$(sed -n 's/.*running on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$dir/server.log" | head -1)"
    fi
    if [[ -n $port ]]; then
      STARTED_PID=$pid
      ENDPOINT="127.0.0.1:$port"
      say "$server (pid $pid) serving on $ENDPOINT"
      return 0
    fi
    sleep 0.1
  done
  say "$server did not serve within 30 s; its log:"
  cat "$dir/server.log" >&2
  exit 1
}

# Two ports free right now on 127.0.0.1 (the kernel's choice; etcd binds them a moment later,
# so start_etcd retries if one was taken meanwhile).
free_ports() {
  python3 -c 'import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])'
}

start_etcd() {
  local dir="$1" attempt client peer pid deadline
  for ((attempt = 1; attempt <= 3; attempt++)); do
    read -r client peer < <(free_ports)
    rm -rf "$dir"
    mkdir -p "$dir"
    "${ETCD:-etcd}" --name m0 --data-dir "$dir/data" \
      --listen-client-urls "http://127.0.0.1:$client" \
      --advertise-client-urls "http://127.0.0.1:$client" \
      --listen-peer-urls "http://127.0.0.1:$peer" \
      --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
      --initial-cluster "m0=http://127.0.0.1:$peer" >"$dir/etcd.log" 2>&1 &
    pid=$!
    track_pid "$pid" "$dir/etcd.log"
    deadline=$((SECONDS + 30))
    while ((SECONDS < deadline)); do
      process_running "$pid" || break
      if curl -sf --max-time 2 "http://127.0.0.1:$client/health" 2>/dev/null | grep -q '"true"'; then
        ETCD_ENDPOINT="127.0.0.1:$client"
        ETCD_PID=$pid
        say "etcd (pid $pid) serving on $ETCD_ENDPOINT"
        return 0
      fi
      sleep 0.1
    done
    stop_pid "$pid"
    say "etcd did not start (attempt $attempt); its log ends:"
    tail -5 "$dir/etcd.log" >&2
  done
  exit 1
}

# CPU ticks (user + system, all threads) the processes have used so far.
cpu_ticks() {
  local pid stat total=0
  for pid in "$@"; do
    stat="$(cat "/proc/$pid/stat")"
    stat="${stat##*) }"  # the fields after the command name, starting with the state (field 3)
    read -r -a f <<<"$stat"
    total=$((total + f[11] + f[12]))  # utime is field 14, stime field 15
  done
  echo "$total"
}

# CPU ticks used by this script's finished children (cutime + cstime): around a `tessera bench`
# run, its CPU time (plus a few ms of the helpers run meanwhile).
children_ticks() {
  local stat
  stat="$(cat "/proc/$$/stat")"
  stat="${stat##*) }"
  read -r -a f <<<"$stat"
  echo $((f[13] + f[14]))  # cutime is field 16, cstime field 17
}

memory_kb() {
  awk '/^VmRSS:/ {rss = $2} /^VmHWM:/ {hwm = $2} END {print rss, hwm}' "/proc/$1/status"
}

run_workload() {
  local label="$1" workload="$2" endpoints="$3" pids="$4"
  shift 4
  local -a pid_list
  read -r -a pid_list <<<"$pids"
  local before after client_before client_after rc=0 line mem pid
  client_before="$(children_ticks)"
  before="$(cpu_ticks "${pid_list[@]}")"
  line="$(timeout --kill-after=10 "$RUN_TIMEOUT_S" \
    "$TESSERA" bench --endpoint "$endpoints" --json --workload "$workload" \
    --threads "$THREADS" "$@" "${EXTRA_ARGS[@]}" 2>>"$WORK/bench.err")" || rc=$?
  for pid in "${pid_list[@]}"; do
    if ! process_running "$pid"; then
      say "$label: server $pid died during workload $workload; its log:"
      tail -20 "${BENCH_LOG_OF[$pid]}" >&2 || true
      FAILED=1
      return 1
    fi
  done
  after="$(cpu_ticks "${pid_list[@]}")"
  client_after="$(children_ticks)"
  mem="$(memory_kb "${pid_list[0]}")"
  if ((rc == 124 || rc == 137)); then
    say "tessera bench did not finish within $RUN_TIMEOUT_S s on $label, workload $workload"
    FAILED=1
  elif ((rc != 0)); then
    say "tessera bench exited $rc on $label, workload $workload (errors are in its JSON line)"
    tail -3 "$WORK/bench.err" >&2 || true
    FAILED=1
  fi
  [[ -n $line ]] || line="null"
  printf '{"server":"%s","workload":"%s","rc":%d,"cpu_ticks":%d,"client_ticks":%d,"clk_tck":%d,"rss_kb":%d,"hwm_kb":%d,"bench":%s}\n' \
    "$label" "$workload" "$rc" $((after - before)) $((client_after - client_before)) \
    "$CLK_TCK" "${mem% *}" "${mem#* }" "$line" >>"$RAW"
}
