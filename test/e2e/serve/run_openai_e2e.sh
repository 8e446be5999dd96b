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

skip() {
  echo "SKIPPED: $*"
  exit 77
}

command -v node >/dev/null || skip "node is not installed"
command -v npm >/dev/null || skip "npm is not installed"
MODEL=$SHARED/models/stories260K/stories260K.bin
[ -f "$MODEL" ] || skip "no stories260K checkpoint at $MODEL"

NPM_DIR=$BUILD/test-npm/openai
if [ ! -f "$NPM_DIR/node_modules/openai/package.json" ]; then
  mkdir -p "$NPM_DIR"
  # Pinned major version: the client API the test is written against.
  if ! (cd "$NPM_DIR" && timeout 180 npm install --no-audit --no-fund \
        --silent openai@4 >install.log 2>&1); then
    tail -5 "$NPM_DIR/install.log" || true
    skip "cannot install the openai npm client (registry unreachable?)"
  fi
fi

WORK=$BUILD/test-serve
mkdir -p "$WORK"
ART=$WORK/stories-serve-portable-bf16.hyc
TP=()
if [ "$MODE" = e2e-tp2 ]; then
  ART=$WORK/stories-serve-portable-bf16-tp2.hyc
  TP=(--tp 2)
  MODE=e2e
fi
# max_seqs 4 and 32-token prefill chunks: 16 concurrent requests must
# queue and share steps; a 512-position context (the model's) leaves room
# for a stream long enough to be cut off by its client. The host's own
# kernels (portable target, bf16 weights): a row's logits do not depend on
# the batch it lands in, so a greedy answer batched with others must equal
# `hyc run` alone bit for bit. The amx variant is the exception
# (docs/architecture.md), so an AMX host runs avx512-bf16.
if [ ! -f "$ART/manifest.json" ] || [ "$MODEL" -nt "$ART/manifest.json" ] ||
   [ "$HYC" -nt "$ART/manifest.json" ]; then
  rm -rf "$ART"
  "$HYC" compile "$MODEL" -o "$ART" --max-seq-len 512 --max-seqs 4 \
    --max-batch-tokens 32 --target portable --quant bf16 "${TP[@]}" \
    >"$WORK/compile.log" 2>&1 || { cat "$WORK/compile.log"; exit 1; }
fi
if grep -q -w amx_tile /proc/cpuinfo; then
  export HYC_ISA=avx512-bf16
fi

export NODE_PATH=$NPM_DIR/node_modules
exec node "$HERE/openai_e2e.mjs" "$HYC" "$ART" "$NPM_DIR/node_modules" "$MODE"
