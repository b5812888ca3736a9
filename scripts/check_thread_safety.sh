#!/usr/bin/env bash
# Clang's thread-safety analysis as an error over Tessera's own translation units, without
# building anything: each entry of <build dir>/compile_commands.json (the default gcc build
# writes one) is parsed again by clang++ with -fsyntax-only -Wthread-safety
# -Werror=thread-safety, and every other warning off. Generated protobuf code is skipped.
#
# The clang builds (fuzz, tsan) check the code they compile with the same flags; this pass
# covers the rest, above all what links gRPC, which the TSan build cannot link (see
# docs/testing.md). Further arguments name clang builds' compile_commands.json files: the files
# those builds have compiled (with -Werror=thread-safety) are skipped; a missing one skips
# nothing.
# TS_ONLY=<regex> checks only the files whose path matches.
#
#   scripts/check_thread_safety.sh [build dir] [clang build's compile_commands.json ...]
#
# Exit status 1 if any file has a thread-safety finding (the findings are printed).
set -euo pipefail
build_dir=${1:-build}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${JOBS:-$(nproc)}
clangxx=${CLANGXX:-clang++}

db="$build_dir/compile_commands.json"
if [ ! -f "$db" ]; then
  echo "check_thread_safety: $db not found (configure $build_dir first)" >&2
  exit 2
fi

list=$(mktemp)
trap 'rm -f "$list"' EXIT
# One NUL-separated record per file: directory, then the clang++ arguments.
TS_ONLY=${TS_ONLY:-} python3 - "$db" "$root" "$clangxx" "$@" > "$list" <<'EOF'
import json, os, re, shlex, sys
db, root, clangxx = sys.argv[1:4]
def args_of(e):
    return e["arguments"] if "arguments" in e else shlex.split(e["command"])
def output_of(e):
    args = args_of(e)
    return e.get("output") or args[args.index("-o") + 1]
skip = set()
for other in sys.argv[4:]:
    if os.path.exists(other):
        # Only what that build compiled: its object file exists (a build of one target lists
        # every file of the tree in compile_commands.json).
        skip |= {e["file"] for e in json.load(open(other))
                 if os.path.exists(os.path.join(e["directory"], output_of(e)))}
only = re.compile(os.environ["TS_ONLY"]) if os.environ.get("TS_ONLY") else None
seen = set()
for e in json.load(open(db)):
    f = e["file"]
    if not f.startswith(root + "/") or f.startswith(root + "/build") or f in skip or f in seen:
        continue
    if only and not only.search(f):
        continue
    seen.add(f)
    args = args_of(e)
    out, drop = [clangxx], False
    for a in args[1:]:
        if drop:
            drop = False
            continue
        if a in ("-o", "-c"):
            drop = a == "-o"
            continue
        if a.startswith("-W") or a == f:
            continue
        out.append(a)
    out += ["-fsyntax-only", "-Wno-everything", "-Wthread-safety", "-Werror=thread-safety", f]
    sys.stdout.write(e["directory"] + "\0" + " ".join(shlex.quote(a) for a in out) + "\0")
EOF

count=$(($(tr -cd '\0' < "$list" | wc -c) / 2))
echo "check_thread_safety: $count files, $jobs at a time"
if ! xargs -0 -r -n 2 -P "$jobs" sh -c 'cd "$0" && eval "$1"' < "$list"; then
  echo "check_thread_safety: FAILED (findings above)"
  exit 1
fi
echo "check_thread_safety: $count files, no findings"
