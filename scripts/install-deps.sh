#!/usr/bin/env bash
# Installs the Debian packages hyc needs to build and test. Idempotent: when
# every package is already present it only runs dpkg queries (well under 1 s).
set -euo pipefail

PACKAGES=(
  g++ cmake ninja-build python3 ccache
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  libxbyak-dev libdnnl-dev ocl-icd-opencl-dev libomp-22-dev
  libgtest-dev libgmock-dev nlohmann-json3-dev libbenchmark-dev
  libicu-dev libxxhash-dev libhwloc-dev
  openmpi-bin
  pkgconf
  clang-22 libclang-rt-22-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# The serving e2e test drives `hyc serve` with the official openai npm
# client: Debian's nodejs + npm where no npm is present (a node that came
# from elsewhere with its own npm is left alone).
if ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
