# Sourced by the serving tests: compiles stories260K for `hyc serve` once
# into the build tree (again when the model or hyc is newer). The tests that
# share an artifact hold CTest's RESOURCE_LOCK hyc_serve_artifact.
# Usage: stories_artifact HYC MODEL ART LOG [extra hyc compile flags...]
#
# max_seqs 4 and 32-token prefill chunks: 16 concurrent requests must
# queue and share steps; a 512-position context (the model's) leaves room
# for a stream long enough to be cut off by its client. The host's own
# kernels (portable target, bf16 weights): a row's logits do not depend on
# the batch it lands in, so a greedy answer batched with others must equal
# `hyc run` alone bit for bit. The amx variant is the exception
# (docs/architecture.md), so an AMX host runs avx512-bf16.
stories_artifact() {
  local hyc=$1 model=$2 art=$3 log=$4
  shift 4
  if [ ! -f "$art/manifest.json" ] || [ "$model" -nt "$art/manifest.json" ] ||
     [ "$hyc" -nt "$art/manifest.json" ]; then
    rm -rf "$art"
    "$hyc" compile "$model" -o "$art" --max-seq-len 512 --max-seqs 4 \
      --max-batch-tokens 32 --target portable --quant bf16 "$@" \
      >"$log" 2>&1 || { cat "$log"; return 1; }
  fi
  if grep -q -w amx_tile /proc/cpuinfo; then
    export HYC_ISA=avx512-bf16
  fi
}
