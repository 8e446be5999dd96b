// DeepSeek multi-head latent attention on optimized artifacts: the
// absorbed form (hyc-global-absorb-mla decides it; the reference kernel
// computes the plain form and is the semantic baseline).
//
// The plain form re-expands every cached latent into per-head keys and
// values on every step: O(positions x heads x (nope + v) x rank) per token.
// Absorbed, W_UK is folded into the query and W_UV into the output:
//   q_lat[h]  = W_UK[h]^T q_nope[h]                      (rank floats)
//   s[h][j]   = (q_lat[h] . c[j] + q_pe[h] . k_pe[j]) * scale
//   o_lat[h]  = softmax_j(s[h]) . c[j]                   (rank floats)
//   out[h]    = W_UV[h] o_lat[h]                         (v floats)
// which is multi-query attention over the cache rows themselves: each
// cached row [c | k_pe] is read once per block for all heads, as the key
// and (its first `rank` elements) as the value. kv_b = [H][nope + v][rank]
// (fp32, or bf16 rows under a quantized scheme) serves both folds in its
// stored layout (W_UK[h] = rows 0..nope-1 of head h, W_UV[h] = rows
// nope..nope+v-1).
//
// Work: the query fold by (head, block of 8 tokens), attention by (token
// block or decode token and KV split) with an online softmax in fp32, then
// the split merge and the output fold by (head, block of 8 tokens); all on
// the thread pool. AVX-512 bodies in mla_attention_avx512.cpp, AVX2 + FMA
// ones in mla_attention_avx2.cpp, portable ones here; a long extend chunk
// of one sequence takes the plain form
// instead when that costs less (mla_plain.cpp, mlaPlainIsCheaper).
#include "hyrt/cpu_kernels.h"

#include "attention_group.h"
#include "../host_isa.h"
#include "mla_attention.h"
#include "../portable_vec.h"
#include "../thread_pool.h"

#include "../../reference/bf16.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <cmath>
#include <vector>

namespace {

using hyrt::cpu::LayerView;
using hyrt::cpu::kMinSplitRows;
using hyrt::cpu::layerView;
using hyrt::cpu::Mla;

using hyrt::cpu::axpy;
using hyrt::cpu::dot;

/// Positions per block of the online softmax: a block's rows (32 x 1152
/// bytes in bf16 for DeepSeek's 576-element rows) stay in L1/L2 between
/// the score and the value pass.
constexpr int64_t kBlock = 32;

/// Token t's heads over cached positions [begin, end) into `part`.
template <typename T>
inline __attribute__((always_inline)) void
attendLatentBody(const hyrt_step_v0 *step, const LayerView &l, const Mla &m,
                 const float *qLat, const float *qPe, int64_t t, int64_t begin,
                 int64_t end, float *part) {
  const int64_t H = m.heads, R = m.rank;
  float *o = part, *mx = part + H * R, *sum = mx + H;
  std::fill(o, o + H * R, 0.0f);
  std::fill(mx, mx + H, -INFINITY);
  std::fill(sum, sum + H, 0.0f);
  const int32_t *blocks =
      step->block_tables + int64_t(step->token_seq[t]) * step->max_pages_per_seq;
  const T *rows[kBlock];
  float rowScale[kBlock]; // int8: each row's scale (1 otherwise)
  float s[16 * kBlock];
  float *sc = H <= 16 ? s : nullptr;
  std::vector<float> big;
  if (!sc) {
    big.resize(size_t(H * kBlock));
    sc = big.data();
  }
  for (int64_t j0 = begin; j0 < end; j0 += kBlock) {
    const int64_t nb = std::min(kBlock, end - j0);
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t pos = j0 + b;
      const int64_t row = int64_t(blocks[pos / l.page]) * l.page + pos % l.page;
      rows[b] = l.kRow<T>(row, 0);
      rowScale[b] = l.kScaleOf<T>(row, 0);
    }
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t h = 0; h < H; ++h)
        sc[h * kBlock + b] =
            (dot(qLat + h * R, rows[b], R) + dot(qPe + h * m.rope, rows[b] + R, m.rope)) *
            (m.scale * rowScale[b]);
    for (int64_t h = 0; h < H; ++h) {
      float *sh = sc + h * kBlock;
      float blockMax = mx[h];
      for (int64_t b = 0; b < nb; ++b)
        blockMax = sh[b] > blockMax ? sh[b] : blockMax;
      // exp(-inf - -inf) is NaN: a head with no finite score yet keeps 1.
      const float alpha = mx[h] == blockMax ? 1.0f : std::exp(mx[h] - blockMax);
      float blockSum = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        sh[b] = std::exp(sh[b] - blockMax);
        blockSum += sh[b];
      }
      sum[h] = sum[h] * alpha + blockSum;
      mx[h] = blockMax;
      float *oh = o + h * R;
      if (alpha != 1.0f)
        for (int64_t r = 0; r < R; ++r)
          oh[r] *= alpha;
      for (int64_t b = 0; b < nb; ++b)
        axpy(sh[b] * rowScale[b], rows[b], oh, R);
    }
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void
attendLatentF32(const hyrt_step_v0 *step, const LayerView &l, const Mla &m,
                const float *qLat, const float *qPe, int64_t t, int64_t begin, int64_t end,
                float *part) {
  attendLatentBody<float>(step, l, m, qLat, qPe, t, begin, end, part);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void
attendLatentBf16(const hyrt_step_v0 *step, const LayerView &l, const Mla &m,
                 const float *qLat, const float *qPe, int64_t t, int64_t begin,
                 int64_t end, float *part) {
  attendLatentBody<uint16_t>(step, l, m, qLat, qPe, t, begin, end, part);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void
attendLatentInt8(const hyrt_step_v0 *step, const LayerView &l, const Mla &m,
                 const float *qLat, const float *qPe, int64_t t, int64_t begin,
                 int64_t end, float *part) {
  attendLatentBody<int8_t>(step, l, m, qLat, qPe, t, begin, end, part);
}

/// q_lat of tokens [t0, t1) for head h: sum over d of q_nope[t][h][d] times
/// row d of W_UK[h] (kv_b of W = float or bf16), each weight row read once
/// for the token block.
template <typename W>
inline __attribute__((always_inline)) void
foldQueryBody(const Mla &m, const float *qNope, const W *wKvB, int64_t h, int64_t t0,
              int64_t t1, float *qLat) {
  const int64_t R = m.rank;
  const W *wh = wKvB + h * (m.nope + m.v) * R;
  for (int64_t t = t0; t < t1; ++t)
    std::fill(qLat + (t * m.heads + h) * R, qLat + (t * m.heads + h + 1) * R, 0.0f);
  for (int64_t d = 0; d < m.nope; ++d)
    for (int64_t t = t0; t < t1; ++t)
      axpy(qNope[(t * m.heads + h) * m.nope + d], wh + d * R, qLat + (t * m.heads + h) * R, R);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void
foldQuery(const Mla &m, const float *qNope, const void *wKvB, bool bf16, int64_t h, int64_t t0,
          int64_t t1, float *qLat) {
  if (bf16)
    foldQueryBody(m, qNope, static_cast<const uint16_t *>(wKvB), h, t0, t1, qLat);
  else
    foldQueryBody(m, qNope, static_cast<const float *>(wKvB), h, t0, t1, qLat);
}

/// Merges token t's splits for head h into oLat (unnormalized) and
/// returns 1 / the softmax sum.
float mergeHead(const Mla &m, const float *parts, int64_t splits, int64_t h, float *oLat) {
  const int64_t R = m.rank, H = m.heads, stride = hyrt::cpu::mlaPartialFloats(m);
  float mMax = -INFINITY;
  for (int64_t s = 0; s < splits; ++s)
    mMax = std::max(mMax, parts[s * stride + H * R + h]);
  float sum = 0.0f;
  for (int64_t s = 0; s < splits; ++s) {
    const float *p = parts + s * stride;
    const float w = splits == 1 ? 1.0f : std::exp(p[H * R + h] - mMax);
    sum += w * p[H * R + H + h];
    if (s == 0)
      for (int64_t r = 0; r < R; ++r)
        oLat[r] = w * p[h * R + r];
    else
      for (int64_t r = 0; r < R; ++r)
        oLat[r] += w * p[h * R + r];
  }
  return 1.0f / sum;
}

/// out[t][h] = W_UV[h] oLat * inv (portable; kv_b of W = float or bf16).
template <typename W>
inline __attribute__((always_inline)) void
foldOutputBody(const Mla &m, const float *oLat, float inv, const W *wKvB, int64_t t, int64_t h,
               float *out) {
  const int64_t R = m.rank;
  const W *wv = wKvB + (h * (m.nope + m.v) + m.nope) * R;
  float *o = out + (t * m.heads + h) * m.v;
  for (int64_t d = 0; d < m.v; ++d)
    o[d] = dot(oLat, wv + d * R, R) * inv;
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void
foldOutput(const Mla &m, const float *oLat, float inv, const void *wKvB, bool bf16, int64_t t,
           int64_t h, float *out) {
  if (bf16)
    foldOutputBody(m, oLat, inv, static_cast<const uint16_t *>(wKvB), t, h, out);
  else
    foldOutputBody(m, oLat, inv, static_cast<const float *>(wKvB), t, h, out);
}

/// Heads x cached positions from which a decode token's absorbed attention
/// runs on bf16 dot products (hyc_attention_bench, one layer, 2 threads:
/// 16 heads are faster on the fp32 kernel up to ~2048 positions and on bf16
/// from ~4096; 128 heads on bf16 from 512).
constexpr int64_t kBf16DecodeMinWork = 64 * 1024;

/// A work item: tokens [t0, t0 + count) of one sequence at consecutive
/// positions (count 1 for a split decode token) over positions
/// [begin, end) (end < 0: each token's own prefix); partials from `slot`.
struct Item {
  int64_t t0, count, begin, end, slot;
};

} // namespace

extern "C" void hyrt_cpu_mla_attention(const hyrt_kv_cache_v0 *kv, const hyrt_step_v0 *step,
                                       int64_t layer, const float *q_nope, const float *q_pe,
                                       const void *w_kv_b, int32_t kv_b_bf16, int64_t num_heads,
                                       int64_t nope_dim, int64_t rope_dim, int64_t v_dim,
                                       int64_t kv_lora_rank, float scale, float *out,
                                       int64_t kv_splits, int64_t plain_form,
                                       int64_t plain_form_fp32) {
  const Mla m{num_heads, nope_dim, rope_dim, v_dim, kv_lora_rank, scale};
  const LayerView l = layerView(kv, layer, 1);
  const int64_t T = step->num_tokens, H = num_heads, R = kv_lora_rank;
  const bool avx512 = hyrt::cpu::hostHasAvx512BwVl();
  // The AVX2 + FMA blocks where AVX-512 does not run (tests pin the
  // portable bodies with perTokenAttentionOnly).
  const bool avx2 = hyrt::cpu::avx2AttentionAllowed();
  // The caller's buffers (captured by reference: a worker would otherwise
  // see its own thread_local instances).
  thread_local std::vector<float> callerQLat, callerParts;
  thread_local std::vector<Item> callerItems;
  thread_local std::vector<int64_t> callerFirst;
  std::vector<float> &qLat = callerQLat, &parts = callerParts;
  std::vector<Item> &items = callerItems;
  std::vector<int64_t> &first = callerFirst; // first partial slot of each token
  qLat.resize(size_t(T * H * R));

  int64_t positions = 0;
  for (int64_t t = 0; t < T; ++t)
    positions += int64_t(step->positions[t]) + 1;
  const int threads = hyrt::cpu::threadsForAttention(positions * H * (2 * R + rope_dim) +
                                                     T * H * R * (nope_dim + v_dim));

  // An extend chunk takes the plain form where that costs less, weighed by
  // the schedule for the kernels it would run on here.
  const int64_t weight =
      hyrt::cpu::plainRunsOnBf16Dots(l, m, kv_b_bf16 != 0) ? plain_form : plain_form_fp32;
  if (hyrt::cpu::mlaPlainIsCheaper(m, step, weight) &&
      hyrt::cpu::plainExtend(step, l, m, q_nope, q_pe, w_kv_b, kv_b_bf16 != 0, out, threads))
    return;

  // Folds by (head, block of 8 tokens): each weight row once per block.
  constexpr int64_t kFoldBlock = 8;
  const int64_t foldBlocks = (T + kFoldBlock - 1) / kFoldBlock;
  // Items are head-major: a thread's contiguous range reuses one head's
  // weights (256 KB at DeepSeek's shapes, L2-resident) across token blocks.
  hyrt::cpu::parallelForBalanced(H * foldBlocks, threads, [&](int64_t i) {
    const int64_t h = i / foldBlocks, t0 = (i % foldBlocks) * kFoldBlock,
                  t1 = std::min(T, t0 + kFoldBlock);
    if (avx512)
      hyrt::cpu::foldQueryAvx512(m, q_nope, w_kv_b, kv_b_bf16 != 0, h, t0, t1, qLat.data());
    else
      foldQuery(m, q_nope, w_kv_b, kv_b_bf16 != 0, h, t0, t1, qLat.data());
  });

  // Extend tokens in blocks (query rows = tokens x heads, up to 64: each
  // cached row is widened once per block); decode tokens alone, their
  // positions split into up to kv_splits ranges of >= kMinSplitRows.
  const int64_t tokenBlock = std::max<int64_t>(1, std::min<int64_t>(4, 64 / H));
  items.clear();
  first.assign(size_t(T + 1), 0);
  int64_t slots = 0;
  for (int64_t t = 0; t < T;) {
    int64_t count = 1;
    while (count < tokenBlock && t + count < T &&
           step->token_seq[t + count] == step->token_seq[t] &&
           step->positions[t + count] == step->positions[t + count - 1] + 1)
      ++count;
    const int64_t n = int64_t(step->positions[t]) + 1;
    const int64_t splits =
        count == 1 ? std::max<int64_t>(1, std::min(kv_splits, n / kMinSplitRows)) : 1;
    for (int64_t u = 0; u < count; ++u)
      first[size_t(t + u)] = slots + u;
    if (splits == 1) {
      items.push_back({t, count, 0, -1, slots});
      slots += count;
    } else {
      for (int64_t s = 0; s < splits; ++s)
        items.push_back({t, 1, n * s / splits, n * (s + 1) / splits, slots + s});
      slots += splits;
    }
    t += count;
  }
  first[size_t(T)] = slots;
  const int64_t stride = hyrt::cpu::mlaPartialFloats(m);
  parts.resize(size_t(slots * stride));
  // Decode tokens over a bf16 cache on AVX-512 BF16 hosts, where the step
  // is compute-bound (heads x positions >= kBf16DecodeMinWork): the GQA
  // decode kernel on bf16 dot products (attention_decode_bf16_avx512.cpp)
  // with every head in one group over one KV head, keys the latent rows
  // [c | k_pe] and values their first rank elements, its split partials
  // laid out as this driver's ([H][R], H maxima, H sums). The fp32 kernel
  // below widens every cached element and multiplies on FMAs; below the
  // threshold (few heads, short contexts) it is as fast or faster
  // (hyc_attention_bench, bench/README.md "The eighth session"). Queries
  // [q_lat | q_pe] per (token, head), scaled and rounded to bf16 by the
  // kernel: the error bound is derived in mla_attention_test.cpp.
  const int64_t D = R + rope_dim;
  hyrt::cpu::LayerView lv = l;
  lv.dk = D, lv.dv = R, lv.v = l.k, lv.vStride = D, lv.group = H;
  const bool bf16Kernel = l.bf16 && hyrt::cpu::hostHasAvx512Bf16() && D % 32 == 0 &&
                          R % 32 == 0 && hyrt::cpu::kvSplitFloats(lv) == stride;
  auto onBf16Dots = [&](const Item &it) {
    return bf16Kernel && it.count == 1 &&
           H * (int64_t(step->positions[it.t0]) + 1) >= kBf16DecodeMinWork;
  };
  thread_local std::vector<float> callerQCat;
  std::vector<float> &qCat = callerQCat;
  if (bf16Kernel) {
    qCat.resize(size_t(T * H * D));
    for (const Item &it : items)
      if (onBf16Dots(it) && it.begin == 0) // a token's first split: once per token
        for (int64_t h = 0; h < H; ++h) {
          float *dst = qCat.data() + (it.t0 * H + h) * D;
          std::memcpy(dst, qLat.data() + (it.t0 * H + h) * R, sizeof(float) * size_t(R));
          std::memcpy(dst + R, q_pe + (it.t0 * H + h) * rope_dim,
                      sizeof(float) * size_t(rope_dim));
        }
  }
  hyrt::cpu::parallelForDynamic(int64_t(items.size()), threads, [&](int, int64_t i) {
    const Item &it = items[size_t(i)];
    float *part = parts.data() + it.slot * stride;
    const int64_t end = it.end < 0 ? INT64_MAX : it.end;
    if (onBf16Dots(it)) {
      const int64_t n = int64_t(step->positions[it.t0]) + 1;
      const hyrt::cpu::KvSplit split{it.begin, std::min(end, n), part};
      hyrt::cpu::attendDecodeBf16(step, lv, qCat.data(), H, m.scale, it.t0, 0, 1, nullptr,
                                  &split);
      return;
    }
    if (avx512 && hyrt::cpu::withRowType(l, [&](auto *type) {
          using T = std::remove_pointer_t<decltype(type)>;
          return hyrt::cpu::attendLatentAvx512<T>(step, l, m, qLat.data(), q_pe, it.t0,
                                                  it.count, it.begin, end, part);
        }))
      return;
    if (!avx512 && avx2 && hyrt::cpu::withRowType(l, [&](auto *type) {
          using T = std::remove_pointer_t<decltype(type)>;
          return hyrt::cpu::attendLatentAvx2<T>(step, l, m, qLat.data(), q_pe, it.t0, it.count,
                                                it.begin, end, part);
        }))
      return;
    for (int64_t u = 0; u < it.count; ++u) {
      const int64_t t = it.t0 + u;
      const float *ql = qLat.data() + t * H * R, *qp = q_pe + t * H * rope_dim;
      const int64_t e = it.end < 0 ? int64_t(step->positions[t]) + 1 : it.end;
      (l.int8   ? attendLatentInt8
       : l.bf16 ? attendLatentBf16
                : attendLatentF32)(step, l, m, ql, qp, t, it.begin, e, part + u * stride);
    }
  });

  // Split merge and the W_UV fold by (head, block of 8 tokens).
  hyrt::cpu::parallelForBalanced(H * foldBlocks, threads, [&](int64_t i) {
    const int64_t h = i / foldBlocks, t0 = (i % foldBlocks) * kFoldBlock,
                  t1 = std::min(T, t0 + kFoldBlock);
    thread_local std::vector<float> oLat;
    oLat.resize(size_t(kFoldBlock * R));
    float inv[kFoldBlock];
    for (int64_t t = t0; t < t1; ++t)
      inv[t - t0] = mergeHead(m, parts.data() + first[size_t(t)] * stride,
                              first[size_t(t + 1)] - first[size_t(t)], h,
                              oLat.data() + (t - t0) * R);
    if (avx512 && R % 16 == 0) { // the block reads whole 16-lane rows
      hyrt::cpu::foldOutputAvx512(m, oLat.data(), R, inv, w_kv_b, kv_b_bf16 != 0, h, t0, t1,
                                  out);
      return;
    }
    for (int64_t t = t0; t < t1; ++t)
      foldOutput(m, oLat.data() + (t - t0) * R, inv[t - t0], w_kv_b, kv_b_bf16 != 0, t, h, out);
  });
}

namespace hyrt::cpu {

bool mlaPlainIsCheaper(const Mla &m, const hyrt_step_v0 *step, int64_t weight) {
  if (weight == 0 || step->num_seqs != 1 || step->num_tokens < 1)
    return false;
  if (weight < 0)
    return true;
  const double T = double(step->num_tokens), n = double(step->positions[step->num_tokens - 1]) + 1;
  const double saved = double(2 * m.rank - m.nope - m.v);
  if (saved <= 0)
    return false;
  return double(weight) / 100.0 * (n - T) * double(m.rank) * double(m.nope + m.v) <
         T * (n - T / 2) * saved;
}

} // namespace hyrt::cpu
