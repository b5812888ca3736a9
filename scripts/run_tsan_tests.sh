#!/usr/bin/env bash
# Runs the TSan build's test binaries (those marked TSAN in CMake, listed in
# <build>/tsan_tests.txt), `jobs` at a time, each in its own folder. First checks that none of
# them links gRPC: Debian's gRPC is not built with TSan, and a binary that links it reports
# races inside gRPC that are not there. A TSan report fails its binary (halt_on_error, exit 66);
# the failing binaries' output is printed.
#
#   scripts/run_tsan_tests.sh [build dir, default build-tsan] [jobs, default nproc]
set -euo pipefail
build_dir=${1:-build-tsan}
jobs=${2:-$(nproc)}
list="$build_dir/tsan_tests.txt"
if [ ! -f "$list" ]; then
  echo "run_tsan_tests: $list not found (cmake --preset tsan first)" >&2
  exit 2
fi
bad=0
while read -r bin; do
  [ -n "$bin" ] || continue
  if ldd "$bin" | grep -q 'libgrpc'; then
    echo "run_tsan_tests: $bin links gRPC; it cannot be marked TSAN"
    bad=1
  fi
done < "$list"
[ $bad -eq 0 ] || exit 1

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1}"
export LOGS=$logs
# One line per binary: "ok <name> <seconds>" or "FAILED <name> <seconds>".
grep -v '^$' "$list" | xargs -r -P "$jobs" -I{} sh -c '
  name=$(basename "$1"); start=$(date +%s)
  if (cd "$(dirname "$1")" && "$1" > "$LOGS/$name.log" 2>&1); then r=ok; else r=FAILED; fi
  echo "$r $name $(( $(date +%s) - start ))s"' sh {} | tee "$logs/summary"
passed=$(grep -c '^ok ' "$logs/summary" || true)
failed=$(grep -c '^FAILED ' "$logs/summary" || true)
for name in $(awk '$1 == "FAILED" {print $2}' "$logs/summary"); do
  echo "---- $name (last 80 lines)"
  tail -n 80 "$logs/$name.log"
done
echo "tsan: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
