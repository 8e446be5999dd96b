#!/usr/bin/env bash
# The first thing to run on a machine with AMX (Sapphire / Emerald / Granite
# Rapids): do hyc's AMX kernels compute what the AVX-512 ones do, and what do
# they buy? One line per check:  PASS|FAIL|SKIP <check>: <detail>.
#
#   scripts/amx-host-check.sh [--dry-run] [--build DIR] [--work DIR]
#
# Checks (each needs the build: `cmake -S . -B build -G Ninja && ninja -C build`):
#   1. cpu         amx_tile / amx_bf16 / amx_int8 in /proc/cpuinfo
#   2. unit        the AMX kernels against the reference, executed natively
#                  (hyc_codegen_test BrgemmAmx.* and AmxEmulator.*; without
#                  AMX they run on the emulated tile machine)
#   3. variants    ctest IsaVariants|SelfTest: every variant the host runs,
#                  forced in turn, on golden models (amx included here)
#   4. stories     stories260K compiled --quant bf16 and --quant w8a8:
#                  HYC_ISA=amx vs HYC_ISA=avx512-bf16 (resp. avx512): same
#                  64 greedy tokens, perplexity within 0.5% (the variants
#                  differ only in fp32 summation order)
#   5. prefill     hyc bench prefill tok/s of the dense-1b and moe-small
#                  presets (--quant bf16), amx / avx512-bf16 ratio, and of
#                  dense-1b --quant w8a8, amx / avx512
# --dry-run prints whether AMX is present and the commands it would run.
# Exit: 0 every check passed, 1 one failed, 77 AMX is absent (not a dry run).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
WORK=${TMPDIR:-/tmp}/hyc-amx-check
DRY=0
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) DRY=1 ;;
    --build) BUILD=$2; shift ;;
    --work) WORK=$2; shift ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "amx-host-check: unknown argument '$1' (expected --dry-run, --build DIR, --work DIR)" >&2; exit 2 ;;
  esac
  shift
done
HYC=$BUILD/compiler/hyc
SHARED=$ROOT/../shared
STORIES=$SHARED/models/stories260K/stories260K.bin
TEXT=$SHARED/models/tinystories-valid-text/tinystories_val.txt
FAILED=0

line() { echo "$1 $2: $3"; [ "$1" = FAIL ] && FAILED=1; return 0; }
log() { [ $DRY = 1 ] && echo /dev/null || echo "$WORK/$1.log"; } # a dry run writes nothing
exec 3>&1 # the terminal, for dry-run lines from commands whose output is redirected
run() { # print the command under --dry-run, else run it
  if [ $DRY = 1 ]; then echo "  would run: $*" >&3; return 0; fi
  "$@"
}

# 1. cpu
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
have=()
for f in amx_tile amx_bf16 amx_int8; do
  grep -qw "$f" <<<"$flags" && have+=("$f")
done
model=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
if [ ${#have[@]} -eq 3 ]; then
  line PASS cpu "$model has amx_tile amx_bf16 amx_int8"
  AMX=1
else
  line SKIP cpu "AMX is absent on $model (found: ${have[*]:-none}); the checks below need it"
  AMX=0
fi
if [ $AMX = 0 ] && [ $DRY = 0 ]; then
  echo "amx-host-check: nothing to check without AMX (--dry-run lists the checks)"
  exit 77
fi
[ $DRY = 1 ] && echo "dry run: the checks an AMX host runs:" || mkdir -p "$WORK"

# 2. unit
if [ $DRY = 1 ] || [ -x "$BUILD/test/unit/codegen/hyc_codegen_test" ]; then
  if run "$BUILD/test/unit/codegen/hyc_codegen_test" --gtest_filter='BrgemmAmx.*:AmxEmulator.*' \
       >"$(log unit)" 2>&1; then
    [ $DRY = 1 ] && line SKIP unit "dry run" ||
      line PASS unit "$(grep -o 'PASSED  \] [0-9]* tests' "$(log unit)" | grep -o '[0-9]*') AMX kernel tests ($(grep -o 'runs natively[^"]*\|emulated[^"]*' "$(log unit)" | head -1))"
  else
    line FAIL unit "see $WORK/unit.log"
  fi
else
  line FAIL unit "no $BUILD/test/unit/codegen/hyc_codegen_test: build first"
fi

# 3. variants
if run ctest --test-dir "$BUILD" -R 'IsaVariants|SelfTest' --output-on-failure >"$(log variants)" 2>&1; then
  [ $DRY = 1 ] && line SKIP variants "dry run" ||
    line PASS variants "$(grep -o '[0-9]*% tests passed.*' "$(log variants)" | tail -1)"
else
  line FAIL variants "see $WORK/variants.log"
fi

# 4. stories: amx against the AVX-512 variant of the same artifact
stories_pair() { # QUANT AVX512_VARIANT
  local art=$WORK/stories-$1.hyc
  run "$HYC" compile "$STORIES" -o "$art" --quant "$1" --max-seq-len 256 >/dev/null 2>&1 ||
    { line FAIL "stories-$1" "hyc compile failed"; return; }
  if [ $DRY = 1 ]; then
    echo "  would run: HYC_ISA=amx and HYC_ISA=$2: $HYC run $art --prompt-ids 1 -n 64 --print-ids; hyc perplexity $art --text $TEXT --max-paragraphs 50"
    line SKIP "stories-$1" "dry run"
    return
  fi
  local ids_amx ids_ref ppl_amx ppl_ref
  ids_amx=$(HYC_ISA=amx "$HYC" run "$art" --prompt-ids 1 -n 64 --print-ids 2>/dev/null | head -1)
  ids_ref=$(HYC_ISA=$2 "$HYC" run "$art" --prompt-ids 1 -n 64 --print-ids 2>/dev/null | head -1)
  ppl_amx=$(HYC_ISA=amx "$HYC" perplexity "$art" --text "$TEXT" --max-paragraphs 50 2>/dev/null | awk '/^perplexity/ {print $2}')
  ppl_ref=$(HYC_ISA=$2 "$HYC" perplexity "$art" --text "$TEXT" --max-paragraphs 50 2>/dev/null | awk '/^perplexity/ {print $2}')
  if [ -z "$ids_amx" ] || [ -z "$ppl_amx" ] || [ -z "$ppl_ref" ]; then
    line FAIL "stories-$1" "amx or $2 did not run (HYC_ISA=amx hyc run $art)"
  elif [ "$ids_amx" != "$ids_ref" ]; then
    line FAIL "stories-$1" "greedy tokens differ: amx '$ids_amx' vs $2 '$ids_ref'"
  elif python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 0.005*b else 1)" "$ppl_amx" "$ppl_ref"; then
    line PASS "stories-$1" "64 greedy tokens equal; perplexity amx $ppl_amx vs $2 $ppl_ref"
  else
    line FAIL "stories-$1" "perplexity amx $ppl_amx vs $2 $ppl_ref (more than 0.5% apart)"
  fi
}
stories_pair bf16 avx512-bf16
stories_pair w8a8 avx512

# 5. prefill: the presets, amx against AVX-512 in the same minute
prefill_ratio() { # PRESET QUANT AVX512_VARIANT
  local ckpt=$WORK/$1 art=$WORK/$1-$2.hyc
  if [ ! -d "$ckpt" ]; then
    run "$HYC" synth --preset "$1" --seed 1 -o "$ckpt" >/dev/null 2>&1 ||
      { line FAIL "prefill-$1-$2" "hyc synth --preset $1 failed"; return; }
  fi
  run "$HYC" compile "$ckpt" -o "$art" --quant "$2" --max-batch-tokens 512 >/dev/null 2>&1 ||
    { line FAIL "prefill-$1-$2" "hyc compile failed"; return; }
  if [ $DRY = 1 ]; then
    echo "  would run: HYC_ISA=amx and HYC_ISA=$3: $HYC bench $art --input 512 --output 1 --rounds 3 --json"
    line SKIP "prefill-$1-$2" "dry run"
    return
  fi
  local amx ref
  amx=$(HYC_ISA=amx "$HYC" bench "$art" --input 512 --output 1 --rounds 3 --json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["prefill_tok_s"])')
  ref=$(HYC_ISA=$3 "$HYC" bench "$art" --input 512 --output 1 --rounds 3 --json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["prefill_tok_s"])')
  if [ -z "$amx" ] || [ -z "$ref" ]; then
    line FAIL "prefill-$1-$2" "hyc bench did not run under amx or $3"
  else
    line PASS "prefill-$1-$2" "$(python3 -c "import sys; a,b=map(float,sys.argv[1:]); print(f'amx {a:.0f} tok/s, {sys.argv[3]} {b:.0f} tok/s: amx/{sys.argv[3]} = {a/b:.2f}x')" "$amx" "$ref" "$3")"
  fi
}
prefill_ratio dense-1b bf16 avx512-bf16
prefill_ratio moe-small bf16 avx512-bf16
prefill_ratio dense-1b w8a8 avx512

exit $FAILED
