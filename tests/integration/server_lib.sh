# server_lib.sh: start and stop a Bigtable-API server for the shell-driven integration tests.
# Sourced, not run. The server is either `tessera` (started as `tessera serve` on a free port
# with a fresh data folder) or the official emulator (any command whose name contains
# "cbtemulator"), so every suite runs unchanged against both.
#
#   start_server <command> <work-dir>
#     Starts the server, waits (at most 30 s) until it serves, and sets
#       SERVER_PID   process id
#       SERVER_HOST  127.0.0.1:<port>
#       SERVER_KIND  tessera | emulator
#     The server's stdout/stderr go to <work-dir>/server.log. Exits the test (code 1) if the
#     server does not come up.
#   stop_server
#     SIGTERM, wait (at most 10 s), then SIGKILL. Sets SERVER_EXIT to the server's exit status
#     (137 when it had to be killed). Safe to call twice; install it in an EXIT trap.
#
# And the scaffolding of a checking script:
#   begin_checks <name>   sets $work (a fresh folder) and installs an EXIT trap that stops the
#                         server and removes $work unless a check failed
#   check_passed <desc>   / fail <desc>: count one check
#   end_checks            prints "N passed, M failed" and returns non-zero on a failure
#   require_cbt           sets CBT (from $CBT or PATH), or exits 77 (skipped) without it
#   cbt_run <args...>     cbt with a 60 s bound: stdout in $work/out, stderr in $work/err,
#                         exit code in $rc

SERVER_PID=""
SERVER_HOST=""
SERVER_KIND=""
SERVER_LOG=""
SERVER_EXIT=""

# True while `pid` runs (a zombie, exited but not yet waited for, counts as stopped).
process_running() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != Z ]]
}

start_server() {
  local cmd="$1" work="$2"
  SERVER_LOG="$work/server.log"
  local port=""
  case "$(basename "$cmd")" in
    *cbtemulator*)
      SERVER_KIND=emulator
      "$cmd" -host 127.0.0.1 -port 0 >"$SERVER_LOG" 2>&1 &
      SERVER_PID=$!
      ;;
    *)
      SERVER_KIND=tessera
      mkdir -p "$work/data"
      "$cmd" serve --listen 127.0.0.1:0 --port-file "$work/port" --data-dir "$work/data" \
        --log-level warn >"$SERVER_LOG" 2>&1 &
      SERVER_PID=$!
      ;;
  esac
  local i
  for ((i = 0; i < 300; i++)); do
    if ! process_running "$SERVER_PID"; then
      echo "FAIL: server exited before serving; its log:" >&2
      cat "$SERVER_LOG" >&2
      SERVER_PID=""
      exit 1
    fi
    if [[ $SERVER_KIND == emulator ]]; then
      port=$(sed -n 's/.*running on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$SERVER_LOG" | head -1)
    elif [[ -s "$work/port" ]]; then
      port=$(tr -d '[:space:]' <"$work/port")
    fi
    if [[ -n $port ]]; then
      SERVER_HOST="127.0.0.1:$port"
      echo "server ($SERVER_KIND, pid $SERVER_PID) serving on $SERVER_HOST"
      return 0
    fi
    sleep 0.1
  done
  echo "FAIL: server did not report a port within 30 s; its log:" >&2
  cat "$SERVER_LOG" >&2
  stop_server
  exit 1
}

stop_server() {
  [[ -n $SERVER_PID ]] || return 0
  local pid=$SERVER_PID i
  SERVER_PID=""
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do
    if ! process_running "$pid"; then
      wait "$pid" 2>/dev/null
      SERVER_EXIT=$?
      return 0
    fi
    sleep 0.1
  done
  echo "warning: server $pid ignored SIGTERM for 10 s; killing it" >&2
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  SERVER_EXIT=137
  return 0
}

work=""
checks=0
failures=0
rc=0

begin_checks() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-$1.XXXXXX")
  trap end_of_script EXIT
  trap 'exit 1' INT TERM
}

end_of_script() {
  stop_server
  if ((failures == 0)); then rm -rf "$work"; else echo "work folder kept: $work"; fi
}

check_passed() {
  checks=$((checks + 1))
  echo "ok: $1"
}

fail() {
  checks=$((checks + 1))
  failures=$((failures + 1))
  echo "FAIL: $1" >&2
}

end_checks() {
  echo "$((checks - failures)) passed, $failures failed"
  ((failures == 0))
}

require_cbt() {
  CBT=${CBT:-$(command -v cbt || true)}
  if [[ -z $CBT || ! -x $CBT ]]; then
    echo "SKIPPED: cbt not found (install the Google Cloud CLI's cbt component or set CBT=)"
    exit 77
  fi
}

# -creds skips the slow gcloud credential lookup (unused with BIGTABLE_EMULATOR_HOST).
cbt_run() {
  timeout 60 "$CBT" -project p -instance i -creds /dev/null "$@" >"$work/out" 2>"$work/err"
  rc=$?
}
