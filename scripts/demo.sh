#!/usr/bin/env bash
# The README's main job: compile the embedded default model with hyc and run
# it. stories260K (a real trained model) when ../shared/models exists,
# otherwise a seeded synthetic Llama written by `hyc synth`.
set -euo pipefail
BUILD=${1:-build}
SHARED=${2:-../shared}
HYC="$BUILD/compiler/hyc"
OUT="$BUILD/demo"
mkdir -p "$OUT"

STORIES="$SHARED/models/stories260K/stories260K.bin"
if [ -f "$STORIES" ]; then
  echo "== hyc compile $STORIES (stories260K, llama2.c format; --target portable: one library per ISA variant)"
  "$HYC" compile "$STORIES" -o "$OUT/stories260K.hyc" --max-seq-len 256
  echo "== hyc run: greedy, 200 tokens from 'Once upon a time' (on the best variant this CPU runs)"
  "$HYC" run "$OUT/stories260K.hyc" --prompt "Once upon a time" -n 200 --temperature 0 --verbose
  echo "== the same model, --quant w8a8 (int8 weights and activations: VNNI, AMX or AVX2 kernels)"
  "$HYC" compile "$STORIES" -o "$OUT/stories260K-w8a8.hyc" --max-seq-len 256 --quant w8a8
  "$HYC" run "$OUT/stories260K-w8a8.hyc" --prompt "Once upon a time" -n 200 --temperature 0
  echo "== hyc bench (efficiencies against this host's measured limits)"
  "$HYC" bench "$OUT/stories260K-w8a8.hyc" --input 128 --output 64 --rounds 1 --profile 2>/dev/null
else
  echo "== $STORIES not found: using a synthetic model"
  "$HYC" synth --arch llama --preset tiny --seed 1 -o "$OUT/synth-llama"
  "$HYC" compile "$OUT/synth-llama" -o "$OUT/synth-llama.hyc" --max-seq-len 256
  echo "== hyc run: 64 sampled tokens (random weights: the text is noise)"
  "$HYC" run "$OUT/synth-llama.hyc" --prompt "Hello" -n 64 --temperature 0.8 --seed 7
  echo "== hyc bench"
  "$HYC" bench "$OUT/synth-llama.hyc" --input 64 --output 32 --rounds 1 2>/dev/null
fi
