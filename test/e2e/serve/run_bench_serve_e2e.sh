#!/usr/bin/env bash
# End-to-end test of bench/serve/bench_serve.py: compiles stories260K as
# the serving e2e does (the same artifact), then bench_serve_e2e.py starts
# `hyc serve` on it and checks the benchmark's report.
# Exits 77 (CTest: skipped) with the reason when python3 or the model is
# unavailable.
# Args: HYC_BIN BUILD_DIR SHARED_DIR SOURCE_DIR
set -euo pipefail
HYC=$1
BUILD=$2
SHARED=$3
SRC=$4
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=stories_artifact.sh
source "$HERE/stories_artifact.sh"

skip() {
  echo "SKIPPED: $*"
  exit 77
}

command -v python3 >/dev/null || skip "python3 is not installed"
MODEL=$SHARED/models/stories260K/stories260K.bin
[ -f "$MODEL" ] || skip "no stories260K checkpoint at $MODEL"

WORK=$BUILD/test-serve
mkdir -p "$WORK"
ART=$WORK/stories-serve-portable-bf16.hyc
stories_artifact "$HYC" "$MODEL" "$ART" "$WORK/compile.log"
exec python3 "$HERE/bench_serve_e2e.py" "$HYC" "$ART" "$SRC" "$WORK"
