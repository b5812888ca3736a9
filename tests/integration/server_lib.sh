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
#       ADMIN_HOST   where table and instance admin go: SERVER_HOST on one server
#       SERVER_NODES 1 (3 for a cluster, below)
#     The server's stdout/stderr go to <work-dir>/server.log. Exits the test (code 1) if the
#     server does not come up.
#   stop_server
#     SIGTERM, wait (at most 10 s), then SIGKILL. Sets SERVER_EXIT to the server's exit status
#     (137 when it had to be killed). Safe to call twice; install it in an EXIT trap.
#
# A cluster instead of one server: with TESSERA_TEST_TOPOLOGY=cluster (the *_cluster ctest
# variants, issue 11), start_server with the tessera binary starts etcd (Debian's etcd-server:
# $TESSERA_ETCD, else /usr/bin/etcd; without it the test exits 77 = skipped) and three
# `tessera serve` naming it, nodes 2 and 3 seeded by node 1, and waits (at most 60 s) until each
# node serves and sees all three registered and up under one master. Tables created after that
# get RF 3 (min(3, nodes)). Then SERVER_HOST is node 2's address (the data calls),
# ADMIN_HOST node 1's (table and instance admin), SERVER_PID node 2's pid, SERVER_NODES 3;
# cbt_run sends each cbt command to the one its API belongs to. stop_server stops the three
# nodes (SERVER_EXIT: the first non-zero exit status, else 0) and keeps etcd, so a later
# start_server restarts the same cluster: same data folders, same ports. stop_lock_service
# stops etcd (end_of_script calls it).
#
# TLS (TESSERA_TEST_TLS=1, with the cluster topology; docs/security.md): start_server first
# makes a test CA and certificates for 127.0.0.1 in <work-dir>/tls (make_test_certs, openssl),
# etcd serves its client port over TLS and asks for client certificates, and every node gets
# --tls-cert/--tls-key/--tls-ca (mutual TLS between nodes) and --etcd-tls-*. TLS_CA is then
# the CA's file, and TLS_CLIENT_ARGS (--tls-ca FILE) what a tessera client command needs.
#
# And the scaffolding of a checking script:
#   begin_checks <name>   sets $work (a fresh folder) and installs an EXIT trap that stops the
#                         server and removes $work unless a check failed
#   check_passed <desc>   / fail <desc>: count one check
#   end_checks            prints "N passed, M failed" and returns non-zero on a failure
#   require_cbt           sets CBT (from $CBT or PATH), or exits 77 (skipped) without it
#   cbt_run <args...>     cbt with a 60 s bound: stdout in $work/out, stderr in $work/err,
#                         exit code in $rc; admin commands go to ADMIN_HOST, the others to
#                         SERVER_HOST

SERVER_PID=""
SERVER_HOST=""
SERVER_KIND=""
SERVER_LOG=""
SERVER_EXIT=""
ADMIN_HOST=""
SERVER_NODES=1
TLS_CA=""
TLS_CLIENT_ARGS=()

# A certificate `name` for 127.0.0.1 (server and client use) in `dir`, signed by the CA
# `ca` (<dir>/<ca>.pem and .key).
issue_test_cert() {
  local dir=$1 ca=$2 name=$3
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' \
    >"$dir/ext"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$name" \
    -keyout "$dir/$name.key" -out "$dir/$name.csr" 2>/dev/null &&
    openssl x509 -req -in "$dir/$name.csr" -CA "$dir/$ca.pem" -CAkey "$dir/$ca.key" \
      -CAcreateserial -days 2 -extfile "$dir/ext" -out "$dir/$name.pem" 2>/dev/null
}

# A self-signed CA `ca` in `dir` (<dir>/<ca>.pem and .key).
make_test_ca() {
  local dir=$1 ca=$2
  mkdir -p "$dir"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=tessera test $ca" -keyout "$dir/$ca.key" -out "$dir/$ca.pem" 2>/dev/null
}

# The cluster's CA and the certificates of its nodes and of etcd, in <work>/tls.
make_test_certs() {
  local dir=$1/tls
  if ! command -v openssl >/dev/null; then
    echo "FAIL: the TLS variant makes its certificates with openssl; install openssl" >&2
    exit 1
  fi
  make_test_ca "$dir" ca && issue_test_cert "$dir" ca node && issue_test_cert "$dir" ca etcd || {
    echo "FAIL: openssl could not make the test certificates" >&2
    exit 1
  }
  TLS_CA=$dir/ca.pem
  TLS_CLIENT_ARGS=(--tls-ca "$TLS_CA")
}

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
  if [[ ${TESSERA_TEST_TOPOLOGY:-} == cluster ]]; then
    start_cluster "$cmd" "$work"
    return
  fi
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
      ADMIN_HOST=$SERVER_HOST
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
  if ((${#CLUSTER_PIDS[@]} > 0)); then
    stop_cluster_nodes
    return 0
  fi
  [[ -n $SERVER_PID ]] || return 0
  local pid=$SERVER_PID
  SERVER_PID=""
  stop_process "$pid"
}

# SIGTERM `pid`, wait (at most 10 s), then SIGKILL; SERVER_EXIT = its exit status (also when
# it had already exited).
stop_process() {
  local pid=$1 i
  if ! kill -TERM "$pid" 2>/dev/null; then
    wait "$pid" 2>/dev/null
    SERVER_EXIT=$?
    return 0
  fi
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

# ---- the cluster (TESSERA_TEST_TOPOLOGY=cluster) ----

CLUSTER_PIDS=()   # node i's pid (node 1 is index 0)
CLUSTER_PORTS=()  # node i's port, kept over restarts
ETCD_PID=""
ETCD_ENDPOINT=""

# Starts etcd on two random free-looking ports (a few attempts: a port may be taken).
start_lock_service() {
  local work=$1 etcd=${TESSERA_ETCD:-/usr/bin/etcd} attempt i client peer
  if [[ ! -x $etcd ]]; then
    echo "SKIPPED: no etcd binary ($etcd): install etcd-server to run the cluster variant"
    exit 77
  fi
  for ((attempt = 0; attempt < 5; attempt++)); do
    client=$((20000 + RANDOM % 40000))
    peer=$((client + 1))
    rm -rf "$work/etcd"
    # Short heartbeats let etcd grant the nodes' short leases (etcd_test_server.cc does the same).
    local scheme=http tls_args=()
    if [[ -n $TLS_CA ]]; then
      scheme=https
      tls_args=(--cert-file "$work/tls/etcd.pem" --key-file "$work/tls/etcd.key"
        --trusted-ca-file "$TLS_CA" --client-cert-auth)
    fi
    "$etcd" --name m0 --data-dir "$work/etcd" "${tls_args[@]}" \
      --listen-client-urls "$scheme://127.0.0.1:$client" \
      --advertise-client-urls "$scheme://127.0.0.1:$client" \
      --listen-peer-urls "http://127.0.0.1:$peer" \
      --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
      --initial-cluster "m0=http://127.0.0.1:$peer" \
      --heartbeat-interval 20 --election-timeout 200 >"$work/etcd.log" 2>&1 &
    ETCD_PID=$!
    for ((i = 0; i < 100; i++)); do
      process_running "$ETCD_PID" || break
      if grep -q 'ready to serve client requests' "$work/etcd.log"; then
        ETCD_ENDPOINT="127.0.0.1:$client"
        return 0
      fi
      sleep 0.1
    done
    kill -KILL "$ETCD_PID" 2>/dev/null
    wait "$ETCD_PID" 2>/dev/null
    ETCD_PID=""
  done
  echo "FAIL: etcd did not come up; its log:" >&2
  cat "$work/etcd.log" >&2
  exit 1
}

stop_lock_service() {
  [[ -n $ETCD_PID ]] || return 0
  kill -KILL "$ETCD_PID" 2>/dev/null
  wait "$ETCD_PID" 2>/dev/null
  ETCD_PID=""
}

# Node `i` (0-based) of the cluster: on its kept port after the first start, seeded by node 1.
start_cluster_node() {
  local cmd=$1 work=$2 i=$3 j
  local listen="127.0.0.1:${CLUSTER_PORTS[i]:-0}"
  local args=(serve --listen "$listen" --port-file "$work/port$i" --data-dir "$work/data$i"
    --log-level warn --lock-service "etcd://$ETCD_ENDPOINT" --gossip-interval-ms 100
    --http-listen 127.0.0.1:0)
  ((i > 0)) && args+=(--seeds "127.0.0.1:${CLUSTER_PORTS[0]}")
  if [[ -n $TLS_CA ]]; then
    args+=(--tls-cert "$work/tls/node.pem" --tls-key "$work/tls/node.key" --tls-ca "$TLS_CA"
      --etcd-tls-ca "$TLS_CA" --etcd-tls-cert "$work/tls/node.pem"
      --etcd-tls-key "$work/tls/node.key")
  fi
  mkdir -p "$work/data$i"
  rm -f "$work/port$i"
  "$cmd" "${args[@]}" >>"$work/server$i.log" 2>&1 &
  CLUSTER_PIDS[i]=$!
  for ((j = 0; j < 300; j++)); do
    if ! process_running "${CLUSTER_PIDS[i]}"; then
      echo "FAIL: node $((i + 1)) exited before serving; its log:" >&2
      cat "$work/server$i.log" >&2
      exit 1
    fi
    if [[ -s $work/port$i ]]; then
      CLUSTER_PORTS[i]=$(tr -d '[:space:]' <"$work/port$i")
      return 0
    fi
    sleep 0.1
  done
  echo "FAIL: node $((i + 1)) did not report a port within 30 s; its log:" >&2
  cat "$work/server$i.log" >&2
  exit 1
}

# True when `tessera admin status` at every node says it serves and sees all three nodes
# registered and up, under one master.
cluster_converged() {
  local cmd=$1 i status masters=""
  for ((i = 0; i < 3; i++)); do
    status=$(timeout 10 "$cmd" admin status --json --addr "127.0.0.1:${CLUSTER_PORTS[i]}" \
      "${TLS_CLIENT_ARGS[@]}" 2>/dev/null) || return 1
    jq -e '.serving and .master != "" and
           ([.nodes[] | select(.liveness == "up" and .registered)] | length) == 3' \
      >/dev/null <<<"$status" || return 1
    masters+="$(jq -r .master <<<"$status")"$'\n'
  done
  (($(sort -u <<<"$masters" | grep -c .) == 1))
}

start_cluster() {
  local cmd=$1 work=$2 i
  if [[ $(basename "$cmd") == *cbtemulator* ]]; then
    echo "FAIL: TESSERA_TEST_TOPOLOGY=cluster needs the tessera binary, not $cmd" >&2
    exit 2
  fi
  if ! command -v jq >/dev/null; then
    echo "SKIPPED: the cluster variant reads \`tessera admin status --json\` with jq; install jq"
    exit 77
  fi
  SERVER_KIND=tessera
  SERVER_NODES=3
  if [[ ${TESSERA_TEST_TLS:-} == 1 && -z $TLS_CA ]]; then make_test_certs "$work"; fi
  [[ -n $ETCD_PID ]] || start_lock_service "$work"
  for ((i = 0; i < 3; i++)); do start_cluster_node "$cmd" "$work" "$i"; done
  for ((i = 0; i < 600; i++)); do
    if cluster_converged "$cmd"; then
      SERVER_HOST="127.0.0.1:${CLUSTER_PORTS[1]}"
      ADMIN_HOST="127.0.0.1:${CLUSTER_PORTS[0]}"
      SERVER_PID=${CLUSTER_PIDS[1]}
      SERVER_LOG="$work/server1.log"
      echo "cluster of 3 (etcd $ETCD_ENDPOINT): admin through node 1 $ADMIN_HOST," \
        "data through node 2 $SERVER_HOST, node 3 127.0.0.1:${CLUSTER_PORTS[2]}"
      return 0
    fi
    sleep 0.1
  done
  echo "FAIL: the three nodes did not converge within 60 s; their logs:" >&2
  tail -n 20 "$work"/server?.log >&2
  stop_server
  exit 1
}

# Stops the three nodes, node 3 first (so the seed goes last); SERVER_EXIT as stop_server.
stop_cluster_nodes() {
  local i first=0
  for ((i = ${#CLUSTER_PIDS[@]} - 1; i >= 0; i--)); do
    stop_process "${CLUSTER_PIDS[i]}"
    ((first == 0 && SERVER_EXIT != 0)) && first=$SERVER_EXIT
  done
  CLUSTER_PIDS=()
  SERVER_PID=""
  SERVER_EXIT=$first
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
  stop_lock_service
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
# cbt has no plaintext endpoint flag (-admin-endpoint and -data-endpoint dial TLS), so each
# command gets BIGTABLE_EMULATOR_HOST of the API it calls.
cbt_run() {
  local host=$SERVER_HOST
  cbt_is_admin "$@" && host=$ADMIN_HOST
  BIGTABLE_EMULATOR_HOST=$host timeout 60 "$CBT" -project p -instance i -creds /dev/null "$@" \
    >"$work/out" 2>"$work/err"
  rc=$?
}

# True when the cbt command in `args` (after cbt's own "-flag value" pairs) is a table- or
# instance-admin one.
cbt_is_admin() {
  while [[ ${1:-} == -* ]]; do
    if [[ $1 == *=* || $# -lt 2 ]]; then shift; else shift 2; fi
  done
  case "${1:-}" in
    ls | createtable | deletetable | createfamily | deletefamily | setgcpolicy | setvaluetype | \
      deleteallrows | waitforreplication | listinstances | createinstance | deleteinstance | \
      listclusters | createcluster | updatecluster | deletecluster | createappprofile | \
      getappprofile | listappprofile | updateappprofile | deleteappprofile)
      return 0
      ;;
  esac
  return 1
}
