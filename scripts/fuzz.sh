#!/usr/bin/env bash
# Builds the libFuzzer targets (CMake preset `fuzz`: clang-22, ASan + UBSan,
# file readers only) and runs each one, single process, for SECONDS on its
# seeds (written by test/fuzz/make_corpus.py into BUILD/seeds, among them the
# regress-* inputs that once crashed a reader) and the corpus it grew
# before (BUILD/corpus/<target>). A crash, leak, UB report, timeout or
# out-of-memory fails the run; the input that did it is kept as
# BUILD/artifacts/<target>-crash-<sha1> and named in the message.
#
#   scripts/fuzz.sh SECONDS [TARGET...]    (default: every target)
#
# Prints one line per target: seconds, executions, corpus size; the same
# lines are appended to BUILD/fuzz-log.tsv. FUZZ_SEED fixes libFuzzer's
# random seed (make fuzz-smoke, i.e. CI, uses 1: the same mutations in every
# run, so CI fails on a regression, not on a new find that a long `make fuzz`
# campaign is for).
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET=${1:?usage: scripts/fuzz.sh SECONDS [TARGET...]}
shift
BUILD=${FUZZ_BUILD:-build-fuzz}
ALL=(fuzz_gguf fuzz_safetensors fuzz_hf_config fuzz_llama2c
     fuzz_tokenizer_bin fuzz_tokenizer_json fuzz_tokenizer_artifact fuzz_manifest
     fuzz_chat_template fuzz_http_request)
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=("${ALL[@]}")

if ! command -v clang++-22 >/dev/null 2>&1; then
  echo "fuzz: clang++-22 not found (Debian clang-22 + libclang-rt-22-dev): not run" >&2
  exit 2
fi
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake --preset fuzz -B "$BUILD" >/dev/null
fi
cmake --build "$BUILD" --target fuzzers -j "${JOBS:-$(nproc)}"

mkdir -p "$BUILD/corpus" "$BUILD/artifacts"
# Seeds: small valid files written from the formats themselves by
# make_corpus.py into the build tree, and the regress-* inputs that earlier
# runs crashed on, rebuilt there from those seeds (nothing is checked in).
python3 test/fuzz/make_corpus.py "$BUILD/seeds"
failed=()
for t in "${TARGETS[@]}"; do
  seeds=$BUILD/seeds/$t
  grown=$BUILD/corpus/$t
  mkdir -p "$grown"
  log=$BUILD/artifacts/$t.$$.log # per run: two runs of one target at once must not share it
  start=$(date +%s)
  # -rss_limit_mb: readers must refuse absurd sizes before allocating, so
  # an input that makes one allocate gigabytes is a finding (-malloc_limit_mb
  # follows it). -timeout: one input taking 30 s is a hang (the readers take
  # milliseconds; 10 s gave false alarms on a loaded 2-core machine, where
  # an ASan build's exception unwinding alone once took 13 s).
  set +e
  "$BUILD/test/fuzz/$t" "$grown" "$seeds" -max_total_time="$SECONDS_PER_TARGET" \
    -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 ${FUZZ_SEED:+-seed=$FUZZ_SEED} \
    -artifact_prefix="$BUILD/artifacts/$t-" >"$log" 2>&1 &
  pid=$!
  wait $pid
  rc=$?
  # The target's scratch files (test/fuzz/fuzz_files.h), named by its pid.
  rm -rf "/dev/shm/hyc-fuzz-$pid" "/tmp/hyc-fuzz-$pid"
  set -e
  end=$(date +%s)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(find "$grown" -type f | wc -l)
  printf '%s\t%s s\t%s execs\t%s corpus\trc %s\n' "$t" "$((end - start))" \
    "${execs:-?}" "$corpus" "$rc" | tee -a "$BUILD/fuzz-log.tsv"
  if [ $rc -ne 0 ]; then
    failed+=("$t")
    echo "fuzz: $t FAILED (log $log):" >&2
    grep -E 'ERROR:|runtime error|Test unit written|SUMMARY' "$log" | head -20 >&2 || true
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: failures in ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#TARGETS[@]} targets, ${SECONDS_PER_TARGET} s each, no crash"
