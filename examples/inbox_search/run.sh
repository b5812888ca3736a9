#!/usr/bin/env bash
# The inbox search example in one command (`make inbox-search`): starts a throw-away
# `tessera serve` (or uses the server in $BIGTABLE_EMULATOR_HOST), creates the index, loads
# messages.tsv and asks the Cassandra paper's two queries (§6.1).
#
#   examples/inbox_search/run.sh [build-dir]     (default: build)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:-$here/../../build}
tessera=$build/src/tessera/cli/tessera
inbox=$build/examples/inbox_search
for bin in "$tessera" "$inbox"; do
  [[ -x $bin ]] || { echo "run.sh: $bin is missing; build first (make inbox-search)" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-inbox.XXXXXX")
server_pid=""
cleanup() {
  if [[ -n $server_pid ]]; then kill -TERM "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

if [[ -n ${BIGTABLE_EMULATOR_HOST:-} ]]; then
  endpoint=$BIGTABLE_EMULATOR_HOST
  echo "# using the server at $endpoint (BIGTABLE_EMULATOR_HOST)"
else
  "$tessera" serve --listen 127.0.0.1:0 --port-file "$work/port" --data-dir "$work/data" \
    --log-level warn >"$work/serve.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 300); do [[ -s $work/port ]] && break; sleep 0.1; done
  [[ -s $work/port ]] || { echo "run.sh: tessera serve did not start:" >&2; cat "$work/serve.log" >&2; exit 1; }
  endpoint=127.0.0.1:$(cat "$work/port")
  echo "# a throw-away tessera serve on $endpoint (data in $work/data)"
fi

run() { echo "\$ inbox_search $*"; "$inbox" --endpoint "$endpoint" "$@"; echo; }
run setup
run index "$here/messages.tsv"
echo "# Term search: alice's messages containing 'dinner', newest first (one row, one super column)"
run terms alice dinner
echo "# Interaction search: the messages between alice and carol, newest first"
run with alice carol
