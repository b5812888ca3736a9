#!/usr/bin/env bash
# Runs the TSan build's tests (those marked TSAN in CMake, listed in <build>/tsan_tests.txt).
# First checks that none of them links gRPC: Debian's gRPC is not built with TSan, so a test that
# links it reports races inside gRPC that are not there. A TSan report fails the test (exit 66).
#
#   scripts/run_tsan_tests.sh [build dir, default build-tsan] [ctest -j, default nproc]
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
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1}"
cd "$build_dir"
ctest -L tsan --output-on-failure -j "$jobs"
