#!/usr/bin/env bash
# tls_test.sh: what TLS refuses (issue 13, docs/security.md), against three `tessera serve`
# with etcd, all on TLS, the nodes authenticated to each other by one CA's certificates
# (server_lib.sh, TESSERA_TEST_TLS=1):
#   * a client with the CA works through any node; without TLS, or trusting another CA, it is
#     refused;
#   * a fourth node whose certificate another CA signed never joins (its handshakes fail), while
#     a fourth node of the CA does (rpc/tls_test.cc checks the node-to-node gate itself: a
#     caller without a certificate is UNAUTHENTICATED there);
#   * a node started with a key but no certificate, or a file that is no certificate, stops at
#     once with a message naming the flag.
#
#   tls_test.sh <tessera-binary>
# Skips (exit 77) without etcd or jq; fails without openssl (install_deps.sh installs it).
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=server_lib.sh
source "$here/server_lib.sh"

if [[ $# -ne 1 ]]; then
  echo "usage: $0 <tessera-binary>" >&2
  exit 2
fi
tessera=$1
export TESSERA_TEST_TOPOLOGY=cluster TESSERA_TEST_TLS=1
begin_checks tls
start_server "$tessera" "$work"

node1=127.0.0.1:${CLUSTER_PORTS[0]}
node2=127.0.0.1:${CLUSTER_PORTS[1]}
node3=127.0.0.1:${CLUSTER_PORTS[2]}

shell() { # <addr> <script> [client flags...]: stdout+stderr in $out, exit code in $rc
  local addr=$1 script=$2
  shift 2
  out=$(timeout 30 "$tessera" shell --endpoint "$addr" "$@" -e "$script" 2>&1)
  rc=$?
}

# ---- clients ----
shell "$node1" "create table t families=cf; put t a cf:q=hello" "${TLS_CLIENT_ARGS[@]}"
if ((rc == 0)); then check_passed "a client with the CA creates and writes"; else
  fail "a client with the CA: rc=$rc $out"
fi
ok=0
for ((i = 0; i < 50; i++)); do
  shell "$node3" "get t a" "${TLS_CLIENT_ARGS[@]}"
  if ((rc == 0)) && [[ $out == *hello* ]]; then ok=1 && break; fi
  sleep 0.2
done
if ((ok)); then check_passed "the row is read through another node (replicated over mTLS)"; else
  fail "read through node 3: rc=$rc $out"
fi
TESSERA_TLS_CA=$TLS_CA shell "$node2" "get t a"
if ((rc == 0)) && [[ $out == *hello* ]]; then check_passed "\$TESSERA_TLS_CA works as --tls-ca"; else
  fail "\$TESSERA_TLS_CA: rc=$rc $out"
fi
shell "$node2" "get t a"
if ((rc != 0)); then check_passed "a plaintext client is refused"; else
  fail "a plaintext client read: $out"
fi
make_test_ca "$work/tls" other && issue_test_cert "$work/tls" other stranger ||
  fail "openssl: the foreign CA"
shell "$node2" "get t a" --tls-ca "$work/tls/other.pem"
if ((rc != 0)); then check_passed "a client trusting another CA is refused"; else
  fail "a client trusting another CA read: $out"
fi
status=$(timeout 10 "$tessera" admin status --json --addr "$node2" "${TLS_CLIENT_ARGS[@]}")
if [[ $(jq '[.nodes[] | select(.liveness == "up")] | length' <<<"$status") == 3 ]]; then
  check_passed "admin status over TLS sees 3 nodes up"
else
  fail "admin status over TLS: $status"
fi

# ---- a stranger and a fourth node ----
start_fourth() { # <name> <cert basename>: a node with that certificate, seeded by node 1
  local name=$1 cert=$2
  mkdir -p "$work/$name"
  "$tessera" serve --listen 127.0.0.1:0 --port-file "$work/$name/port" \
    --data-dir "$work/$name/data" --log-level info --gossip-interval-ms 100 \
    --lock-service "etcd://$ETCD_ENDPOINT" --seeds "$node1" --http-listen "" \
    --tls-cert "$work/tls/$cert.pem" --tls-key "$work/tls/$cert.key" --tls-ca "$TLS_CA" \
    --etcd-tls-ca "$TLS_CA" --etcd-tls-cert "$work/tls/node.pem" \
    --etcd-tls-key "$work/tls/node.key" >"$work/$name.log" 2>&1 &
  echo $!
}
# The stranger's certificate is signed by another CA; it may reach etcd (as a misconfigured
# node would), but no node takes its gossip.
stranger_pid=$(start_fourth stranger stranger)
issue_test_cert "$work/tls" ca node4 || fail "openssl: node 4's certificate"
node4_pid=$(start_fourth node4 node4)
joined=0
for ((i = 0; i < 150; i++)); do
  status=$(timeout 10 "$tessera" admin status --json --addr "$node1" "${TLS_CLIENT_ARGS[@]}")
  if [[ $(jq '[.nodes[] | select(.liveness == "up")] | length' <<<"$status") == 4 ]]; then
    joined=1 && break
  fi
  sleep 0.2
done
if ((joined)); then check_passed "a fourth node with the CA's certificate joins"; else
  fail "node 4 did not join: $status"
fi
sleep 2  # a few more gossip rounds for the stranger
stranger=$(sed -n 's/.*cluster: node \([0-9.:]*\) (cluster.*/\1/p' "$work/stranger.log" | head -1)
status=$(timeout 10 "$tessera" admin status --json --addr "$node1" "${TLS_CLIENT_ARGS[@]}")
liveness=$(jq -r --arg s "$stranger" '[.nodes[] | select(.endpoint == $s) | .liveness][0]' \
  <<<"$status")
if [[ -n $stranger && $liveness != up && ! -s $work/stranger/port ]]; then
  check_passed "a node whose certificate another CA signed never joins (seen: $liveness)"
else
  fail "the stranger '$stranger' joined ($liveness): $status; $(tail -5 "$work/stranger.log")"
fi
kill -TERM "$stranger_pid" "$node4_pid" 2>/dev/null
wait "$stranger_pid" "$node4_pid" 2>/dev/null

# ---- bad flags ----
out=$(timeout 20 "$tessera" serve --listen 127.0.0.1:0 --data-dir "$work/bad" \
  --tls-key "$work/tls/node.key" --tls-ca "$TLS_CA" 2>&1)
rc=$?
if ((rc != 0)) && [[ $out == *"--tls-key needs --tls-cert"* ]]; then
  check_passed "a key without its certificate is refused, naming the flag"
else
  fail "--tls-key alone: rc=$rc $out"
fi
out=$(timeout 20 "$tessera" serve --listen 127.0.0.1:0 --data-dir "$work/bad" \
  --tls-cert "$work/tls/node.key" --tls-key "$work/tls/node.key" --tls-ca "$TLS_CA" 2>&1)
rc=$?
if ((rc != 0)) && [[ $out == *"--tls-cert"*"holds no PEM CERTIFICATE"* ]]; then
  check_passed "a certificate file that holds none is refused"
else
  fail "a key as --tls-cert: rc=$rc $out"
fi
end_checks
