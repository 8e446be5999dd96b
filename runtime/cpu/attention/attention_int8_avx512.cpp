// Flash attention over int8 dot products (AVX-512 VNNI, `vpdpbusd`) for
// the extend blocks of an int8 KV cache: the layout of the bf16 kernel
// (attention_bf16_avx512.cpp: the tokens of a block times the query heads
// of one KV head are the rows, cached positions stream through with an
// online softmax), with both products in int8, in blocks of 128 positions:
// the per-block costs (each row's maxima, rescaling, the P x V sums'
// join with the output) are a larger share of int8 dot products than of
// bf16 ones (blocks of 64: 600-620 GOP/s, 128: 650 on moe-small's heads).
//
// Why: a 4096-token prompt's attention is most of its prefill on moe-small
// (32 heads x 128 at 4096 positions: 1.1 TFLOP); the bf16 kernel runs it at
// 82% of the host's `vdpbf16ps` peak, and the prompt still needs more than
// that whole peak to stay within 80% of a 512-token prompt's tokens/s
// (bench/README.md "Prompt attention in int8"). `vpdpbusd` does twice the
// multiply-adds of `vdpbf16ps` per instruction.
//
// Per block of 128 positions:
// - Keys: the cache's int8 codes, packed once for every row as dk/4
//   vectors of 16 positions' 4-dim quads (a transpose), each byte offset by
//   128 to the unsigned operand; one `vpdpbusd` with a broadcast query quad
//   adds four dims to 16 positions' scores. Queries (scaled) are quantized
//   once per row to int8 with one scale per row (largest magnitude -> 127);
//   the offset comes back out as 128 x the row's code sum, exactly.
// - The online softmax as in the bf16 kernel (base 2, running maximum and
//   sum in fp32). Each probability is weighted by its value row's scale and
//   the block's weighted probabilities of a row quantized to uint8 with one
//   scale per row and block (largest -> 255): a block of small
//   probabilities keeps its own resolution.
// - Values: the cache's int8 codes in 4-position quads per dim (bytes of 4
//   rows interleaved by `vpunpck[lh]bw` / `wd`), so one `vpdpbusd` with a
//   broadcast probability quad adds four positions to 16 dims. The
//   interleave permutes the dims within each 64 (dim 16L + 4k + i sits in
//   vector k, lane 4L + i); the output is un-permuted once at the end.
//   Each block's int32 sums join the fp32 output with the block's scale.
// Numerics: queries and probabilities rounded to 8 bits against the cache's
// own 8-bit codes, sums exact in int32: the error bound is derived in
// test/unit/cpu/attention_int8_test.cpp.
#include "attention_group.h"
#include "../tls_pointer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <immintrin.h>
#include <vector>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")

#include "../vec_avx512.h"
#include "int8_dots_avx512.h"
#include "transpose16_avx512.h"

namespace hyrt::cpu {

namespace {

constexpr int64_t kBlock = 128;
constexpr int kQuarters = int(kBlock / 16); // 16-position vectors per block
constexpr int kQuads = int(kBlock / 4);     // 4-position quads per block
// Positions per score call: 4 rows x 4 vectors of 16 (16 accumulators).
constexpr int64_t kScoreSpan = 64;
constexpr int kSpanVectors = int(kScoreSpan / 16);
// Rows per score / P x V call (4 x 4 accumulators), and per softmax pass:
// 16, so that the pass's rescaling factors are one vector and its rows'
// independent exponentials cover each other's latency (8 rows: 2-3%
// slower).
constexpr int kGroup = 4;
constexpr int kRows = 4 * kGroup;
// 16-dim vectors per P x V call (4 x 4 accumulators).
constexpr int kChunks = 4;

/// Rows of one block: r = u * G + h for token u and query head h.
struct Rows {
  int64_t count;
  std::vector<uint32_t> q;   // [count][dk / 4] query codes, int8 quads
  std::vector<float> qs;     // the row's query scale
  std::vector<int32_t> qc;   // 128 x the row's code sum (the key offset's term)
  std::vector<float> o;      // [count][dv padded to 64] output accumulators (dims permuted)
  std::vector<float> m;      // running maximum (base 2)
  std::vector<float> l;      // [count][16] partial sums of exponentials
};

/// Four rows' outputs, kChunks accumulators of 16 dims from chunk c on
/// (dv: the padded row length): scaled by
/// the rows' factors, plus the block's probability quads times the packed
/// value quads, summed in int32 and joined with the rows' block scales.
/// Rows from `real` on are tail copies: computed, not stored. Not inlined
/// (the bf16 kernel's accumulatePv says why).
__attribute__((noinline)) void accumulatePv(float *o, const int64_t *rr,
                                            const uint32_t (*pr)[kQuads], const float *corr,
                                            const float *ps, const uint32_t *vPack, int64_t quads,
                                            int64_t dv, int64_t c, int64_t real) {
  static_assert(kGroup == 4 && kChunks == 4, "sumValueQuads: four rows x four vectors");
  __m512i acc[kGroup][kChunks];
  const uint32_t *const codes[kGroup] = {pr[0], pr[1], pr[2], pr[3]};
  sumValueQuads(codes, quads, vPack + c * 16, dv, acc);
  // A row whose maximum stayed (factor exactly 1: most blocks of a long
  // context) skips the rescaling multiply.
#pragma GCC unroll 8
  for (int x = 0; x < kGroup; ++x)
    if (x < real) {
      const __m512 f = _mm512_set1_ps(corr[x]), s = _mm512_set1_ps(ps[x]);
      const bool keep = corr[x] == 1.0f;
#pragma GCC unroll 8
      for (int y = 0; y < kChunks; ++y) {
        float *dst = &o[size_t(rr[x] * dv + (c + y) * 16)];
        const __m512 old = keep ? _mm512_loadu_ps(dst) : _mm512_mul_ps(_mm512_loadu_ps(dst), f);
        _mm512_storeu_ps(dst, _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[x][y]), s, old));
      }
    }
}

/// Scores of four rows against a packed key block, positions from .. from
/// + 63, into s[x][position]: (int32 sum - the row's offset term) x each
/// position's key scale; the row's query scale (with log2(e)) is applied in
/// the softmax's fmsub. rowMax[x]: the row's maximum over its visible
/// positions so far (this span's, joined with the earlier ones').
__attribute__((noinline)) void scoreRows(const uint32_t *q, const int64_t *rr, int64_t kq,
                                         const uint32_t *kPack, const int32_t *qc, const float *kScales,
                                         float (*s)[kBlock], int64_t from,
                                         const int64_t *visible, __m512 *rowMax) {
  // Each sum starts at minus the row's offset term.
  __m512i sc[kGroup][kSpanVectors];
#pragma GCC unroll 8
  for (int x = 0; x < kGroup; ++x)
#pragma GCC unroll 8
    for (int y = 0; y < kSpanVectors; ++y)
      sc[x][y] = _mm512_set1_epi32(-qc[rr[x]]);
  const uint32_t *qr[kGroup];
#pragma GCC unroll 8
  for (int x = 0; x < kGroup; ++x)
    qr[x] = q + rr[x] * kq;
  for (int64_t i = 0; i < kq; ++i) {
    __m512i k[kSpanVectors];
#pragma GCC unroll 8
    for (int y = 0; y < kSpanVectors; ++y)
      k[y] = _mm512_load_si512(&kPack[i * kBlock + from + 16 * y]);
#pragma GCC unroll 8
    for (int x = 0; x < kGroup; ++x)
      dpbusd4(sc[x], k, _mm512_set1_epi32(int(qr[x][i])));
  }
#pragma GCC unroll 8
  for (int x = 0; x < kGroup; ++x) {
    __m512 m = from == 0 ? _mm512_set1_ps(-INFINITY) : rowMax[x];
#pragma GCC unroll 8
    for (int y = 0; y < kSpanVectors; ++y) {
      const __m512 v =
          _mm512_mul_ps(_mm512_cvtepi32_ps(sc[x][y]), _mm512_load_ps(kScales + from + 16 * y));
      _mm512_store_ps(&s[x][from + 16 * y], v);
      m = _mm512_mask_max_ps(m, tailMask(visible[x] - from - 16 * y), m, v);
    }
    rowMax[x] = m;
  }
}

} // namespace

void attendInt8Dots(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                    int64_t numHeads, float scale, int64_t t0, int64_t tq, int64_t kvh,
                    float *out) {
  const int64_t dk = l.dk, dv = l.dv, G = l.group;
  const int64_t p0 = step->positions[t0], nMax = p0 + tq, kq = dk / 4;
  // Head dims that are multiples of 16 but not 64 (the small real models'
  // 16): keys transposed from masked loads, values and outputs padded to
  // whole 64-dim chunks (the padding's lanes are computed, never stored).
  const int64_t dvPad = (dv + 63) / 64 * 64;
  auto lastOf = [&](int64_t r) { return p0 + r / G; };

  thread_local std::vector<int64_t> rowsBuf;
  rowsBuf.resize(size_t(nMax));
  int64_t *const rows = pinned(rowsBuf.data());
  forEachRow(step, l, t0, nMax, [&](int64_t j, int64_t row) { rows[j] = row; });

  thread_local Rows tRows;
  Rows &R = tRows;
  R.count = tq * G;
  R.q.resize(size_t(R.count * kq));
  R.qs.resize(size_t(R.count));
  R.qc.resize(size_t(R.count));
  R.o.assign(size_t(R.count * dvPad), 0.0f);
  R.m.assign(size_t(R.count), -INFINITY);
  R.l.assign(size_t(R.count * 16), 0.0f);
  const int64_t count = R.count;
  uint32_t *const Rq = pinned(R.q.data());
  float *const Rqs = pinned(R.qs.data());
  int32_t *const Rqc = pinned(R.qc.data());
  float *const Ro = pinned(R.o.data()), *const Rm = pinned(R.m.data()),
              *const Rl = pinned(R.l.data());
  for (int64_t u = 0; u < tq; ++u)
    for (int64_t h = 0; h < G; ++h) {
      const int64_t r = u * G + h;
      quantizeQueryRow(q + ((t0 + u) * numHeads + kvh * G + h) * dk, scale, dk,
                       &Rq[size_t(r * kq)], &Rqs[r], &Rqc[r]);
      Rqs[r] *= 1.44269504f; // scores in base 2 (log2(e))
    }

  // Packed blocks: K as [kq][64] quads by position (unsigned: byte + 128),
  // V as [16 quads][dv] dwords (per 64 dims: 4 vectors, dims permuted).
  alignas(64) thread_local uint32_t tKPack[64 * kBlock];
  alignas(64) thread_local uint32_t tVPack[kQuads * 256];
  uint32_t *const kPack = pinned(tKPack), *const vPack = pinned(tVPack);
  alignas(64) float kScales[kBlock], vScales[kBlock];
  const int8_t *kRowOf[kBlock], *vRowOf[kBlock];
  const __m512i flip = _mm512_set1_epi8(char(0x80));

  for (int64_t jb = 0; jb < nMax; jb += kBlock) {
    const int64_t valid = std::min(kBlock, nMax - jb);
    for (int64_t i = 0; i < kBlock; ++i) {
      const int64_t row = rows[std::min(jb + i, nMax - 1)]; // the padding repeats the last row
      kRowOf[i] = l.kRow<int8_t>(row, kvh), vRowOf[i] = l.vRow<int8_t>(row, kvh);
      kScales[i] = l.kScaleOf<int8_t>(row, kvh), vScales[i] = l.vScaleOf<int8_t>(row, kvh);
    }
    for (int quarter = 0; quarter < kQuarters; ++quarter)
      for (int64_t c = 0; c < kq; c += 16) {
        const int64_t n = std::min<int64_t>(16, kq - c);
        const __mmask16 dwords = __mmask16((1u << n) - 1);
        __m512i m[16];
        for (int i = 0; i < 16; ++i)
          m[i] = _mm512_maskz_loadu_epi32(dwords, kRowOf[quarter * 16 + i] + 4 * c);
        transpose16(m);
        for (int i = 0; i < n; ++i)
          _mm512_store_si512(&kPack[(c + i) * kBlock + quarter * 16], _mm512_xor_si512(m[i], flip));
      }
    for (int64_t a = 0; a < kQuads; ++a)
      for (int64_t c = 0; c < dv; c += 64) {
        const int64_t p = 4 * quadOfSlot(a);
        const __mmask64 bytes = dv - c >= 64 ? ~__mmask64(0) : (__mmask64(1) << (dv - c)) - 1;
        packValueQuad(vRowOf[p] + c, vRowOf[p + 1] + c, vRowOf[p + 2] + c, vRowOf[p + 3] + c,
                      bytes, &vPack[a * dvPad + c]);
      }
    for (int64_t r0 = 0; r0 < count; r0 += kRows) {
      if (jb > lastOf(std::min(r0 + kRows - 1, count - 1)))
        continue; // every row of the group is past this block
      // Each row's positions in this block (0: a row past it, or a tail
      // copy, which adds nothing: probabilities 0, its output kept).
      int64_t rr[kRows], visibleOf[kRows];
      int64_t seen = 0;
      for (int x = 0; x < kRows; ++x) {
        rr[x] = std::min(r0 + x, count - 1);
        visibleOf[x] = r0 + x < count ? std::clamp<int64_t>(lastOf(rr[x]) - jb + 1, 0, valid) : 0;
        seen = std::max(seen, visibleOf[x]);
      }
      // Scores with each row's running maximum over its visible positions;
      // the block's second span only where a row of the group sees it.
      alignas(64) float sc[kRows][kBlock];
      __m512 rowMax[kRows];
      for (int64_t from = 0; from < seen; from += kScoreSpan)
        for (int x0 = 0; x0 < kRows; x0 += kGroup)
          scoreRows(Rq, rr + x0, kq, kPack, Rqc, kScales, sc + x0, from, visibleOf + x0,
                    rowMax + x0);
      // The online softmax of the bf16 kernel; then each live row's
      // probabilities times its value rows' scales, to uint8 quads with
      // the row's block scale ps (a row with nothing to add: codes 0).
      alignas(64) uint32_t pr[kRows][kQuads];
      alignas(64) float mOld[16], mNew[16], corr[16];
      float ps[kRows];
      const int64_t quads = (seen + 63) / 64 * 16; // whole halves (quadOfSlot)
      for (int x = 0; x < kRows; ++x) {
        mOld[x] = mNew[x] = 0.0f; // factor 1 for rows with nothing here
        if (visibleOf[x] == 0)
          continue;
        const int64_t r = rr[x];
        mOld[x] = Rm[size_t(r)];
        // The row's scale is >= 0: it commutes with the maximum.
        mNew[x] = std::max(mOld[x], _mm512_reduce_max_ps(rowMax[x]) * Rqs[r]);
      }
      for (int x = kRows; x < 16; ++x)
        mOld[x] = mNew[x] = 0.0f;
      _mm512_store_ps(corr, expForBf16(_mm512_mul_ps(
                                _mm512_sub_ps(_mm512_load_ps(mOld), _mm512_load_ps(mNew)),
                                _mm512_set1_ps(0.693147181f))));
      for (int x = 0; x < kRows; ++x) {
        ps[x] = 0.0f;
        if (visibleOf[x] == 0) {
          std::fill(pr[x], pr[x] + kQuads, 0u);
          continue;
        }
        const int64_t r = rr[x], visible = visibleOf[x];
        const __m512 vm = _mm512_set1_ps(mNew[x]), vq = _mm512_set1_ps(Rqs[r]);
        __m512 sum = _mm512_setzero_ps(), wmax = _mm512_setzero_ps();
        // Only the quarters the row sees (the diagonal block's others: 0).
        __m512 w[kQuarters];
#pragma GCC unroll 8
        for (int y = 0; y < kQuarters; ++y)
          if (16 * y < visible) {
            const __m512 e = exp2ForBf16(tailMask(visible - 16 * y),
                                         _mm512_fmsub_ps(_mm512_load_ps(&sc[x][16 * y]), vq, vm));
            sum = _mm512_add_ps(sum, e);
            w[y] = _mm512_mul_ps(e, _mm512_load_ps(vScales + 16 * y));
            wmax = _mm512_max_ps(wmax, w[y]);
          }
        const float top = _mm512_reduce_max_ps(wmax);
        const __m512 inv = codeFactor(top);
        // Codes in probabilityCodes64's order (the value quads are packed
        // in it: quadOfSlot).
#pragma GCC unroll 8
        for (int y = 0; y < kQuarters; ++y)
          if (16 * y >= visible)
            w[y] = _mm512_setzero_ps();
#pragma GCC unroll 2
        for (int half = 0; half < kQuarters / 4; ++half)
          if (64 * half < seen)
            _mm512_store_si512(&pr[x][16 * half], probabilityCodes64(w + 4 * half, inv));
        ps[x] = top / 255.0f;
        float *lr = &Rl[size_t(r * 16)];
        _mm512_storeu_ps(lr, _mm512_fmadd_ps(_mm512_loadu_ps(lr), _mm512_set1_ps(corr[x]), sum));
        Rm[size_t(r)] = mNew[x];
      }
      for (int x0 = 0; x0 < kRows; x0 += kGroup)
        for (int64_t c = 0; c < dvPad / 16; c += 4)
          accumulatePv(Ro, rr + x0, pr + x0, corr + x0, ps + x0, vPack, quads, dvPad, c,
                          count - r0 - x0);
    }
  }
  // Un-permute each 64 dims (dim 16L + 4k + i from vector k, lane 4L + i)
  // and normalize.
  for (int64_t u = 0; u < tq; ++u)
    for (int64_t h = 0; h < G; ++h) {
      const int64_t r = u * G + h;
      const float *o = &Ro[size_t(r * dvPad)];
      float *dst = out + ((t0 + u) * numHeads + kvh * G + h) * dv;
      const __m512 inv =
          _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(_mm512_loadu_ps(&Rl[size_t(r * 16)])));
      for (int64_t c = 0; c < dv; c += 64)
        for (int k = 0; k < 4 && c + 16 * k < dv; ++k)
          _mm512_storeu_ps(dst + c + 16 * k, unpermutedQuads(o + c, k, inv));
    }
}

} // namespace hyrt::cpu

#pragma GCC pop_options
