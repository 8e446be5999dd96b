#!/usr/bin/env bash
# The file readers' and the runtime's unit tests under ASan + UBSan (CMake
# preset `asan`: gcc, HYC_RUNTIME_ONLY, HYC_SANITIZE; any report fails).
# Kernel generator and driver tests (codegen/, runtime/cpu) are left out:
# they exercise JIT code the sanitizers do not see.
#
# Measured on the 2-core build machine while two other builds and a fuzzer
# ran (load average 6): build 54 min, tests 144 s; too long for CI, hence
# `make test-asan` rather than a step of `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${ASAN_BUILD:-build-asan}
TESTS=(
  test/unit/models/hyc_models_io_test
  test/unit/checkpoint/hyc_checkpoint_test
  test/unit/checkpoint/hyc_checkpoint_tokenizer_test
  test/unit/runtime/hyrt_runtime_test
  test/unit/runtime/hyrt_tokenizer_test
  test/unit/runtime/hyrt_tokenizer_hf_test
  test/unit/runtime/hyrt_engine_test
  test/unit/runtime/hyrt_serve_api_test
  test/unit/runtime/hyrt_reference_test
)
[ -f "$BUILD/build.ninja" ] || cmake --preset asan -B "$BUILD" >/dev/null
start=$(date +%s)
cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" --target "${TESTS[@]##*/}"
echo "test-asan: build $(( $(date +%s) - start )) s"
failed=()
for t in "${TESTS[@]}"; do
  s=$(date +%s)
  if (cd "$BUILD" && "./$t" >"${t##*/}.asan.log" 2>&1); then
    echo "test-asan: ${t##*/} passed ($(( $(date +%s) - s )) s)"
  else
    failed+=("${t##*/}")
    echo "test-asan: ${t##*/} FAILED, see $BUILD/${t##*/}.asan.log" >&2
  fi
done
echo "test-asan: $(( $(date +%s) - start )) s in all"
[ ${#failed[@]} -eq 0 ] || { echo "test-asan: failures in ${failed[*]}" >&2; exit 1; }
