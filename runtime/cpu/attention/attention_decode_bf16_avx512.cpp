// Decode attention over bf16 dot products (AVX-512 BF16, `vdpbf16ps`): one
// decode token's query heads of one or more KV heads over its cached
// positions (or one flash-decoding split of them) in a bf16 KV cache.
//
// Why: at long contexts decode reads the whole cache per token, and the
// fp32 row-blocked kernel (attention_rows_avx512.cpp) widens every cached
// element to fp32 before its multiply-add; on a 2-core host it read the
// cache at ~20 GB/s, compute-bound, so a 4000-position decode token took
// 1.3x a 100-position one where the bytes allow ~1.1x (bench/README.md
// "Long prompts"). `vdpbf16ps` takes the cache's bf16 pairs as they are.
//
// - Keys: per block of 16 positions and per query head, 16 accumulators
//   (one per position) of `vdpbf16ps` over the head dim with the head's
//   scaled query pairs (rounded to bf16 once), then one transpose-and-add
//   tree into 16 scores: scores are stored [head][position]. GQA groups of
//   4 or 8 heads take four heads per vector instead (keyScores4): one tree
//   per 16 positions for the four.
// - Softmax per head in fp32; the probabilities are rounded to bf16 in
//   position pairs, the sum kept from the unrounded ones.
// - Values: two cached rows interleaved per dim (`vpunpck[lh]wd`) make 16
//   (v[j][d], v[j+1][d]) pairs per register, so one `vdpbf16ps` with a
//   head's probability pair broadcast adds two positions to 16 dims. The
//   interleave permutes dims within each 32 (as in attention_bf16_avx512.cpp);
//   the output is un-permuted at the end.
// - The cache is prefetched through the block table into L2, not L1.
// - Several KV heads: each block of positions is taken for every KV head in
//   turn. A page holds its KV heads side by side (abi.h), so the cache is
//   read in address order instead of one 4 KB run per page and head (16
//   positions x 256 bytes) with the other heads' runs in between: DRAM-
//   resident, 1.1-1.25x the cache GB/s (bench/README.md, "Decode attention
//   sweeping a page's KV heads"). attention.cpp decides how many heads an
//   item takes.
// - An int8 cache: rows widened to bf16 codes per block (int8_rows_bf16.h),
//   except for groups of 4 or 8 heads on hosts with VNNI: their keys go into
//   `vpdpbusd` as they are against int8 query codes (keyScores4Int8), and
//   with dv a multiple of 64 their values too, in 4-position quads against
//   uint8 probability codes with one scale per head and value block
//   (valueQuads, as attention_int8_avx512.cpp's P x V). At 4000 positions
//   from DRAM: dense-1b's heads (16 layers) 73 -> 89 GOP/s, moe-small's (8
//   layers) 136-165 -> 153-207, where a bf16 cache gives 93-103 and
//   105-160.
// - MLA's absorbed decode (mla_attention.cpp) runs here too: all heads in
//   one group over one KV head of latent rows, keys [c | k_pe], values their
//   first rank elements (LayerView::vStride), rank up to 512.
// Numerics are those of the extend kernel (attention_bf16_avx512.cpp), with
// the same derived bound (test/unit/cpu/attention_bf16_test.cpp;
// mla_attention_test.cpp for the latent form); int8 keys and values: the
// queries' int8 rounding instead of their bf16 one, the probabilities'
// uint8 codes per block instead of bf16 (attention_int8_test.cpp).
#include "attention_group.h"
#include "../tls_pointer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <immintrin.h>
#include <vector>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vnni")

#include "../vec_avx512.h"
#include "int8_dots_avx512.h"
#include "int8_rows_bf16.h"

namespace hyrt::cpu {

namespace {

constexpr int64_t kKeyBlock = 16;   // positions per score tree
constexpr int64_t kValueBlock = 64; // positions per value pass (L1-resident)
// Rows prefetched ahead through the block table (pages jump, which the
// hardware prefetchers do not follow).
constexpr int64_t kAhead = 32;

// Into L2 (T1), not L1: a decode token's cache comes from DRAM, and T0
// prefetches hold the core's few L1 miss buffers until their lines arrive,
// so the prefetch instructions themselves stalled (13% of the kernel's
// samples on the one after a prefetcht0, Zen 4). With T1 the cache read
// from DRAM went from 13-14 to 19-21 GB/s (dense-1b's heads, 16 layers at
// 4000 positions) and 11-13 to 18-20 GB/s (moe-small's); cache-resident
// rates did not move (bench/README.md, "Decode attention at depth:
// prefetch into L2").
inline void prefetchLines(const void *p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64)
    _mm_prefetch(static_cast<const char *>(p) + b, _MM_HINT_T1);
}

/// Value pass over position pairs [0, a1) of a block whose bf16 value rows
/// are vr[] (pair a: rows 2a, 2a + 1; the caller repeats the last row past
/// the block's end) for heads h0 .. h0 + HB - 1 (clamped to the group G:
/// extra heads are computed and not kept) and NCH chunks of 16 (permuted)
/// dims from chunk c0 on; accumulators in `acc` ([head][dv], permuted),
/// probability pairs in `pairs` ([head][pairStride]). Two of the
/// `prefetchCount` rows at `prefetch` (`rowBytes` each) are prefetched per
/// pair.
template <int HB, int NCH>
void valuePass(int64_t G, int64_t dv, const uint16_t *const *vr, int64_t a1,
               const uint32_t *pairs, int64_t pairStride, int64_t pairBase, int64_t h0,
               int64_t c0, float *acc, const void *const *prefetch, int64_t prefetchCount,
               int64_t rowBytes) {
  static_assert(NCH % 2 == 0, "chunks come in low/high pairs of a 32-dim interleave");
  int64_t hs[HB];
#pragma GCC unroll 16
  for (int x = 0; x < HB; ++x)
    hs[x] = std::min(h0 + x, G - 1);
  __m512 a[HB][NCH];
#pragma GCC unroll 16
  for (int x = 0; x < HB; ++x)
#pragma GCC unroll 16
    for (int y = 0; y < NCH; ++y)
      a[x][y] = _mm512_loadu_ps(acc + hs[x] * dv + (c0 + y) * 16);
  for (int64_t p = 0; p < a1; ++p) {
    if (2 * p < prefetchCount) {
      prefetchLines(prefetch[2 * p], rowBytes);
      if (2 * p + 1 < prefetchCount)
        prefetchLines(prefetch[2 * p + 1], rowBytes);
    }
    const uint16_t *v0 = vr[2 * p] + c0 * 16, *v1 = vr[2 * p + 1] + c0 * 16;
    __m512bh v[NCH];
#pragma GCC unroll 16
    for (int y = 0; y < NCH; y += 2) {
      const __m512i x0 = _mm512_loadu_si512(v0 + y * 16), x1 = _mm512_loadu_si512(v1 + y * 16);
      v[y] = (__m512bh)_mm512_unpacklo_epi16(x0, x1);
      v[y + 1] = (__m512bh)_mm512_unpackhi_epi16(x0, x1);
    }
#pragma GCC unroll 16
    for (int x = 0; x < HB; ++x) {
      const __m512bh pb =
          (__m512bh)_mm512_set1_epi32(int(pairs[hs[x] * pairStride + pairBase + p]));
#pragma GCC unroll 16
      for (int y = 0; y < NCH; ++y)
        a[x][y] = _mm512_dpbf16_ps(a[x][y], pb, v[y]);
    }
  }
  // Constant bounds and a test inside: an array indexed by a run-time row
  // would be kept in memory.
#pragma GCC unroll 16
  for (int x = 0; x < HB; ++x)
    if (h0 + x < G)
#pragma GCC unroll 16
      for (int y = 0; y < NCH; ++y)
        _mm512_storeu_ps(acc + hs[x] * dv + (c0 + y) * 16, a[x][y]);
}

using ValuePassFn = void (*)(int64_t, int64_t, const uint16_t *const *, int64_t,
                             const uint32_t *, int64_t, int64_t, int64_t, int64_t, float *,
                             const void *const *, int64_t, int64_t);

/// Up to 16 accumulators: NCH, the largest of 16, 8, 4, 2 dividing dv / 16,
/// and HB heads per pass as many as fit beside them (at most the group).
ValuePassFn pickValuePass(int64_t G, int64_t dv, int &hb, int &nch) {
  const int64_t chunks = dv / 16;
  if (G >= 16) {
    // Many heads over one KV head (MLA's latent rows): each interleaved
    // pair of rows serves 8 heads, so its unpack costs 1 per 8 dot products
    // rather than 1 per dot product with one head per pass.
    hb = 8, nch = 2;
    return valuePass<8, 2>;
  }
  nch = chunks % 16 == 0 ? 16 : chunks % 8 == 0 ? 8 : chunks % 4 == 0 ? 4 : 2;
  int64_t fit = 16 / nch;
  hb = int(std::min<int64_t>(fit, G >= 8 ? 8 : G >= 4 ? 4 : G >= 2 ? 2 : 1));
  switch (nch * 16 + hb) {
  case 16 * 16 + 1: return valuePass<1, 16>;
  case 8 * 16 + 1: return valuePass<1, 8>;
  case 8 * 16 + 2: return valuePass<2, 8>;
  case 4 * 16 + 1: return valuePass<1, 4>;
  case 4 * 16 + 2: return valuePass<2, 4>;
  case 4 * 16 + 4: return valuePass<4, 4>;
  case 2 * 16 + 1: return valuePass<1, 2>;
  case 2 * 16 + 2: return valuePass<2, 2>;
  case 2 * 16 + 4: return valuePass<4, 2>;
  default: return valuePass<8, 2>;
  }
}

inline void laneTree4(const __m512 acc[16], __m512 s[4]);

/// Scores of 16 key rows `kr` for four query heads at once, into s[h]
/// (lane r: row r). Lanes 4h..4h+3 of a vector are head h's, one pair of
/// dims each, so one 16-byte run of a key row (8 dims) broadcast to the four
/// 128-bit lanes serves all four heads: `qp` holds the heads' query pairs in
/// that order, [chunk][head][4 pairs], `chunks` = dk / 8. Each row's 16
/// lanes then need one tree of 44 shuffles and adds for the four heads
/// where one head per vector took 45 per head: on dense-1b's heads (dk 64)
/// the tree was as costly as the dot products.
inline void keyScores4(const uint32_t *qp, int64_t chunks, const uint16_t *const *kr,
                       __m512 s[4]) {
  __m512 acc[kKeyBlock];
#pragma GCC unroll 16
  for (int r = 0; r < kKeyBlock; ++r)
    acc[r] = _mm512_setzero_ps();
  for (int64_t c = 0; c < chunks; ++c) {
    const __m512bh qv = (__m512bh)_mm512_loadu_si512(qp + c * 16);
#pragma GCC unroll 16
    for (int r = 0; r < kKeyBlock; ++r) {
      const __m512i k8 =
          _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i *>(kr[r] + c * 8)));
      acc[r] = _mm512_dpbf16_ps(acc[r], qv, (__m512bh)k8);
    }
  }
  laneTree4(acc, s);
}

/// The tree of keyScores4: 16 rows' vectors of four heads' partial sums
/// (lanes 4h..4h+3: head h's) into s[h] (lane r: row r).
inline void laneTree4(const __m512 acc[kKeyBlock], __m512 s[4]) {
  // Per 128-bit lane (head): rows 2m, 2m + 1 -> [a0+a2, b0+b2, a1+a3, b1+b3].
  __m512 t[8];
#pragma GCC unroll 8
  for (int m = 0; m < 8; ++m)
    t[m] = _mm512_add_ps(_mm512_unpacklo_ps(acc[2 * m], acc[2 * m + 1]),
                         _mm512_unpackhi_ps(acc[2 * m], acc[2 * m + 1]));
  // Rows 4k .. 4k + 3 whole, per head.
  __m512 u[4];
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k)
    u[k] = _mm512_add_ps(_mm512_shuffle_ps(t[2 * k], t[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(t[2 * k], t[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // A 4 x 4 transpose of 128-bit lanes: head h's 16 rows into s[h].
  const __m512 a = _mm512_shuffle_f32x4(u[0], u[1], 0x44), b = _mm512_shuffle_f32x4(u[0], u[1], 0xEE);
  const __m512 c = _mm512_shuffle_f32x4(u[2], u[3], 0x44), d = _mm512_shuffle_f32x4(u[2], u[3], 0xEE);
  s[0] = _mm512_shuffle_f32x4(a, c, 0x88);
  s[1] = _mm512_shuffle_f32x4(a, c, 0xDD);
  s[2] = _mm512_shuffle_f32x4(b, d, 0x88);
  s[3] = _mm512_shuffle_f32x4(b, d, 0xDD);
}

/// keyScores4 on an int8 cache's rows as they are (`vpdpbusd`): one 16-byte
/// run of a key row (16 dims; offset by 128 to the unsigned operand)
/// broadcast to the four lanes, `qc` the four heads' int8 query codes,
/// [chunk of 16 dims][head][4 dword quads], `chunks` = dk / 16. The int32
/// sums are exact in fp32 (|sum| <= dk x 255 x 127 < 2^24 for dk <= 256)
/// and go through the same tree; the caller takes the offset out and
/// applies the scales.
inline void keyScores4Int8(const uint32_t *qc, int64_t chunks, const int8_t *const *kr,
                           __m512 s[4]) {
  __m512i acc[kKeyBlock];
#pragma GCC unroll 16
  for (int r = 0; r < kKeyBlock; ++r)
    acc[r] = _mm512_setzero_si512();
  const __m512i flip = _mm512_set1_epi8(char(0x80));
  for (int64_t c = 0; c < chunks; ++c) {
    const __m512i qv = _mm512_loadu_si512(qc + c * 16);
#pragma GCC unroll 16
    for (int r = 0; r < kKeyBlock; ++r) {
      const __m512i k8 = _mm512_xor_si512(
          _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i *>(kr[r] + c * 16))),
          flip);
      // Tied accumulator (GCC copies it around the intrinsic: see
      // attention_int8_avx512.cpp).
      asm("vpdpbusd %2, %1, %0" : "+v"(acc[r]) : "v"(k8), "v"(qv));
    }
  }
  __m512 f[kKeyBlock];
#pragma GCC unroll 16
  for (int r = 0; r < kKeyBlock; ++r)
    f[r] = _mm512_cvtepi32_ps(acc[r]);
  laneTree4(f, s);
}

/// An int8 cache's value block of 64 positions for four heads and 64 dims
/// from chunk c0 on: the heads' uint8 probability quads (`codes`, head x at
/// x * codeStride, in quadOfSlot's order) times the block's value quads
/// (`quads`, packValueQuad's layout, [16 slots][dv]), summed in int32 and
/// joined with the fp32 accumulators `acc` ([head][dv], permuted as the
/// quads) with each head's block scale (`scales`, head x at x * scaleStride).
__attribute__((noinline)) void valueQuads(const uint32_t *codes, int64_t codeStride,
                                          const float *scales, int64_t scaleStride,
                                          const uint32_t *quads, int64_t dv, int64_t c0,
                                          float *acc) {
  __m512i a[4][4];
  const uint32_t *const heads[4] = {codes, codes + codeStride, codes + 2 * codeStride,
                                    codes + 3 * codeStride};
  sumValueQuads(heads, kValueBlock / 4, quads + c0 * 16, dv, a);
#pragma GCC unroll 4
  for (int x = 0; x < 4; ++x) {
    const __m512 f = _mm512_set1_ps(scales[x * scaleStride]);
#pragma GCC unroll 4
    for (int y = 0; y < 4; ++y) {
      float *d = acc + x * dv + (c0 + y) * 16;
      _mm512_storeu_ps(d, _mm512_fmadd_ps(_mm512_cvtepi32_ps(a[x][y]), f, _mm512_loadu_ps(d)));
    }
  }
}

/// attendDecodeBf16 for a bf16 (Int8 false) or int8 cache: the cache's
/// type a constant, so the per-row pointer loops carry no test of it.
template <bool Int8>
void attendDecodeBf16Cache(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                           int64_t numHeads, float scale, int64_t t, int64_t kvh0,
                           int64_t kvhCount, float *out, const KvSplit *splits) {
  const int64_t dk = l.dk, dv = l.dv, G = l.group, kp = dk / 2, H = kvhCount;
  const int64_t n = int64_t(step->positions[t]) + 1;
  const int64_t jBegin = splits ? splits[0].begin : 0, jEnd = splits ? splits[0].end : n;
  const int64_t count = jEnd - jBegin;
  // Groups of four heads (not MLA's latent rows: their many dims leave the
  // tree a small share) take their keys four at a time (keyScores4).
  const bool four = G % 4 == 0 && G < 16 && dk % 8 == 0;
  // An int8 cache on a host with VNNI: those groups' keys in int8 dot
  // products (keyScores4Int8), and with dv a multiple of 64 their values too
  // (valueQuads: probabilities as uint8 codes per head and value block).
  const bool int8Keys = Int8 && four && dk % 16 == 0 && hostHasAvx512Vnni() &&
                        !int8AttentionDotsOff();
  const bool int8Values = int8Keys && dv % 64 == 0;
  // Scores padded to whole pairs of key blocks (int8 values: whole value
  // blocks): the padding scores -inf, so its probabilities round to 0.
  const int64_t padTo = int8Values ? kValueBlock : 2 * kKeyBlock;
  const int64_t padded = (count + padTo - 1) / padTo * padTo;

  thread_local std::vector<int64_t> rowsBuf;
  thread_local std::vector<uint32_t> qBuf, pairBuf;
  thread_local std::vector<float> scoreBuf, accBuf, sumBuf, maxBuf;
  // The thread's buffers through pinned pointers (tls_pointer.h).
  rowsBuf.resize(size_t(count));
  int64_t *const rows = pinned(rowsBuf.data()); // rows[i]: position jBegin + i
  forEachRowIn(step, l, t, jBegin, jEnd, [&](int64_t j, int64_t row) { rows[j - jBegin] = row; });
  const int64_t last = count - 1;

  // Scaled queries as bf16 pairs, [kv head][head][dk / 2] (not for int8
  // keys, which take their own codes below).
  qBuf.resize(size_t(H * G * kp));
  uint32_t *const qs = pinned(qBuf.data());
  const __m512 vscale = _mm512_set1_ps(scale);
  for (int64_t h = 0; !int8Keys && h < H * G; ++h) {
    const float *src = q + (t * numHeads + kvh0 * G + h) * dk;
    for (int64_t d = 0; d < dk; d += 32) {
      const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_mul_ps(_mm512_loadu_ps(src + d + 16), vscale),
                                             _mm512_mul_ps(_mm512_loadu_ps(src + d), vscale));
      _mm512_storeu_si512(&qs[size_t(h * kp + d / 2)], (__m512i)b);
    }
  }
  // keyScores4's queries: the same pairs as qs, [four heads][chunk of 8
  // dims][head][4 pairs].
  thread_local std::vector<uint32_t> q4Buf;
  if (four && !int8Keys) {
    q4Buf.resize(size_t(H * G * kp));
    for (int64_t h = 0; h < H * G; ++h)
      for (int64_t pr = 0; pr < kp; ++pr)
        q4Buf[size_t((h / 4) * 4 * kp + (pr / 4) * 16 + (h % 4) * 4 + pr % 4)] = qs[size_t(h * kp + pr)];
  }
  const uint32_t *const q4 = pinned(q4Buf.data());
  // int8 keys: each head's scaled query as int8 codes with one scale
  // (largest magnitude -> 127), [four heads][chunk of 16 dims][head][4
  // quads]; qOff[h] = 128 x the head's code sum (the keys' offset term).
  thread_local std::vector<uint32_t> qcBuf;
  thread_local std::vector<float> qScaleBuf, qOffBuf;
  if (int8Keys) {
    const int64_t quads = dk / 4;
    qcBuf.resize(size_t(H * G * quads));
    qScaleBuf.resize(size_t(H * G));
    qOffBuf.resize(size_t(H * G));
    alignas(64) uint32_t row[64]; // dk / 4 <= 64 quads
    for (int64_t h = 0; h < H * G; ++h) {
      int32_t off;
      quantizeQueryRow(q + (t * numHeads + kvh0 * G + h) * dk, scale, dk, row,
                       &qScaleBuf[size_t(h)], &off);
      qOffBuf[size_t(h)] = float(off);
      for (int64_t d4 = 0; d4 < quads; ++d4)
        qcBuf[size_t((h / 4) * 4 * quads + (d4 / 4) * 16 + (h % 4) * 4 + d4 % 4)] = row[d4];
    }
  }
  const uint32_t *const qc4 = pinned(qcBuf.data());
  const float *const qScale = pinned(qScaleBuf.data()), *const qOff = pinned(qOffBuf.data());

  // Keys: scores [kv head][head][padded]. Each block of positions is taken
  // for every KV head in turn: a page's heads lie side by side (abi.h), so
  // the cache is read in address order, one stream the hardware prefetchers
  // follow, rather than one 4 KB run per page and head.
  scoreBuf.resize(size_t(H * G * padded));
  float *const scores = pinned(scoreBuf.data());
  // An int8 cache's rows widened to bf16 codes per block (int8_rows_bf16.h):
  // the keys' scales multiply the scores, the values' the probabilities.
  constexpr bool int8 = Int8;
  alignas(64) thread_local uint16_t tWide[kValueBlock * 256];
  uint16_t *const wide = pinned(tWide);
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  for (int64_t jb = 0; jb < padded; jb += kKeyBlock) {
    const int64_t valid = std::min(kKeyBlock, count - jb);
    if (valid <= 0) {
      for (int64_t h = 0; h < H * G; ++h)
        _mm512_storeu_ps(scores + h * padded + jb, ninf);
      continue;
    }
    for (int64_t x = 0; x < H; ++x) {
      const int64_t kvh = kvh0 + x;
      for (int64_t r = jb + kAhead; r < jb + kAhead + kKeyBlock && r < count; ++r)
        prefetchLines(int8 ? static_cast<const void *>(l.kRow<int8_t>(rows[r], kvh))
                           : static_cast<const void *>(l.kRow<uint16_t>(rows[r], kvh)),
                      int8 ? dk : dk * 2);
      const uint16_t *kr[kKeyBlock];
      alignas(64) float kScales[kKeyBlock];
      if (int8Keys) {
        const int8_t *kr8[kKeyBlock];
        for (int r = 0; r < kKeyBlock; ++r) {
          const int64_t row = rows[std::min(jb + r, last)]; // the tail repeats the last
          kr8[r] = l.kRow<int8_t>(row, kvh);
          kScales[r] = l.kScaleOf<int8_t>(row, kvh);
        }
        const __m512 ks = _mm512_load_ps(kScales);
        for (int64_t h0 = x * G; h0 < (x + 1) * G; h0 += 4) {
          __m512 s4[4];
          keyScores4Int8(qc4 + h0 * (dk / 4), dk / 16, kr8, s4);
#pragma GCC unroll 4
          for (int u = 0; u < 4; ++u) {
            const __m512 sums = _mm512_mul_ps(
                _mm512_mul_ps(_mm512_sub_ps(s4[u], _mm512_set1_ps(qOff[h0 + u])),
                              _mm512_set1_ps(qScale[h0 + u])),
                ks);
            _mm512_storeu_ps(scores + (h0 + u) * padded + jb,
                             _mm512_mask_mov_ps(ninf, tailMask(valid), sums));
          }
        }
        continue;
      }
      for (int r = 0; r < kKeyBlock; ++r) {
        const int64_t row = rows[std::min(jb + r, last)]; // the tail repeats the last
        if (int8) {
          int8RowToBf16(l.kRow<int8_t>(row, kvh), wide + r * dk, dk);
          kScales[r] = l.kScaleOf<int8_t>(row, kvh);
          kr[r] = wide + r * dk;
        } else {
          kr[r] = l.kRow<uint16_t>(row, kvh);
        }
      }
      for (int64_t h0 = x * G; four && h0 < (x + 1) * G; h0 += 4) {
        __m512 s4[4];
        keyScores4(q4 + h0 * kp, dk / 8, kr, s4);
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) {
          const __m512 sums = int8 ? _mm512_mul_ps(s4[u], _mm512_load_ps(kScales)) : s4[u];
          _mm512_storeu_ps(scores + (h0 + u) * padded + jb,
                           _mm512_mask_mov_ps(ninf, tailMask(valid), sums));
        }
      }
      for (int64_t h = x * G; !four && h < (x + 1) * G; ++h) {
        const uint32_t *qh = &qs[size_t(h * kp)];
        __m512 acc[kKeyBlock];
#pragma GCC unroll 16
        for (int r = 0; r < kKeyBlock; ++r)
          acc[r] = _mm512_setzero_ps();
        for (int64_t d = 0; d < dk; d += 32) {
          const __m512bh qv = (__m512bh)_mm512_loadu_si512(qh + d / 2);
#pragma GCC unroll 16
          for (int r = 0; r < kKeyBlock; ++r)
            acc[r] = _mm512_dpbf16_ps(acc[r], qv, (__m512bh)_mm512_loadu_si512(kr[r] + d));
        }
        const __m512 sums =
            int8 ? _mm512_mul_ps(hsum16(acc), _mm512_load_ps(kScales)) : hsum16(acc);
        _mm512_storeu_ps(scores + h * padded + jb, _mm512_mask_mov_ps(ninf, tailMask(valid), sums));
      }
    }
  }

  // Softmax per head: probabilities as bf16 position pairs, [head][padded /
  // 2] (int8 values: uint8 quads, [head][padded / 4] in the same rows).
  const int64_t pairStride = padded / 2;
  pairBuf.resize(size_t(H * G * pairStride));
  sumBuf.resize(size_t(H * G));
  maxBuf.resize(size_t(H * G));
  uint32_t *const pairsAll = pinned(pairBuf.data());
  float *const sums = pinned(sumBuf.data()), *const maxima = pinned(maxBuf.data());
  thread_local std::vector<float> vScaleBuf; // int8: [kv head][padded], 1 past the end
  if (int8) {
    vScaleBuf.assign(size_t(H * padded), 1.0f);
    for (int64_t x = 0; x < H; ++x)
      for (int64_t j = 0; j < count; ++j)
        vScaleBuf[size_t(x * padded + j)] = l.vScaleOf<int8_t>(rows[j], kvh0 + x);
  }
  const float *const vScales = pinned(vScaleBuf.data());
  thread_local std::vector<float> blockScaleBuf; // int8 values: [head][value block]
  if (int8Values)
    blockScaleBuf.resize(size_t(H * G * (padded / kValueBlock)));
  float *const blockScales = pinned(blockScaleBuf.data());
  for (int64_t h = 0; h < H * G; ++h) {
    float *s = scores + h * padded;
    const float *vs = int8 ? vScales + (h / G) * padded : nullptr; // no offset on a null base
    __m512 vmax = ninf;
    for (int64_t j = 0; j < padded; j += 16)
      vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(s + j));
    const float m = _mm512_reduce_max_ps(vmax);
    const __m512 vm = _mm512_set1_ps(m);
    __m512 vsum = _mm512_setzero_ps();
    // int8 values: per value block, the probabilities times their rows'
    // scales as uint8 codes with the block's scale (valueQuads); the sum
    // keeps the plain ones.
    for (int64_t j = 0; int8Values && j < padded; j += kValueBlock) {
      __m512 w[4], wmax = _mm512_setzero_ps();
#pragma GCC unroll 4
      for (int y = 0; y < 4; ++y) {
        const __m512 e = expForBf16(_mm512_sub_ps(_mm512_loadu_ps(s + j + 16 * y), vm));
        vsum = _mm512_add_ps(vsum, e);
        w[y] = _mm512_mul_ps(e, _mm512_loadu_ps(vs + j + 16 * y));
        wmax = _mm512_max_ps(wmax, w[y]);
      }
      const float top = _mm512_reduce_max_ps(wmax);
      _mm512_storeu_si512(&pairsAll[size_t(h * pairStride + j / 4)],
                          probabilityCodes64(w, codeFactor(top)));
      blockScales[size_t(h * (padded / kValueBlock) + j / kValueBlock)] = top / 255.0f;
    }
    for (int64_t j = 0; !int8Values && j < padded; j += 32) {
      const __m512 e0 = expForBf16(_mm512_sub_ps(_mm512_loadu_ps(s + j), vm));
      const __m512 e1 = expForBf16(_mm512_sub_ps(_mm512_loadu_ps(s + j + 16), vm));
      vsum = _mm512_add_ps(vsum, _mm512_add_ps(e0, e1));
      // int8 values: weighted by their rows' scales; the sum keeps the plain ones.
      const __m512bh p =
          int8 ? _mm512_cvtne2ps_pbh(_mm512_mul_ps(e1, _mm512_loadu_ps(vs + j + 16)),
                                     _mm512_mul_ps(e0, _mm512_loadu_ps(vs + j)))
               : _mm512_cvtne2ps_pbh(e1, e0);
      _mm512_storeu_si512(&pairsAll[size_t(h * pairStride + j / 2)], (__m512i)p);
    }
    maxima[size_t(h)] = m;
    sums[size_t(h)] = _mm512_reduce_add_ps(vsum);
  }

  // Values, kValueBlock positions at a time, every KV head in turn (address
  // order, as the keys); each head's next block is prefetched during its
  // first pass over this one.
  accBuf.assign(size_t(H * G * dv), 0.0f);
  float *const accAll = pinned(accBuf.data());
  int hb = 1, nch = 2;
  const ValuePassFn pass = pickValuePass(G, dv, hb, nch);
  alignas(64) thread_local uint32_t tQuads[kValueBlock / 4 * 256];
  uint32_t *const vQuads = pinned(tQuads);
  for (int64_t jb = 0; int8Values && jb < count; jb += kValueBlock) {
    const int64_t next = jb + kValueBlock, nextCount = std::clamp(count - next, int64_t(0), kValueBlock);
    for (int64_t x = 0; x < H; ++x) {
      const int64_t kvh = kvh0 + x;
      for (int64_t i = 0; i < nextCount; ++i)
        prefetchLines(l.vRow<int8_t>(rows[next + i], kvh), dv);
      for (int64_t a = 0; a < kValueBlock / 4; ++a) {
        const int64_t p = jb + 4 * quadOfSlot(a);
        const int8_t *r[4];
        for (int i = 0; i < 4; ++i)
          r[i] = l.vRow<int8_t>(rows[std::min(p + i, last)], kvh); // the tail repeats the last
        for (int64_t c = 0; c < dv; c += 64)
          packValueQuad(r[0] + c, r[1] + c, r[2] + c, r[3] + c, ~__mmask64(0),
                        &vQuads[a * dv + c]);
      }
      for (int64_t h0 = 0; h0 < G; h0 += 4)
        for (int64_t c0 = 0; c0 < dv / 16; c0 += 4)
          valueQuads(pairsAll + (x * G + h0) * pairStride + jb / 4, pairStride,
                     blockScales + (x * G + h0) * (padded / kValueBlock) + jb / kValueBlock,
                     padded / kValueBlock, vQuads, dv, c0, accAll + (x * G + h0) * dv);
    }
  }
  for (int64_t jb = 0; !int8Values && jb < count; jb += kValueBlock) {
    const int64_t pairsIn = (std::min(kValueBlock, count - jb) + 1) / 2;
    const int64_t next = jb + kValueBlock, nextCount = std::clamp(count - next, int64_t(0), kValueBlock);
    for (int64_t x = 0; x < H; ++x) {
      const int64_t kvh = kvh0 + x;
      const uint16_t *vr[kValueBlock];
      const void *prefetch[kValueBlock];
      for (int64_t i = 0; i < 2 * pairsIn; ++i) {
        const int64_t row = rows[std::min(jb + i, last)]; // the tail repeats the last
        if (int8) {
          int8RowToBf16(l.vRow<int8_t>(row, kvh), wide + i * dv, dv);
          vr[i] = wide + i * dv;
        } else {
          vr[i] = l.vRow<uint16_t>(row, kvh);
        }
      }
      for (int64_t i = 0; i < nextCount; ++i)
        prefetch[i] = int8 ? static_cast<const void *>(l.vRow<int8_t>(rows[next + i], kvh))
                           : static_cast<const void *>(l.vRow<uint16_t>(rows[next + i], kvh));
      bool first = true;
      for (int64_t h0 = 0; h0 < G; h0 += hb)
        for (int64_t c0 = 0; c0 < dv / 16; c0 += nch) {
          pass(G, dv, vr, pairsIn, pairsAll + x * G * pairStride, pairStride, jb / 2, h0, c0,
               accAll + x * G * dv, prefetch, first ? nextCount : 0, int8 ? dv : 2 * dv);
          first = false;
        }
    }
  }

  // Un-permute each 32 dims: low lanes 4b..4b+3 hold dims 8b..8b+3, high
  // lanes dims 8b+4..8b+7.
  const __m512i firstHalf = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i secondHalf =
      _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  const int64_t dvPad = splits ? kvSplitFloats(l) / G - 2 : dv;
  for (int64_t x = 0; x < H; ++x) {
    float *partial = splits ? splits[x].partial : nullptr;
    for (int64_t g = 0; g < G; ++g) {
      const int64_t h = x * G + g;
      const float *o = &accAll[size_t(h * dv)];
      float *dst = partial ? partial + g * dvPad : out + (t * numHeads + kvh0 * G + h) * dv;
      const __m512 factor = _mm512_set1_ps(partial ? 1.0f : 1.0f / sums[size_t(h)]);
      for (int64_t c = 0; int8Values && c < dv; c += 64) // valueQuads' order
        for (int k = 0; k < 4; ++k)
          _mm512_storeu_ps(dst + c + 16 * k, unpermutedQuads(o + c, k, factor));
      for (int64_t c = 0; !int8Values && c < dv; c += 32) {
        const __m512 lo = _mm512_loadu_ps(o + c), hi = _mm512_loadu_ps(o + c + 16);
        _mm512_storeu_ps(dst + c,
                         _mm512_mul_ps(_mm512_permutex2var_ps(lo, firstHalf, hi), factor));
        _mm512_storeu_ps(dst + c + 16,
                         _mm512_mul_ps(_mm512_permutex2var_ps(lo, secondHalf, hi), factor));
      }
    }
    if (partial) { // then G maxima, G sums (mergeSplits, attention.cpp)
      std::copy(maxima + x * G, maxima + (x + 1) * G, partial + G * dvPad);
      std::copy(sums + x * G, sums + (x + 1) * G, partial + G * dvPad + G);
    }
  }
}

} // namespace

void attendDecodeBf16(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                      int64_t numHeads, float scale, int64_t t, int64_t kvh0, int64_t kvhCount,
                      float *out, const KvSplit *splits) {
  if (l.int8)
    attendDecodeBf16Cache<true>(step, l, q, numHeads, scale, t, kvh0, kvhCount, out, splits);
  else
    attendDecodeBf16Cache<false>(step, l, q, numHeads, scale, t, kvh0, kvhCount, out, splits);
}

} // namespace hyrt::cpu

#pragma GCC pop_options
