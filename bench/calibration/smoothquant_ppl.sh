#!/usr/bin/env bash
# SmoothQuant on the real models: perplexity of the first 200 TinyStories
# validation paragraphs (what test/e2e meanNll scores) for fp32, w8a8 and
# w8a8-g128, each without and with --calibration at several alphas. The
# calibration runs 128 paragraphs after those 200 (--skip 200), so the text
# it saw is not the text scored. Default target (the host's best variant).
# Usage: bench/calibration/smoothquant_ppl.sh [BUILD] [OUT]
set -euo pipefail
BUILD=${1:-build}
OUT=${2:-$BUILD/bench/calibration}
HYC="$BUILD/compiler/hyc"
MODELS=$(cd "$(dirname "$0")/../../../shared/models" && pwd)
TEXT="$MODELS/tinystories-valid-text/tinystories_val.txt"
ALPHAS=${ALPHAS:-"0.25 0.5 0.75"}
mkdir -p "$OUT"

ppl() { "$HYC" perplexity "$1" --text "$TEXT" --max-paragraphs 200 | sed -n 's/^perplexity: //p'; }

for model in stories260K/stories260K.bin llama2xs-tinystories/model.bin \
             babyllama-tok105/model5000.bin aidreams260K/aidreams260K.bin; do
  name=$(basename "$(dirname "$model")")
  ckpt="$MODELS/$model"
  "$HYC" compile "$ckpt" --calibration-build -o "$OUT/$name-cal.hyc" 2>/dev/null
  "$HYC" calibrate "$OUT/$name-cal.hyc" --text "$TEXT" --skip 200 --samples 128 \
    -o "$OUT/$name.calibration.json" >/dev/null
  "$HYC" compile "$ckpt" -o "$OUT/$name-f32.hyc" 2>/dev/null
  line="$name fp32 $(ppl "$OUT/$name-f32.hyc")"
  for q in w8a8 w8a8-g128; do
    "$HYC" compile "$ckpt" --quant $q -o "$OUT/$name-$q.hyc" 2>/dev/null
    line+=" | $q $(ppl "$OUT/$name-$q.hyc")"
    for a in $ALPHAS; do
      "$HYC" compile "$ckpt" --quant $q --calibration "$OUT/$name.calibration.json" \
        --smooth-alpha "$a" -o "$OUT/$name-$q-sq$a.hyc" 2>/dev/null
      line+=" $q+sq$a $(ppl "$OUT/$name-$q-sq$a.hyc")"
    done
  done
  echo "$line"
done
