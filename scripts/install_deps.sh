#!/usr/bin/env bash
# Installs every Debian package that building, testing and benchmarking Tessera needs, and only
# the ones that are missing. Safe to run again; used by `make run`, `make test` and CI.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache
  clang libclang-rt-14-dev python3
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libre2-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libzstd-dev liblz4-dev libxxhash-dev
  librocksdb-dev libleveldb-dev
  libcli11-dev nlohmann-json3-dev libtoml11-dev
  libedit-dev libjemalloc-dev etcd-server etcd-client
  prometheus-cpp-dev prometheus openssl libssl-dev jq chromium chromium-driver
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install_deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -o DPkg::Lock::Timeout=600 >/dev/null
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends \
  -o DPkg::Lock::Timeout=600 "${missing[@]}"
