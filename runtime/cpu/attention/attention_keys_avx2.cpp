// The key pass of the portable GQA-group attention body (attention.cpp) on
// AVX2 + FMA, for hosts without AVX-512 (and the avx2 variant): scores of
// one token's G query heads against every cached row it sees.
//
// Why: the portable body computes one dot product per (row, head) and GCC
// reduces each one's eight lanes one add after another from the stack; on
// the avx2 variant's 2000-token prompt (dense-1b heads) that key pass made
// attention 31% of the prefill at ~30 GFLOP/s (bench/README.md "The avx2
// variant"). Here 8 / G rows x G heads are eight independent accumulators
// over the head dim, and one hadd tree turns the eight into one vector of
// eight scores.
//
// Numerics: fp32 products of the query with the cache's values (bf16 and
// int8 widened exactly, an int8 row's scale applied to its score as the
// portable body does), summed in another order than the portable body's:
// the attention tests' fp32-accumulation tolerance covers both.
#include "attention_group.h"

#include <cstdint>
#include <immintrin.h>
#include <type_traits>

#pragma GCC push_options
#pragma GCC target("avx2,fma")

#include "../vec_avx2.h"

namespace hyrt::cpu {

namespace {

/// Rows [0, n) of token t: R = 8 / G rows x G heads per step into eight
/// accumulators; a tail of fewer than R rows repeats its last row in the
/// unused slots and stores only its own.
template <typename T, int G>
void keyScores(const hyrt_step_v0 *step, const LayerView &l, const float *qg, float scale,
               int64_t t, int64_t kvh, int64_t n, float *scores, int64_t ns) {
  constexpr int R = 8 / G;
  const int64_t dk = l.dk;
  const T *rows[R];
  int64_t rowIds[R], pos[R];
  int filled = 0;
  auto flush = [&] {
    const int valid = filled;
    for (int r = filled; r < R; ++r) // tail: repeat the last row
      rows[r] = rows[filled - 1];
    __m256 acc[8];
    for (int i = 0; i < 8; ++i)
      acc[i] = _mm256_setzero_ps();
    for (int64_t d = 0; d < dk; d += 8)
      for (int r = 0; r < R; ++r) {
        const __m256 k = load8(rows[r] + d);
        for (int g = 0; g < G; ++g)
          acc[r * G + g] = _mm256_fmadd_ps(k, _mm256_loadu_ps(qg + g * dk + d), acc[r * G + g]);
      }
    alignas(32) float s[8];
    _mm256_store_ps(s, sum8(acc));
    for (int r = 0; r < valid; ++r) {
      const float rowScale = l.kScaleOf<T>(rowIds[r], kvh) * scale;
      for (int g = 0; g < G; ++g)
        scores[g * ns + pos[r]] = s[r * G + g] * rowScale;
    }
    filled = 0;
  };
  forEachRow(step, l, t, n, [&](int64_t j, int64_t row) {
    rows[filled] = l.kRow<T>(row, kvh);
    rowIds[filled] = row;
    pos[filled] = j;
    if (++filled == R)
      flush();
  });
  if (filled > 0)
    flush();
}

using KeyScoresFn = void (*)(const hyrt_step_v0 *, const LayerView &, const float *, float,
                            int64_t, int64_t, int64_t, float *, int64_t);

/// keyScores for each group this pass takes, indexed by the group (null:
/// not taken).
template <typename T>
constexpr KeyScoresFn kByGroup[9] = {
    nullptr, keyScores<T, 1>, keyScores<T, 2>, nullptr,        keyScores<T, 4>,
    nullptr, nullptr,         nullptr,         keyScores<T, 8>};

} // namespace

bool keyScoresAvx2(const hyrt_step_v0 *step, const LayerView &l, const float *qg, float scale,
                   int64_t t, int64_t kvh, int64_t n, float *scores, int64_t ns) {
  if (l.dk % 8 != 0 || l.group < 1 || l.group > 8)
    return false;
  const KeyScoresFn fn = withRowType(l, [&](auto *type) {
    return kByGroup<std::remove_pointer_t<decltype(type)>>[l.group];
  });
  if (!fn)
    return false;
  fn(step, l, qg, scale, t, kvh, n, scores, ns);
  return true;
}

} // namespace hyrt::cpu

#pragma GCC pop_options
