// Flash attention over bf16 dot products (AVX-512 BF16, `vdpbf16ps`) for
// the extend blocks of a bf16 KV cache: the tokens of a block (consecutive
// positions of one sequence) times the query heads of one KV head are the
// rows; the cached positions stream through in blocks of 64 with an online
// softmax, so no score row of the whole context is ever stored.
//
// Why: the fp32 row-blocked kernel (attention_rows_avx512.cpp) tops out
// near the FMA peak's third on prefill, and a 4096-token prompt's attention
// needs more than the whole fp32 FMA peak of a 2-core host to stay within
// 80% of a short prompt's tokens/s (bench/README.md "Long prompts").
// `vdpbf16ps` does twice the multiply-adds of an fp32 FMA per instruction.
//
// Per block of 64 positions:
// - K is packed once for every row: a transpose of its 64 rows into dk/2
//   vectors of (k[2i], k[2i+1]) pairs by position, so one `vdpbf16ps` with
//   a query pair broadcast adds a pair of dims to 16 positions' scores (no
//   horizontal sums). Queries are scaled and rounded to bf16 once.
// - The online softmax keeps each row's running maximum (in base 2) and
//   sum; the block's probabilities are rounded to bf16 in position pairs.
// - V is packed as position pairs interleaved per dim (`vpunpck[lh]wd`),
//   so one `vdpbf16ps` with a probability pair broadcast adds two
//   positions to 16 dims of the row's output. The interleave permutes the
//   dims within each 32 (lanes 0-3 of the low half are dims 0-3, of the
//   high half dims 4-7, ...); the output is un-permuted once at the end.
// Numerics: products of bf16-rounded queries and probabilities with the
// cache's bf16 values, accumulated in fp32: the error bound is derived in
// test/unit/cpu/attention_bf16_test.cpp.
#include "attention_group.h"
#include "../tls_pointer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <immintrin.h>
#include <vector>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")

#include "../vec_avx512.h"
#include "int8_rows_bf16.h"
#include "transpose16_avx512.h"

namespace hyrt::cpu {

namespace {

// Positions per block: 64 halves the per-block costs (the online softmax's
// maximum and rescale, each P x V call's accumulator loads and stores)
// against 32 (hyc_extend_attention_bench: bench/README.md "Extend attention
// in blocks of 64").
constexpr int64_t kBlock = 64;
constexpr int kQuarters = int(kBlock / 16); // 16-position vectors per block
// Rows per score / P x V call (4 x 4 accumulators; 6 x 4 was no faster) and
// per block of the loop. The calls' small loops are unrolled by pragma: left
// as loops, GCC kept the accumulator arrays in memory as well as in
// registers, zeroing and copying them through the stack on every call (2.26
// -> 2.45x the fp32 kernel, bench/README.md "The seventh session").
constexpr int kGroup = 4;
constexpr int kRows = 2 * kGroup;

/// Rows of one block: r = u * G + h for token u and query head h.
struct Rows {
  int64_t count;
  std::vector<uint32_t> q;  // [count][dk / 2] scaled query pairs, bf16
  std::vector<float> o;     // [count][dv] output accumulators (dims permuted)
  std::vector<float> m;     // running maximum
  std::vector<float> l;     // [count][16] partial sums of exponentials
};

/// Four rows' outputs, N accumulators of 16 dims from chunk c on: scaled
/// by the rows' factors, plus their probability pairs times the packed V
/// pairs. Rows from `real` on are tail copies: computed, not stored.
/// Not inlined: inside attendBf16Dots GCC kept the caller's vector values
/// live across this loop and spilled two of the four V vectors to the stack
/// on every iteration; on its own the loop's 4 N + N + 1 registers fit.
template <int N>
__attribute__((noinline)) void accumulatePv(float *o, const int64_t *rr,
                                            const uint32_t (*pr)[kBlock / 2], const float *corr,
                                            const uint32_t *vPack, int64_t pairs, int64_t dv,
                                            int64_t c, int64_t real) {
  __m512 acc[kGroup][N];
#pragma GCC unroll 8
  for (int x = 0; x < kGroup; ++x)
#pragma GCC unroll 8
    for (int y = 0; y < N; ++y)
      acc[x][y] = _mm512_mul_ps(_mm512_loadu_ps(&o[size_t(rr[x] * dv + (c + y) * 16)]),
                                _mm512_set1_ps(corr[x]));
  for (int64_t a = 0; a < pairs; ++a) {
    __m512bh v[N];
#pragma GCC unroll 8
    for (int y = 0; y < N; ++y)
      v[y] = (__m512bh)_mm512_load_si512(&vPack[a * dv + (c + y) * 16]);
#pragma GCC unroll 8
    for (int x = 0; x < kGroup; ++x) {
      const __m512bh pb = (__m512bh)_mm512_set1_epi32(int(pr[x][a]));
#pragma GCC unroll 8
      for (int y = 0; y < N; ++y)
        acc[x][y] = _mm512_dpbf16_ps(acc[x][y], pb, v[y]);
    }
  }
  // Constant bounds and a test inside: an array indexed by a run-time row
  // would be kept in memory.
#pragma GCC unroll 8
  for (int x = 0; x < kGroup; ++x)
    if (x < real)
#pragma GCC unroll 8
      for (int y = 0; y < N; ++y)
        _mm512_storeu_ps(&o[size_t(rr[x] * dv + (c + y) * 16)], acc[x][y]);
}

/// Scores of four rows (query pairs at q + rr[x] * kp) against a packed K
/// block, into s[x][position]: 4 x kQuarters accumulators, each packed K
/// vector loaded once for the four rows and each query pair broadcast once
/// for the block's kQuarters vectors. Not inlined, for the same reason as
/// accumulatePv.
__attribute__((noinline)) void scoreRows(const uint32_t *q, const int64_t *rr, int64_t kp,
                                         const uint32_t *kPack, float (*s)[kBlock]) {
  __m512 sc[kGroup][kQuarters];
#pragma GCC unroll 8
  for (int x = 0; x < kGroup; ++x)
#pragma GCC unroll 8
    for (int y = 0; y < kQuarters; ++y)
      sc[x][y] = _mm512_setzero_ps();
  const uint32_t *qr[kGroup];
#pragma GCC unroll 8
  for (int x = 0; x < kGroup; ++x)
    qr[x] = q + rr[x] * kp;
  for (int64_t i = 0; i < kp; ++i) {
    __m512bh k[kQuarters];
#pragma GCC unroll 8
    for (int y = 0; y < kQuarters; ++y)
      k[y] = (__m512bh)_mm512_load_si512(&kPack[i * kBlock + 16 * y]);
#pragma GCC unroll 8
    for (int x = 0; x < kGroup; ++x) {
      const __m512bh qb = (__m512bh)_mm512_set1_epi32(int(qr[x][i]));
#pragma GCC unroll 8
      for (int y = 0; y < kQuarters; ++y)
        sc[x][y] = _mm512_dpbf16_ps(sc[x][y], qb, k[y]);
    }
  }
#pragma GCC unroll 8
  for (int x = 0; x < kGroup; ++x)
#pragma GCC unroll 8
    for (int y = 0; y < kQuarters; ++y)
      _mm512_store_ps(&s[x][16 * y], sc[x][y]);
}

} // namespace

void attendBf16Dots(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                    int64_t numHeads, float scale, int64_t t0, int64_t tq, int64_t kvh,
                    float *out) {
  const int64_t dk = l.dk, dv = l.dv, G = l.group;
  const int64_t p0 = step->positions[t0], nMax = p0 + tq, kp = dk / 2, vChunks = dv / 16;
  // Row r is token r / G: the last position it sees.
  auto lastOf = [&](int64_t r) { return p0 + r / G; };

  // The thread's buffers through pinned pointers from here on (tls_pointer.h).
  thread_local std::vector<int64_t> rowsBuf;
  rowsBuf.resize(size_t(nMax));
  int64_t *const rows = pinned(rowsBuf.data());
  forEachRow(step, l, t0, nMax, [&](int64_t j, int64_t row) { rows[j] = row; });

  thread_local Rows tRows;
  Rows &R = tRows;
  R.count = tq * G;
  R.q.resize(size_t(R.count * kp));
  R.o.assign(size_t(R.count * dv), 0.0f);
  R.m.assign(size_t(R.count), -INFINITY);
  R.l.assign(size_t(R.count * 16), 0.0f);
  const int64_t count = R.count;
  uint32_t *const Rq = pinned(R.q.data());
  float *const Ro = pinned(R.o.data()), *const Rm = pinned(R.m.data()),
              *const Rl = pinned(R.l.data());
  const __m512 vscale = _mm512_set1_ps(scale);
  for (int64_t u = 0; u < tq; ++u)
    for (int64_t h = 0; h < G; ++h) {
      const int64_t r = u * G + h;
      const float *src = q + ((t0 + u) * numHeads + kvh * G + h) * dk;
      for (int64_t d = 0; d < dk; d += 32) {
        const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_mul_ps(_mm512_loadu_ps(src + d + 16), vscale),
                                               _mm512_mul_ps(_mm512_loadu_ps(src + d), vscale));
        _mm512_storeu_si512(&Rq[size_t(r * kp + d / 2)], (__m512i)b);
      }
    }

  // Packed blocks: K as [kp][64] pairs by position, V as [32 pairs][dv]
  // dwords (per 32 dims: 16 low-interleaved, then 16 high-interleaved).
  alignas(64) thread_local uint32_t tKPack[128 * kBlock];
  alignas(64) thread_local uint32_t tVPack[kBlock / 2 * 256];
  uint32_t *const kPack = pinned(tKPack), *const vPack = pinned(tVPack);
  // An int8 cache's block rows widened to bf16 codes, and their scales
  // (int8_rows_bf16.h): keys' scales multiply the scores, values' scales
  // the probabilities.
  const bool int8 = l.int8;
  alignas(64) thread_local uint16_t tKWide[kBlock * 256], tVWide[kBlock * 256];
  uint16_t *const kWide = pinned(tKWide), *const vWide = pinned(tVWide);
  alignas(64) float kScales[kBlock], vScales[kBlock];
  const uint16_t *kRowOf[kBlock], *vRowOf[kBlock];

  for (int64_t jb = 0; jb < nMax; jb += kBlock) {
    const int64_t valid = std::min(kBlock, nMax - jb);
    for (int64_t i = 0; i < kBlock; ++i) {
      const int64_t row = rows[std::min(jb + i, nMax - 1)]; // the padding repeats the last row
      if (int8) {
        int8RowToBf16(l.kRow<int8_t>(row, kvh), kWide + i * dk, dk);
        int8RowToBf16(l.vRow<int8_t>(row, kvh), vWide + i * dv, dv);
        kScales[i] = l.kScaleOf<int8_t>(row, kvh);
        vScales[i] = l.vScaleOf<int8_t>(row, kvh);
        kRowOf[i] = kWide + i * dk, vRowOf[i] = vWide + i * dv;
      } else {
        kRowOf[i] = l.kRow<uint16_t>(row, kvh), vRowOf[i] = l.vRow<uint16_t>(row, kvh);
      }
    }
    // Pack K: kQuarters runs of 16 positions, each dk / 32 transposes.
    for (int quarter = 0; quarter < kQuarters; ++quarter) {
      const uint32_t *kr[16];
      for (int i = 0; i < 16; ++i)
        kr[i] = reinterpret_cast<const uint32_t *>(kRowOf[quarter * 16 + i]);
      for (int64_t c = 0; c < kp; c += 16) {
        __m512i m[16];
        for (int i = 0; i < 16; ++i)
          m[i] = _mm512_loadu_si512(kr[i] + c);
        transpose16(m);
        for (int i = 0; i < 16; ++i)
          _mm512_store_si512(&kPack[(c + i) * kBlock + quarter * 16], m[i]);
      }
    }
    // Pack V: position pairs (2a, 2a + 1), interleaved per dim.
    for (int64_t a = 0; a < kBlock / 2; ++a) {
      const uint16_t *v0 = vRowOf[2 * a], *v1 = vRowOf[2 * a + 1];
      for (int64_t c = 0; c < dv; c += 32) {
        const __m512i x = _mm512_loadu_si512(v0 + c), y = _mm512_loadu_si512(v1 + c);
        _mm512_store_si512(&vPack[a * dv + c], _mm512_unpacklo_epi16(x, y));
        _mm512_store_si512(&vPack[a * dv + c + 16], _mm512_unpackhi_epi16(x, y));
      }
    }
    // Rows kRows at a time, as two groups of four for the scores (4 x
    // kQuarters independent dot-product chains, enough to cover
    // vdpbf16ps' latency at two per cycle) and for P x V, each packed K and
    // V vector loaded once for a group (a tail group repeats its last row
    // and keeps nothing of the copies).
    for (int64_t r0 = 0; r0 < count; r0 += kRows) {
      if (jb > lastOf(std::min(r0 + kRows - 1, count - 1)))
        continue; // last positions grow with r: every row of the group is past this block
      int64_t rr[kRows];
      for (int x = 0; x < kRows; ++x)
        rr[x] = std::min(r0 + x, count - 1);
      alignas(64) float sc[kRows][kBlock];
      for (int x0 = 0; x0 < kRows; x0 += kGroup)
        scoreRows(Rq, rr + x0, kp, kPack, sc + x0);
      // Online softmax per row, in base 2: a row's maximum is kept times
      // log2(e), so each probability is 2^(s log2(e) - m), one fmsub and
      // exp2ForBf16, whose lanes outside the row's visible positions (the
      // causal triangle, the block's padding) give 0. A row past this block
      // (or a tail copy) adds nothing: probabilities 0, its output kept
      // (factor 1). The rows' maxima first, then one exp for all their
      // rescaling factors (0 at a row's first block: its old maximum is
      // -inf; exactly 1 where the maximum stays).
      alignas(64) uint32_t pr[kRows][kBlock / 2];
      alignas(64) float mOld[16], mNew[16], corr[16];
      bool live[kRows];
      int64_t visibleOf[kRows];
      int64_t pairs = 0;
      const __m512 ninf = _mm512_set1_ps(-INFINITY), log2e = _mm512_set1_ps(1.44269504f);
      for (int x = 0; x < kRows; ++x) {
        const int64_t r = rr[x], last = lastOf(r);
        live[x] = r0 + x < count && jb <= last;
        mOld[x] = mNew[x] = 0.0f; // factor 1 for rows that are not live
        if (!live[x])
          continue;
        const int64_t visible = std::min(valid, last - jb + 1);
        visibleOf[x] = visible;
        pairs = std::max(pairs, (visible + 1) / 2);
        __m512 vmax = ninf;
        for (int y = 0; y < kQuarters; ++y) {
          __m512 v = _mm512_load_ps(&sc[x][16 * y]);
          if (int8) {
            v = _mm512_mul_ps(v, _mm512_load_ps(kScales + 16 * y));
            _mm512_store_ps(&sc[x][16 * y], v);
          }
          vmax = _mm512_mask_max_ps(vmax, tailMask(visible - 16 * y), vmax, v);
        }
        mOld[x] = Rm[size_t(r)];
        mNew[x] = std::max(mOld[x], _mm512_reduce_max_ps(_mm512_mul_ps(vmax, log2e)));
      }
      for (int x = kRows; x < 16; ++x)
        mOld[x] = mNew[x] = 0.0f;
      // expForBf16 here: a factor's error would compound block after block.
      _mm512_store_ps(corr, expForBf16(_mm512_mul_ps(
                                _mm512_sub_ps(_mm512_load_ps(mOld), _mm512_load_ps(mNew)),
                                _mm512_set1_ps(0.693147181f))));
      for (int x = 0; x < kRows; ++x) {
        if (!live[x]) {
          std::fill(pr[x], pr[x] + kBlock / 2, 0u);
          continue;
        }
        const int64_t r = rr[x], visible = visibleOf[x];
        const __m512 vm = _mm512_set1_ps(mNew[x]);
        __m512 sum = _mm512_setzero_ps();
        for (int y = 0; y < kQuarters; y += 2) {
          const __m512 e0 = exp2ForBf16(tailMask(visible - 16 * y),
                                        _mm512_fmsub_ps(_mm512_load_ps(&sc[x][16 * y]), log2e, vm));
          const __m512 e1 =
              exp2ForBf16(tailMask(visible - 16 * y - 16),
                          _mm512_fmsub_ps(_mm512_load_ps(&sc[x][16 * y + 16]), log2e, vm));
          sum = _mm512_add_ps(sum, _mm512_add_ps(e0, e1));
          // 16 position pairs: positions 16 y .. 16 y + 31 (int8 values:
          // weighted by their rows' scales; the sum keeps the plain ones).
          const __m512bh p = int8 ? _mm512_cvtne2ps_pbh(
                                        _mm512_mul_ps(e1, _mm512_load_ps(vScales + 16 * y + 16)),
                                        _mm512_mul_ps(e0, _mm512_load_ps(vScales + 16 * y)))
                                  : _mm512_cvtne2ps_pbh(e1, e0);
          _mm512_store_si512(&pr[x][8 * y], (__m512i)p);
        }
        // The row's sum stays 16 partial sums until the end.
        float *lr = &Rl[size_t(r * 16)];
        _mm512_storeu_ps(lr, _mm512_fmadd_ps(_mm512_loadu_ps(lr), _mm512_set1_ps(corr[x]), sum));
        Rm[size_t(r)] = mNew[x];
      }
      // Output += P x V: four rows x four accumulators of 16 dims at a time
      // (each packed V vector and probability pair loaded once for four
      // multiply-adds).
      for (int x0 = 0; x0 < kRows; x0 += kGroup)
        for (int64_t c = 0; c < vChunks; c += 4) {
          if (vChunks - c >= 4)
            accumulatePv<4>(Ro, rr + x0, pr + x0, corr + x0, vPack, pairs, dv, c, count - r0 - x0);
          else
            accumulatePv<2>(Ro, rr + x0, pr + x0, corr + x0, vPack, pairs, dv, c, count - r0 - x0);
        }
    }
  }
  // Un-permute each 32 dims and normalize: low lanes 4b..4b+3 hold dims
  // 8b..8b+3, high lanes dims 8b+4..8b+7.
  const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i second =
      _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  for (int64_t u = 0; u < tq; ++u)
    for (int64_t h = 0; h < G; ++h) {
      const int64_t r = u * G + h;
      const float *o = &Ro[size_t(r * dv)];
      float *dst = out + ((t0 + u) * numHeads + kvh * G + h) * dv;
      const __m512 inv =
          _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(_mm512_loadu_ps(&Rl[size_t(r * 16)])));
      for (int64_t c = 0; c < dv; c += 32) {
        const __m512 lo = _mm512_loadu_ps(o + c), hi = _mm512_loadu_ps(o + c + 16);
        _mm512_storeu_ps(dst + c, _mm512_mul_ps(_mm512_permutex2var_ps(lo, first, hi), inv));
        _mm512_storeu_ps(dst + c + 16,
                         _mm512_mul_ps(_mm512_permutex2var_ps(lo, second, hi), inv));
      }
    }
}

} // namespace hyrt::cpu

#pragma GCC pop_options
