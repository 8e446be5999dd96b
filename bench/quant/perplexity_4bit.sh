#!/usr/bin/env bash
# Perplexity cost of 4-bit weights on the real models of ../shared/models:
# the first 200 TinyStories paragraphs (hyc perplexity) under f32, w8a8,
# w4a8 (int8 head by default), w4a8 with the attention projections kept at
# 8 bits (--keep-int8) and w4a8 with a bf16 head (--keep-bf16 lm_head).
# usage: bench/quant/perplexity_4bit.sh HYC SHARED_DIR [OUT_DIR]
set -euo pipefail
hyc=$1 shared=$2 out=${3:-$(mktemp -d)}
text=$shared/models/tinystories-valid-text/tinystories_val.txt
printf '| model | f32 | w8a8 | w4a8 | w4a8 --keep-int8 q,k,v,o | w4a8 --keep-bf16 lm_head |\n|---|---|---|---|---|---|\n'
for m in stories260K/stories260K.bin llama2xs-tinystories/model.bin \
         babyllama-tok105/model5000.bin aidreams260K/aidreams260K.bin; do
  len=256; [[ $m == aidreams* ]] && len=128
  row="| ${m%%/*} |"
  i=0
  for q in "--quant f32" "--quant w8a8" "--quant w4a8" \
           "--quant w4a8 --keep-int8 q_proj,k_proj,v_proj,o_proj" \
           "--quant w4a8 --keep-bf16 lm_head"; do
    art=$out/$(basename "$m" .bin)-$i.hyc; i=$((i + 1))
    # shellcheck disable=SC2086
    "$hyc" compile "$shared/models/$m" -o "$art" $q --max-seq-len $len \
      --max-batch-tokens 64 > /dev/null 2>&1
    nll=$("$hyc" perplexity "$art" --text "$text" --max-paragraphs 200 |
          sed -n 's/.*mean NLL: \([0-9.]*\).*/\1/p')
    row+=" $(python3 -c "import math; print('%.4f' % math.exp($nll))") |"
  done
  echo "$row"
done
