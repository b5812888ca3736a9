#!/usr/bin/env bash
# node_test.sh: runs the official Node client's suite (node/bigtable_test.js) against a
# Bigtable-API server.
#
#   node_test.sh <server-command> <cache-dir>
#
# <server-command>: the `tessera` binary or `cbtemulator` (see server_lib.sh).
# <cache-dir>: where the client is installed (outside the source tree), once: node/package.json
# and node/package-lock.json pin @google-cloud/bigtable 6.5.1 and its dependencies; the install
# is redone when they change. Without node or npm, or when npm cannot install (no network), the
# test prints SKIPPED and exits 77 (ctest SKIP_RETURN_CODE).
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=server_lib.sh
source "$here/server_lib.sh"

if [[ $# -ne 2 ]]; then
  echo "usage: $0 <tessera-binary | cbtemulator> <cache-dir>" >&2
  exit 2
fi
server_cmd=$1
cache=$2
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIPPED: node or npm not found; the Node client test needs Node.js 18+ and npm"
  exit 77
fi
node_major=$(node -p 'process.versions.node.split(".")[0]')
if ((node_major < 18)); then
  echo "SKIPPED: node $(node --version) is too old; the Node client test needs Node.js 18+"
  exit 77
fi

# ---- install the client (serialized between concurrent runs by a lock on the cache) ----
mkdir -p "$cache"
exec 9>"$cache/.lock"
if ! flock -w 600 9; then
  echo "FAIL: could not lock $cache/.lock within 10 minutes" >&2
  exit 1
fi
stamp=$(cat "$here/node/package.json" "$here/node/package-lock.json" | sha256sum | cut -d' ' -f1)
if [[ "$(cat "$cache/.installed" 2>/dev/null)" != "$stamp" ]]; then
  echo "installing @google-cloud/bigtable into $cache (npm install) ..."
  rm -rf "$cache/node_modules" "$cache/.installed"
  cp "$here/node/package.json" "$here/node/package-lock.json" "$cache/"
  if ! (cd "$cache" && timeout 600 npm install --no-audit --no-fund --loglevel=error \
      >"$cache/npm-install.log" 2>&1); then
    echo "SKIPPED: npm install failed (no network or registry?); last lines of its log:"
    tail -15 "$cache/npm-install.log"
    exit 77
  fi
  echo "$stamp" >"$cache/.installed"
fi
flock -u 9

# ---- run the suite ----
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-node-test.XXXXXX")
status=1
cleanup() {
  stop_server
  stop_lock_service
  if ((status == 0)); then rm -rf "$work"; else echo "work folder kept: $work"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

start_server "$server_cmd" "$work"
# METADATA_SERVER_DETECTION=none: no probing for a GCE metadata server (no credentials needed).
BIGTABLE_EMULATOR_HOST=$SERVER_HOST TESSERA_ADMIN_HOST=$ADMIN_HOST TESSERA_TLS_CA=$TLS_CA \
  TESSERA_NODE_MODULES="$cache/node_modules" \
  TESSERA_SERVER_KIND=$SERVER_KIND METADATA_SERVER_DETECTION=none \
  timeout 300 node --test --test-reporter=spec "$here/node/bigtable_test.js"
status=$?
if ((status != 0)); then
  echo "node_test: FAILED against $SERVER_KIND (node exited $status); server log: $SERVER_LOG"
  tail -20 "$SERVER_LOG"
  exit 1
fi
stop_server
if [[ $SERVER_KIND == tessera && $SERVER_EXIT != 0 ]]; then
  status=1
  echo "node_test: tessera serve exited $SERVER_EXIT on SIGTERM (expected 0)"
  exit 1
fi
echo "node_test: all tests passed against $SERVER_KIND"
