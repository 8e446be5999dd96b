#!/usr/bin/env bash
# Structured output, tool calls and reasoning through `hyc serve` with the
# official openai npm client (structured_e2e.mjs): builds two small
# random-weight Qwen3-layout models whose tokenizers are the real Qwen3 and
# DeepSeek-V3 files from ../shared/tokenizers (chat templates included),
# installs the client under the build tree (once, as run_openai_e2e.sh does)
# and runs the checks. Exits 77 (CTest: skipped) with the reason when node,
# npm, the client or the tokenizer files are unavailable.
# Args: HYC_BIN BUILD_DIR SHARED_DIR
set -euo pipefail
HYC=$1
BUILD=$2
SHARED=$3
HERE=$(cd "$(dirname "$0")" && pwd)

# shellcheck source=openai_client.sh
source "$HERE/openai_client.sh"

for t in qwen3 deepseek_v3; do
  [ -f "$SHARED/tokenizers/$t/tokenizer.json" ] ||
    skip "no $t tokenizer at $SHARED/tokenizers/$t"
done

openai_client "$BUILD"

WORK=$BUILD/test-serve-structured
mkdir -p "$WORK"
# The small preset (4 layers, hidden 256, 1024 positions) with each
# tokenizer's vocabulary size: constrained decoding fixes the form of the
# output whatever the weights say.
build() { # name tokenizer vocab
  local ckpt=$WORK/$1-ckpt art=$WORK/$1.hyc
  if [ ! -f "$art/manifest.json" ] || [ "$HYC" -nt "$art/manifest.json" ]; then
    rm -rf "$ckpt" "$art"
    "$HYC" synth --arch qwen3 --preset small --seed 3 --vocab-size "$3" \
      --tokenizer "$SHARED/tokenizers/$2" -o "$ckpt" >"$WORK/$1.log" 2>&1 &&
    "$HYC" compile "$ckpt" -o "$art" --max-seq-len 1024 --max-seqs 4 \
      --max-batch-tokens 64 --target portable --quant bf16 >>"$WORK/$1.log" 2>&1 ||
      { cat "$WORK/$1.log"; exit 1; }
    rm -rf "$ckpt"
  fi
}
build qwen3 qwen3 151936
build deepseek deepseek_v3 129280

export NODE_PATH=$NPM_DIR/node_modules
exec node "$HERE/structured_e2e.mjs" "$HYC" "$WORK/qwen3.hyc" "$WORK/deepseek.hyc" \
  "$NPM_DIR/node_modules" "$HERE/templates"
