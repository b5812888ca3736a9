#!/usr/bin/env bash
# End-to-end test of the inbox search example against a real `tessera serve`:
#   inbox_search_test.sh <tessera binary> <inbox_search binary> <messages.tsv>
set -euo pipefail
TESSERA=$1 INBOX=$2 MESSAGES=$3
WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

"$TESSERA" serve --listen 127.0.0.1:0 --port-file "$WORK/port" --data-dir "$WORK/data" \
  --log-level warn >"$WORK/serve.out" 2>"$WORK/serve.err" &
SERVER_PID=$!
for _ in $(seq 1 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
[ -s "$WORK/port" ] || { echo "server did not start"; cat "$WORK/serve.err"; exit 1; }
EP=127.0.0.1:$(cat "$WORK/port")

fail=0
expect() {  # expect <description> <expected output> <command...>
  local what=$1 want=$2; shift 2
  local got
  got=$("$@" 2>&1) || true
  if [ "$got" != "$want" ]; then
    echo "FAIL: $what"; echo "--- want"; echo "$want"; echo "--- got"; echo "$got"; fail=1
  else
    echo "ok: $what"
  fi
}

"$INBOX" --endpoint "$EP" setup
expect "index" "indexed 7 messages" "$INBOX" --endpoint "$EP" index "$MESSAGES"
expect "alice's messages with 'dinner', newest first" \
"1700000300004000	Can I bring my brother to dinner?
1700000200003000	The Thai place, dinner at eight
1700000000001000	Dinner on Friday?" \
  "$INBOX" --endpoint "$EP" terms alice dinner
expect "limit keeps the newest" \
"1700000300004000	Can I bring my brother to dinner?" \
  "$INBOX" --endpoint "$EP" terms alice DINNER --limit 1
expect "bob never saw carol's question" \
"1700000200003000	The Thai place, dinner at eight
1700000000001000	Dinner on Friday?" \
  "$INBOX" --endpoint "$EP" terms bob dinner
expect "a word nobody used" "" "$INBOX" --endpoint "$EP" terms alice lunch
expect "alice and carol, newest first" \
"1700000400005000	Of course, see you Friday
1700000300004000	Can I bring my brother to dinner?
1700000200003000	The Thai place, dinner at eight" \
  "$INBOX" --endpoint "$EP" with alice carol
expect "dave's side of the conversation" \
"1700000600007000	Thanks, report looks good
1700000500006000	Quarterly report attached" \
  "$INBOX" --endpoint "$EP" with dave alice

# The index is durable: restart the server and ask again.
kill -TERM "$SERVER_PID"; wait "$SERVER_PID" || { echo "FAIL: unclean shutdown"; fail=1; }
rm -f "$WORK/port"
"$TESSERA" serve --listen 127.0.0.1:0 --port-file "$WORK/port" --data-dir "$WORK/data" \
  --log-level warn >"$WORK/serve.out" 2>"$WORK/serve.err" &
SERVER_PID=$!
for _ in $(seq 1 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
EP=127.0.0.1:$(cat "$WORK/port")
expect "after a restart" \
"1700000600007000	Thanks, report looks good
1700000500006000	Quarterly report attached" \
  "$INBOX" --endpoint "$EP" with dave alice
expect "bad search key" "inbox_search: INVALID_ARGUMENT: search key \"a:b\" must be non-empty and contain no ':'" \
  "$INBOX" --endpoint "$EP" with alice a:b
exit $fail
