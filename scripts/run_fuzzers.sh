#!/usr/bin/env bash
# Runs every libFuzzer target in the fuzz build for a bounded time each, starting from the
# checked-in seed corpus (fuzz/corpus/<target>/) when there is one. Fails if any fuzzer finds a
# crash, a leak or a sanitizer report.
set -euo pipefail
build_dir=${1:-build-fuzz}
seconds=${2:-20}
root=$(cd "$(dirname "$0")/.." && pwd)
status=0
count=0
failed=0
for fuzzer in $(find "$build_dir/fuzz" -maxdepth 1 -type f -name '*_fuzzer' -perm -u+x | sort); do
  name=$(basename "$fuzzer")
  work=$(mktemp -d)
  corpus=()
  if [ -d "$root/fuzz/corpus/$name" ]; then corpus=("$root/fuzz/corpus/$name"); fi
  echo "fuzz: $name for ${seconds}s"
  count=$((count + 1))
  if ! "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 \
       -artifact_prefix="$work/" "$work" "${corpus[@]}" > "$work/log" 2>&1; then
    echo "fuzz: $name FAILED; last lines:"
    tail -n 40 "$work/log"
    failed=$((failed + 1))
    status=1
  else
    grep -E "^#[0-9]+.*DONE" "$work/log" | tail -n 1 || true
  fi
  rm -rf "$work"
done
echo "fuzz: $count targets, $failed with findings"
exit $status
