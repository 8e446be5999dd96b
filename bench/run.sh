#!/usr/bin/env bash
# End-to-end benchmark entry point (`make bench`). For now: the reference
# target on stories260K, decode and prefill tokens/s as printed by `hyc run`.
# Kernel benchmarks against oneDNN arrive with the optimized targets.
set -euo pipefail
BUILD=${1:-build}
SHARED=${SHARED:-../shared}
HYC="$BUILD/compiler/hyc"
OUT="$BUILD/bench"
mkdir -p "$OUT"
MODEL="$SHARED/models/stories260K/stories260K.bin"
if [ ! -f "$MODEL" ]; then
  "$HYC" synth --arch llama --preset small --seed 1 -o "$OUT/synth-small"
  MODEL="$OUT/synth-small"
fi
"$HYC" compile "$MODEL" -o "$OUT/model.hyc" --max-seq-len 512 --max-batch-tokens 256
for i in 1 2 3; do
  "$HYC" run "$OUT/model.hyc" --prompt-ids 1 -n 400 --temperature 0 >/dev/null
done
