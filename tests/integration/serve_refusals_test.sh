#!/usr/bin/env bash
# serve_refusals_test.sh: a second `tessera serve` is refused, not started beside the first —
# on a port in use (gRPC would otherwise share it through SO_REUSEPORT, the two servers
# answering alternately) and on a data folder in use (both would append to its commit log).
#
#   serve_refusals_test.sh <tessera-binary>
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=server_lib.sh
source "$here/server_lib.sh"

if [[ $# -ne 1 || ! -x $1 ]]; then
  echo "usage: $0 <tessera-binary>" >&2
  exit 2
fi
tessera=$1
begin_checks refusals

# expect_refusal <description> <stderr ERE> <serve args...>: the server exits non-zero within
# 30 s and says why on stderr.
expect_refusal() {
  local desc=$1 pattern=$2 rc
  shift 2
  timeout 30 "$tessera" serve --log-level warn "$@" >"$work/second.out" 2>"$work/second.err"
  rc=$?
  if ((rc == 0 || rc == 124)); then
    fail "$desc: tessera serve $* exited $rc (124: still serving after 30 s), expected a refusal"
    return
  fi
  if ! grep -Eq -- "$pattern" "$work/second.err"; then
    fail "$desc: stderr does not match /$pattern/: $(head -c 400 "$work/second.err")"
    return
  fi
  check_passed "$desc ($(grep -E -- "$pattern" "$work/second.err" | head -1))"
}

port_answers() {  # port_answers <host:port>
  (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null
}

start_server "$tessera" "$work"
first_pid=$SERVER_PID
first_host=$SERVER_HOST

mkdir -p "$work/other"
expect_refusal "a second server on a port in use" 'cannot listen on .*Address already in use' \
  --listen "$first_host" --data-dir "$work/other"
expect_refusal "a second server on a data folder in use" \
  "data folder $work/data is in use by another process .*by process $first_pid" \
  --listen 127.0.0.1:0 --data-dir "$work/data"

if process_running "$first_pid" && port_answers "$first_host"; then
  check_passed "the first server still serves"
else
  fail "the first server is gone after the refusals"
fi

# Once the first has stopped, its folder opens again: the lock went with it.
# (start_server exits the script if the server does not come up.)
stop_server
rm -f "$work/port"
start_server "$tessera" "$work"
check_passed "the folder opens again after a clean stop"
kill -KILL "$SERVER_PID" 2>/dev/null
wait "$SERVER_PID" 2>/dev/null
SERVER_PID=""
rm -f "$work/port"
start_server "$tessera" "$work"
check_passed "the folder opens again after kill -9 of its holder"

end_checks
