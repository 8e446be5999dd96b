#!/usr/bin/env bash
# Perplexity cost of the int8 output head under --quant w8a8 (issue 31) on
# the real models of ../shared/models: the first 200 TinyStories paragraphs
# (hyc perplexity) with the head in bf16 (--keep-bf16 lm_head) and in int8
# (per-channel weights, per-token int8 activations: the w8a8 default), and
# the relative change. The bar: within 0.5%.
# usage: bench/quant/perplexity_head.sh HYC SHARED_DIR [OUT_DIR]
set -euo pipefail
hyc=$1 shared=$2 out=${3:-$(mktemp -d)}
mkdir -p "$out"
text=$shared/models/tinystories-valid-text/tinystories_val.txt
printf '| model | w8a8, bf16 head | w8a8, int8 head | change |\n|---|---|---|---|\n'
for m in stories260K/stories260K.bin llama2xs-tinystories/model.bin \
         babyllama-tok105/model5000.bin aidreams260K/aidreams260K.bin; do
  len=256; [[ $m == aidreams* ]] && len=128
  ppl=()
  for head in "--keep-bf16 lm_head" "--quant-lm-head int8"; do
    art=$out/$(basename "$m" .bin)-${#ppl[@]}.hyc
    # shellcheck disable=SC2086
    "$hyc" compile "$shared/models/$m" -o "$art" --quant w8a8 $head --max-seq-len $len \
      --max-batch-tokens 64 > /dev/null 2>&1
    nll=$("$hyc" perplexity "$art" --text "$text" --max-paragraphs 200 |
          sed -n 's/.*mean NLL: \([0-9.]*\).*/\1/p')
    ppl+=("$(python3 -c "import math; print('%.4f' % math.exp($nll))")")
  done
  change=$(python3 -c "print('%+.2f%%' % (100 * (${ppl[1]} / ${ppl[0]} - 1)))")
  echo "| ${m%%/*} | ${ppl[0]} | ${ppl[1]} | $change |"
done
