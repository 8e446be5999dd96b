// DeepSeek MLA in the plain form for long extend chunks (the absorbed
// kernel's alternative; hyc-cpu-select-lowering-strategy sets the chunk
// length from which hyrt_cpu_mla_attention takes it): every cached latent
// the chunk sees is expanded once into per-head keys [k_nope | k_pe] and
// values (W_UK and W_UV times the latent, 4x4 dot tiles), then the heads
// attend as multi-head attention on the row-blocked kernel over a one-page
// view of the expanded rows. AVX-512 hosts, and AVX2 + FMA ones (the
// expansion and the row-blocked kernel in their AVX2 forms).
#include "mla_attention.h"

#include "../scratch_array.h"
#include "../thread_pool.h"

#include "../../reference/bf16.h"
#include "../../reference/kv_int8.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace hyrt::cpu {

namespace {

bool expandsOnBf16Dots(const LayerView &l, const Mla &m, bool bf16W) {
  return l.bf16 && bf16W && m.rank % 32 == 0 && hostHasAvx512Bf16() && !fp32AttentionOnly();
}

/// The expanded rows' view for the bf16 dot-product attention kernel.
LayerView bf16ExpandedView(const Mla &m, int64_t n) {
  return LayerView{m.heads, m.nope + m.rope, m.v, n, 1, nullptr, nullptr, true};
}

} // namespace

bool plainRunsOnBf16Dots(const LayerView &l, const Mla &m, bool bf16W) {
  return expandsOnBf16Dots(l, m, bf16W) && bf16DotsApply(bf16ExpandedView(m, 1));
}

/// The plain form for an extend chunk of one sequence at consecutive
/// positions: every cached latent the chunk sees is expanded once into
/// per-head keys [k_nope | k_pe] and values (W_UK, W_UV times the latent),
/// then the heads attend as multi-head attention on the row-blocked kernel
/// (a one-page view of the expanded rows). Cheaper than the absorbed form
/// for long chunks (see hyc-global-absorb-mla); false when it does not
/// apply (the caller runs the absorbed form).
bool plainExtend(const hyrt_step_v0 *step, const LayerView &l, const Mla &m, const float *qNope,
                 const float *qPe, const void *wKvB, bool bf16W, float *out, int threads) {
  const int64_t T = step->num_tokens, H = m.heads, R = m.rank, dk = m.nope + m.rope;
  const int64_t D = R + m.rope;
  // AVX-512, else the AVX2 forms of the expansion and of the row-blocked
  // kernel (which takes the expanded heads' shape, or nothing runs here).
  const bool avx512 = hostHasAvx512BwVl();
  const LayerView fp32View{H, dk, m.v, 1, 1, nullptr, nullptr, false};
  if (!avx512 && !rowsAvx2Apply(fp32View))
    return false;
  if (step->num_seqs != 1 || R % (avx512 ? 16 : 8) != 0 || m.v > 128 || dk > 1024 || T < 1)
    return false;
  for (int64_t t = 1; t < T; ++t)
    if (step->positions[t] != step->positions[t - 1] + 1 || step->token_seq[t] != step->token_seq[0])
      return false;
  const int64_t n = int64_t(step->positions[T - 1]) + 1;
  // bf16 latents and bf16 kv_b: the expansion takes vdpbf16ps on the stored
  // pairs (mla_expand_bf16_avx512.cpp). A bf16 cache whose expanded rows
  // take the bf16 attention kernel (DeepSeek's dk 192, dv 128): those rows
  // are rounded to bf16, as a dense model's bf16 cache stores its keys and
  // values; with both, the expansion rounds its sums as it stores them and
  // no fp32 copy of the expanded rows exists (at 128 heads and 8192
  // positions that copy was 1.3 GB).
  const bool bf16Expand = expandsOnBf16Dots(l, m, bf16W);
  const LayerView bf16View = bf16ExpandedView(m, n);
  const bool bf16Attend = l.bf16 && bf16DotsApply(bf16View);
  const bool direct = bf16Expand && bf16Attend;
  // The calling thread's scratch, rewritten on every call (scratch_array.h:
  // growing it neither zero-fills nor copies).
  thread_local ScratchArray<float> callerLat, callerK, callerV, callerQ;
  thread_local ScratchArray<uint16_t> callerLatH, callerKh, callerVh;
  float *const qc = callerQ.get(size_t(T * H * dk));
  uint16_t *const kh = bf16Attend ? callerKh.get(size_t(H * n * dk)) : nullptr;
  uint16_t *const vh = bf16Attend ? callerVh.get(size_t(H * n * m.v)) : nullptr;
  float *const lat = direct ? nullptr : callerLat.get(size_t(n * D));
  float *const kc = direct ? nullptr : callerK.get(size_t(H * n * dk));
  float *const vc = direct ? nullptr : callerV.get(size_t(H * n * m.v));
  uint16_t *const latH = bf16Expand ? callerLatH.get(size_t(n * D)) : nullptr;
  // Latent rows: with bf16Expand copied as stored ([c | k_pe] bf16), k_pe
  // also widened to fp32 unless direct; else widened to fp32 (int8 rows
  // dequantized: code x the row's scale).
  parallelRows(n, D, [&](int64_t j) {
    const int64_t row = cacheRow(step, l, 0, j); // every token is of one sequence
    if (bf16Expand) {
      const uint16_t *src = l.kRow<uint16_t>(row, 0);
      std::memcpy(latH + j * D, src, sizeof(uint16_t) * size_t(D));
      if (!direct)
        for (int64_t i = R; i < D; ++i)
          lat[j * D + i] = hyrt::fromBf16(src[i]);
      return;
    }
    float *dst = lat + j * D;
    if (l.int8) {
      const int8_t *src = l.kRow<int8_t>(row, 0);
      const float rowScale = l.kScaleOf<int8_t>(row, 0);
      for (int64_t i = 0; i < D; ++i)
        dst[i] = hyrt::dequantKv(src[i], rowScale);
    } else if (l.bf16) {
      const uint16_t *src = l.kRow<uint16_t>(row, 0);
      for (int64_t i = 0; i < D; ++i)
        dst[i] = hyrt::fromBf16(src[i]);
    } else {
      std::memcpy(dst, l.kRow<float>(row, 0), sizeof(float) * size_t(D));
    }
  });
  // Expansion by (head, block of 64 positions), head-major; k_pe appended
  // to each key (bf16 as stored, or widened).
  constexpr int64_t kRows = 64;
  const int64_t rowBlocks = (n + kRows - 1) / kRows;
  hyrt::cpu::parallelForBalanced(H * rowBlocks, threads, [&](int64_t i) {
    const int64_t h = i / rowBlocks, j0 = (i % rowBlocks) * kRows, nb = std::min(kRows, n - j0);
    if (direct) {
      uint16_t *k = kh + (h * n + j0) * dk;
      expandLatentsBf16Dots(m, latH + j0 * D, D, nb, static_cast<const uint16_t *>(wKvB),
                            h, k, dk, vh + (h * n + j0) * m.v, m.v);
      for (int64_t j = 0; j < nb; ++j)
        std::memcpy(k + j * dk + m.nope, latH + (j0 + j) * D + R,
                    sizeof(uint16_t) * size_t(m.rope));
      return;
    }
    float *k = kc + (h * n + j0) * dk;
    if (bf16Expand)
      expandLatentsBf16Dots(m, latH + j0 * D, D, nb, static_cast<const uint16_t *>(wKvB),
                            h, k, dk, vc + (h * n + j0) * m.v, m.v);
    else if (avx512)
      expandLatentsAvx512(m, lat + j0 * D, D, nb, wKvB, bf16W, h, k, dk,
                          vc + (h * n + j0) * m.v, m.v);
    else
      expandLatentsAvx2(m, lat + j0 * D, D, nb, wKvB, bf16W, h, k, dk, vc + (h * n + j0) * m.v,
                        m.v);
    for (int64_t j = 0; j < nb; ++j)
      std::memcpy(k + j * dk + m.nope, lat + (j0 + j) * D + R,
                  sizeof(float) * size_t(m.rope));
  });
  parallelRows(T, H * dk, [&](int64_t t) {
    for (int64_t h = 0; h < H; ++h) {
      float *dst = qc + (t * H + h) * dk;
      std::memcpy(dst, qNope + (t * H + h) * m.nope, sizeof(float) * size_t(m.nope));
      std::memcpy(dst + m.nope, qPe + (t * H + h) * m.rope, sizeof(float) * size_t(m.rope));
    }
  });
  const int32_t page0 = 0;
  std::vector<int32_t> seq0(size_t(T), 0);
  const int32_t start = 0, len = int32_t(T), prefix = int32_t(n - T);
  const hyrt_step_v0 one{T,      1,       step->tokens, step->positions, seq0.data(), &start,
                         &len,   &prefix, &page0,       1,               nullptr,     0,
                         nullptr};
  // Multi-head attention over a one-page view: position j of head h is row
  // j + h * n of the expanded keys and values. On the bf16 dot-product
  // kernel: 3.0-3.4x the fp32 kernel's rate on dense shapes
  // (bench/README.md "Long prompts").
  if (bf16Attend) {
    if (!direct) // fp32 expansion: rounded to bf16 here
      parallelRows(H * n, dk + m.v, [&](int64_t r) {
        for (int64_t i = 0; i < dk; ++i)
          kh[r * dk + i] = toBf16(kc[r * dk + i]);
        for (int64_t i = 0; i < m.v; ++i)
          vh[r * m.v + i] = toBf16(vc[r * m.v + i]);
      });
    LayerView view = bf16View;
    view.k = kh;
    view.v = vh;
    constexpr int64_t kBf16Block = 32; // attention.cpp's kBf16TokenBlock
    const int64_t blocksOf = (T + kBf16Block - 1) / kBf16Block;
    parallelForDynamic(blocksOf * H, threads, [&](int, int64_t i) {
      const int64_t h = i % H, t0 = (i / H) * kBf16Block, tq = std::min(kBf16Block, T - t0);
      attendBf16Dots(&one, view, qc, H, m.scale, t0, tq, h, out);
    });
    return true;
  }
  const LayerView view{H, dk, m.v, n, 1, kc, vc, false};
  // 64 tokens per item: each head's expanded rows are read once per 64
  // tokens (they outgrow the caches at long contexts; 8 per item ran 30%
  // slower at 4096 positions).
  constexpr int64_t kTokenBlock = 64;
  const int64_t tokenBlocks = (T + kTokenBlock - 1) / kTokenBlock;
  parallelForDynamic(tokenBlocks * H, threads, [&](int, int64_t i) {
    const int64_t h = i % H, t0 = (i / H) * kTokenBlock, tq = std::min(kTokenBlock, T - t0);
    thread_local std::vector<float> scores;
    scores.resize(size_t(tq * (int64_t(step->positions[t0]) + tq + 16)));
    attendRows<float>(&one, view, qc, H, m.scale, t0, tq, h, scores.data(), out);
  });
  return true;
}

} // namespace hyrt::cpu
