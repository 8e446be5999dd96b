#!/usr/bin/env bash
# End-to-end test of `hyc serve` with the official `openai` npm client:
# installs the client under the build tree (once), compiles stories260K with
# small bounds, then runs openai_e2e.mjs (which starts and stops the server).
# Exits 77 (CTest: skipped) with the reason when node, npm, the client or
# the model is unavailable.
# Args: HYC_BIN BUILD_DIR SHARED_DIR [MODE]   MODE: e2e (default) | soak |
# e2e-tp2 (the e2e checks on a `--tp 2` artifact: two ranks, rank 0 serving)
set -euo pipefail
HYC=$1
BUILD=$2
SHARED=$3
MODE=${4:-e2e}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=stories_artifact.sh
source "$HERE/stories_artifact.sh"

# shellcheck source=openai_client.sh
source "$HERE/openai_client.sh"

MODEL=$SHARED/models/stories260K/stories260K.bin
[ -f "$MODEL" ] || skip "no stories260K checkpoint at $MODEL"
openai_client "$BUILD"

WORK=$BUILD/test-serve
mkdir -p "$WORK"
ART=$WORK/stories-serve-portable-bf16.hyc
TP=()
if [ "$MODE" = e2e-tp2 ]; then
  ART=$WORK/stories-serve-portable-bf16-tp2.hyc
  TP=(--tp 2)
  MODE=e2e
fi
stories_artifact "$HYC" "$MODEL" "$ART" "$WORK/compile.log" "${TP[@]}"

export NODE_PATH=$NPM_DIR/node_modules
exec node "$HERE/openai_e2e.mjs" "$HYC" "$ART" "$NPM_DIR/node_modules" "$MODE"
