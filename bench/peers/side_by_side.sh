#!/usr/bin/env bash
# hyc and llama.cpp on the same weights, interleaved (bench/README.md, "hyc
# and llama.cpp on the same weights"). For each preset: a seeded synthetic
# checkpoint, its GGUF files (hyc convert-gguf), hyc artifacts from the same
# directory, then per pass `hyc bench` and llama_cpp_bench.mjs alternately.
#
# Usage: bench/peers/side_by_side.sh WORK_DIR PEERS_DIR [PASSES] [PRESETS...]
#   WORK_DIR   scratch for checkpoints, GGUF files and artifacts (~20 GB for
#              the three presets)
#   PEERS_DIR  a folder where `npm i -E node-llama-cpp@3.21.1` ran
#   PASSES     default 2; PRESETS default dense-1b moe-small mla-small
# Pairs: hyc --quant w8a8 / Q8_0, hyc --quant bf16 / BF16, and one Q4_0 file
# that both engines read (hyc compiles it with no flags).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
HYC=${HYC:-$HERE/../../build/compiler/hyc}
WORK=${1:?WORK_DIR}
PEERS=${2:?PEERS_DIR}
PASSES=${3:-2}
PRESETS=("${@:4}")
[ ${#PRESETS[@]} -gt 0 ] || PRESETS=(dense-1b moe-small mla-small)
[ -x "$HYC" ] || { echo "no hyc at $HYC (set HYC)" >&2; exit 2; }
[ -d "$PEERS/node_modules/node-llama-cpp" ] ||
  { echo "$PEERS has no node-llama-cpp: npm i -E node-llama-cpp@3.21.1 there" >&2; exit 2; }
cp "$HERE/llama_cpp_bench.mjs" "$PEERS/"
mkdir -p "$WORK"
for p in "${PRESETS[@]}"; do
  [ -f "$WORK/$p/config.json" ] || "$HYC" synth --preset "$p" -o "$WORK/$p"
  for t in q8_0 bf16 q4_0; do
    [ -f "$WORK/$p-$t.gguf" ] || "$HYC" convert-gguf "$WORK/$p" "$WORK/$p-$t.gguf" --outtype "$t"
  done
  [ -d "$WORK/$p-w8a8.hyc" ] || "$HYC" compile "$WORK/$p" -o "$WORK/$p-w8a8.hyc" --quant w8a8
  [ -d "$WORK/$p-bf16.hyc" ] || "$HYC" compile "$WORK/$p" -o "$WORK/$p-bf16.hyc" --quant bf16
  [ -d "$WORK/$p-q4_0.hyc" ] || "$HYC" compile "$WORK/$p-q4_0.gguf" -o "$WORK/$p-q4_0.hyc"
done
for pass in $(seq 1 "$PASSES"); do
  for p in "${PRESETS[@]}"; do
    for pair in "w8a8 q8_0" "bf16 bf16" "q4_0 q4_0"; do
      read -r ours theirs <<<"$pair"
      echo "== pass $pass $p hyc $ours"
      "$HYC" bench "$WORK/$p-$ours.hyc" --input 512 --output 64 --rounds 2 --no-verify 2>&1 |
        grep -E '^  (prefill|decode)'
      echo "== pass $pass $p llama.cpp $theirs"
      (cd "$PEERS" && node llama_cpp_bench.mjs "$WORK/$p-$theirs.gguf" 512 64 3)
    done
  done
done
