#!/usr/bin/env bash
# cbt_large_test.sh: cbt on real-sized data — long scans of 1 KB cells, wide rows, cells of
# several MiB, reversed scans and limits — checking every byte cbt prints.
#
#   cbt_large_test.sh <server-command>
#
# <server-command> is the `tessera` binary or the official emulator `cbtemulator`
# (server_lib.sh). cbt comes from $CBT or PATH; without it the test exits 77 (skipped).
#
# Why it exists: cbt's Go client checks at the end of every ReadRowsResponse that no row is
# left open and fails with "invalid state for end of stream" otherwise, a rule the other
# clients do not enforce; small rows never showed it (docs/server.md, "Stream").
#
# The data is loaded with `cbt import` (a CSV): command-line values are limited to 128 KiB by
# the kernel. Timestamps are value-encoded, so the expected output is exact. Rows stay under
# 4 MiB: cbt keeps gRPC's default receive limit in emulator mode, so it cannot read a larger
# row from any server (Tessera's own client reads them: data_service_test).
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=server_lib.sh
source "$here/server_lib.sh"

if [[ $# -ne 1 ]]; then
  echo "usage: $0 <tessera-binary | cbtemulator>" >&2
  exit 2
fi
server_cmd=$1
require_cbt
export TZ=UTC
begin_checks cbt-large
start_server "$server_cmd" "$work"
export BIGTABLE_EMULATOR_HOST=$SERVER_HOST

# check_same <description> <expected-output-file> <cbt args...>
check_same() {
  local desc=$1 expected=$2
  shift 2
  cbt_run "$@"
  if ((rc != 0)); then
    fail "$desc: cbt $* exited $rc: $(grep -v 'creds flag' "$work/err" | head -4)"
    return
  fi
  if ! cmp -s "$expected" "$work/out"; then
    fail "$desc: cbt $* printed something else ($(wc -c <"$work/out") bytes, expected $(wc -c <"$expected")); first differences:"
    diff <(cut -c1-120 "$expected") <(cut -c1-120 "$work/out") | head -10 >&2
    return
  fi
  check_passed "$desc"
}

# The generator: one awk program writes both the CSV that cbt imports and the text cbt must
# print for a range of those rows. A value is its row and column repeated to the cell size;
# cell (row i, column j) has timestamp (i * 10 + j) * 1000 µs.
gen() {  # gen <mode csv|expect> <key-format> <first> <last> <columns> <bytes> [step]
  awk -v mode="$1" -v fmt="$2" -v first="$3" -v last="$4" -v cols="$5" -v size="$6" \
    -v step="${7:-1}" '
    function value(i, j,   unit, v) {
      unit = sprintf(fmt "c%d.", i, j); v = unit
      while (length(v) < size) v = v v
      return substr(v, 1, size)
    }
    function ts(us,   s) {  # cbt prints local time; TZ=UTC
      s = int(us / 1000000)
      return strftime("%Y/%m/%d-%H:%M:%S", s, 1) sprintf(".%06d", us % 1000000)
    }
    BEGIN {
      if (mode == "csv") {
        line = ""; for (j = 1; j <= cols; j++) line = line ",cf"; print line
        line = ""; for (j = 1; j <= cols; j++) line = line sprintf(",c%04d", j); print line
        for (i = first; i <= last; i++) {
          line = sprintf(fmt, i)
          for (j = 1; j <= cols; j++) line = line "," value(i, j) "@" ((i * 10 + j) * 1000)
          print line
        }
        exit
      }
      for (i = first; step > 0 ? i <= last : i >= last; i += step) {
        print "----------------------------------------"
        printf fmt "\n", i
        for (j = 1; j <= cols; j++) {
          printf "  %-40s @ %s\n", sprintf("cf:c%04d", j), ts((i * 10 + j) * 1000)
          printf "    \"%s\"\n", value(i, j)
        }
        print ""
      }
    }'
}
# awk's strftime is a gawk/mawk 1.3.4 extension; check it once.
if ! awk 'BEGIN { strftime("%Y", 0, 1) }' 2>/dev/null; then
  echo "FAIL: this awk has no strftime (install gawk or mawk >= 1.3.4)" >&2
  exit 1
fi

cbt_run createtable big families=cf
((rc == 0)) || fail "createtable big: $(head -3 "$work/err")"
cbt_run createtable huge families=cf
((rc == 0)) || fail "createtable huge: $(head -3 "$work/err")"

# ---- a long scan: 1000 rows of three 1 KB cells (3 MB, several responses) ----

gen csv 'r%04d' 0 999 3 1000 >"$work/big.csv"
cbt_run import big "$work/big.csv" timestamp=value-encoded
((rc == 0)) || fail "import 1000 rows: $(head -3 "$work/err")"

gen expect 'r%04d' 0 999 3 1000 >"$work/e_all"
check_same "read 1000 rows of 3 x 1 KB" "$work/e_all" read big
gen expect 'r%04d' 0 499 3 1000 >"$work/e_500"
check_same "read count=500" "$work/e_500" read big count=500
gen expect 'r%04d' 100 199 3 1000 >"$work/e_range"
check_same "read start= end=" "$work/e_range" read big start=r0100 end=r0200
gen expect 'r%04d' 500 599 3 1000 >"$work/e_prefix"
check_same "read prefix=" "$work/e_prefix" read big prefix=r05
gen expect 'r%04d' 999 0 3 1000 -1 >"$work/e_rev"
check_same "read reversed=true (1000 rows)" "$work/e_rev" read big reversed=true
gen expect 'r%04d' 899 600 3 1000 -1 >"$work/e_rev_range"
check_same "read reversed=true start= end= count=" "$work/e_rev_range" \
  read big reversed=true start=r0300 end=r0900 count=300
gen expect 'r%04d' 777 777 3 1000 >"$work/e_one"
check_same "lookup one 3 KB row" "$work/e_one" lookup big r0777
cbt_run count big
if ((rc != 0)) || [[ "$(cat "$work/out")" != 1000 ]]; then
  fail "count big: rc=$rc, printed $(head -c 100 "$work/out")"
else
  check_passed "count 1000 rows"
fi

# ---- wide rows and large cells (one row per import batch) ----

import_huge() {  # import_huge <key-format> <index> <columns> <bytes>
  gen csv "$1" "$2" "$2" "$3" "$4" >"$work/huge.csv"
  cbt_run import huge "$work/huge.csv" timestamp=value-encoded batch-size=1
  ((rc == 0)) || fail "import $3 x $4 bytes: $(head -3 "$work/err")"
}
lookup_huge() {  # lookup_huge <description> <key-format> <index> <columns> <bytes>
  gen expect "$2" "$3" "$3" "$4" "$5" >"$work/e_huge"
  check_same "$1" "$work/e_huge" lookup huge "$(printf "$2" "$3")"
}

import_huge 'wide%d' 1 3 614400
lookup_huge "lookup a row of three 600 KiB cells" 'wide%d' 1 3 614400
import_huge 'many%d' 2 2000 1024
lookup_huge "lookup a row of 2000 columns of 1 KiB" 'many%d' 2 2000 1024
import_huge 'cell%d' 3 1 1572864
lookup_huge "lookup a cell of 1.5 MiB" 'cell%d' 3 1 1572864
import_huge 'cell%d' 4 1 3145728
lookup_huge "lookup a cell of 3 MiB" 'cell%d' 4 1 3145728
# Just under gRPC's default 4 MiB message: the largest row cbt can take in emulator mode (it
# keeps gRPC's default receive limit there), and the largest request the emulator accepts.
import_huge 'cell%d' 5 1 4000000
lookup_huge "lookup a cell of 4,000,000 bytes" 'cell%d' 5 1 4000000
# A scan over all of them: each row is whole in its own response.
: >"$work/e_scan"
gen expect 'cell%d' 3 3 1 1572864 >>"$work/e_scan"
gen expect 'cell%d' 4 4 1 3145728 >>"$work/e_scan"
gen expect 'cell%d' 5 5 1 4000000 >>"$work/e_scan"
check_same "read prefix=cell (1.5, 3 and 3.8 MiB cells)" "$work/e_scan" read huge prefix=cell
: >"$work/e_scan_rev"
gen expect 'cell%d' 5 5 1 4000000 >>"$work/e_scan_rev"
gen expect 'cell%d' 4 4 1 3145728 >>"$work/e_scan_rev"
check_same "read reversed=true count=2 over the big cells" "$work/e_scan_rev" \
  read huge reversed=true prefix=cell count=2

end_checks
