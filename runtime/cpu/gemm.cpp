// Drivers of the generated brgemm kernels (see hyrt/cpu_kernels.h).
#include "elementwise.h"
#include "hyrt/cpu_kernels.h"
#include "hyrt/gemm_layout.h"
#include "hyrt/support/decode_streams.h"
#include "thread_pool.h"

#include "../reference/bf16.h"

#include <cmath>
#include <algorithm>
#include <cstring>
#include <vector>

namespace {

constexpr int64_t kPanel = 32;
constexpr int64_t kMaxBlockRows = 64;

/// codegen's BrgemmPostArgs: a_sum is read by the integer-code kernels only,
/// k_streams by the kernels whose few-row bodies have a two-stream form.
struct PostArgs {
  const float *bias;
  const float *a_scale;
  const float *b_scale;
  const int32_t *a_sum = nullptr;
  int64_t k_streams = hyrt::decodeStreams().streams;
};

int64_t roundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// Weight-scale groups along K: ceil(K / 128) for HYRT_GEMM_W8A8_G128 and
/// the FP8 schemes, 0 for every other scheme (one scale per output channel,
/// or none).
int64_t groupsOf(int32_t scheme, int64_t K) {
  return scheme == HYRT_GEMM_W8A8_G128 || hyrt_gemm_is_fp8(scheme)
             ? hyrt_gemm_activation_k(scheme, K) / HYRT_GEMM_GROUP_K
             : 0;
}

/// bf16 elements (and e4m3 bytes) of one FP8 block of a panel: K = 128 x 32.
constexpr int64_t kFp8BlockElems = HYRT_GEMM_GROUP_K * kPanel;

/// Bytes of one packed 32-column panel of K (codegen/pack.h layouts).
int64_t panelBytes(int32_t scheme, int64_t K) {
  switch (scheme) {
  case HYRT_GEMM_BF16:
  case HYRT_GEMM_F32_BF16:
    return (roundUp(K, 2) / 2) * kPanel * 2 * 2; // [K/2][32][2] bf16
  case HYRT_GEMM_W8A8:
    return (roundUp(K, 4) / 4) * kPanel * 4 + kPanel * 4; // + int32 comp[32]
  case HYRT_GEMM_W8A8_G128: // whole groups of K = 128, each with its comp
    return groupsOf(scheme, K) * panelBytes(HYRT_GEMM_W8A8, HYRT_GEMM_GROUP_K);
  case HYRT_GEMM_FP8:
  case HYRT_GEMM_FP8_F32:
  case HYRT_GEMM_FP8_FUSED: // one byte per element, whole blocks of K = 128
    return groupsOf(scheme, K) * kFp8BlockElems;
  default:
    if (hyrt_gemm_is_codes(scheme)) // codes with their scales, per group / super-block
      return hyrt_gemm_code_panel_bytes(scheme, K);
    return K * kPanel * 4; // [K][32] f32
  }
}

/// One GEMM's operands: A rows start at a + row * lda * aElem (a_scale
/// indexed by the same row), B is packed in 32-column panels.
struct GemmOperands {
  const void *a;
  int64_t lda, aElem;
  const float *aScale;
  const char *w;
  int64_t panelBytes;
  const float *bScale, *bias;
  float *out;
  int64_t N;
  hyrt_brgemm_fn kernel;
  int64_t mMax;
  /// Weight-scale groups along K for HYRT_GEMM_W8A8_G128 (then bScale is
  /// [N][groups] and `kernel` the K = 128 accumulating kernel) and FP8 (then
  /// bScale is [ceil(N/128)][groups] and `kernel` the K = 128 bf16 one); 0
  /// otherwise.
  int64_t groups = 0;
  int32_t scheme = HYRT_GEMM_F32;
  /// Integer-code schemes: each row's group sums, aSumStride per row.
  const int32_t *aSum = nullptr;
  int64_t aSumStride = 0;
};

/// Per-panel weight scales in the order the kernel reads them: [group][32]
/// (zero past the last column), from [N] or [N][groups].
struct PanelScales {
  std::vector<float> v;
  const float *group(int64_t g) const { return v.data() + g * kPanel; }
  void gather(const float *bScale, int64_t N, int64_t col, int64_t groups) {
    v.assign(size_t(groups * kPanel), 0.0f);
    const int64_t cols = std::min(kPanel, N - col);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t c = 0; c < cols; ++c)
        v[size_t(g * kPanel + c)] = bScale[(col + c) * groups + g];
  }
};

/// What the row blocks of one panel read besides A: the packed panel, and
/// for weights with K-groups the W8A8 group scales, or the FP8 block
/// factors and (when several row blocks share it) the panel widened to
/// bf16 once.
struct PanelB {
  const char *packed = nullptr;
  int64_t groups = 0;
  const PanelScales *w8Scales = nullptr;
  const float *fp8Factors = nullptr; ///< [groups], the panel's 128-row block
  const uint16_t *widened = nullptr; ///< whole panel in bf16, or null
  bool fused = false; ///< HYRT_GEMM_FP8_FUSED: the kernel reads codes and factors
};

/// Panel p of a scheme's packed matrix with its group scales. FP8 panels
/// are widened here when `rowBlocks` > 1 (into this thread's buffer
/// `slot`: the gate/up driver holds two), so that every row block reuses
/// them from L2 instead of widening each block again.
PanelB panelB(int32_t scheme, const char *w, int64_t pBytes, int64_t p, const float *bScale,
              int64_t N, int64_t groups, int64_t rowBlocks, PanelScales &w8, int slot = 0) {
  PanelB b;
  b.packed = w + p * pBytes;
  b.groups = groups;
  if (groups == 0 || !bScale)
    return b;
  if (scheme == HYRT_GEMM_W8A8_G128) {
    w8.gather(bScale, N, p * kPanel, groups);
    b.w8Scales = &w8;
    return b;
  }
  b.fp8Factors = bScale + (p * kPanel / HYRT_GEMM_GROUP_K) * groups;
  b.fused = scheme == HYRT_GEMM_FP8_FUSED;
  if (rowBlocks > 1 && !b.fused) {
    thread_local std::vector<uint16_t> widened[2];
    std::vector<uint16_t> &buf = widened[slot];
    buf.resize(size_t(groups * kFp8BlockElems));
    hyrt_cpu_f8_to_bf16(reinterpret_cast<const uint8_t *>(b.packed), buf.data(),
                        groups * kFp8BlockElems);
    b.widened = buf.data();
  }
  return b;
}

/// One row block of a panel into C (ldc floats per row): one kernel call;
/// for W8A8 groups C zeroed and one accumulating call per K-group with that
/// group's scales (the kernel sums each group in int32 and adds a_scale *
/// w_scale[group] * sum into C); for FP8 one K = 128 bf16 call per block on
/// the widened codes, C = sum of factor[block] * product (the factor
/// applied in fp32, so the weights enter the kernel exactly).
void blockCall(hyrt_brgemm_fn kernel, const char *aBlock, int64_t lda, int64_t aElem,
               const PanelB &b, float *c, int64_t ldc, int64_t rows, PostArgs &post) {
  if (b.groups == 0) {
    kernel(aBlock, lda, b.packed, c, ldc, rows, &post);
    return;
  }
  if (b.fused) { // one call over every block (codes and factors in the kernel)
    post.b_scale = b.fp8Factors;
    kernel(aBlock, lda, b.packed, c, ldc, rows, &post);
    post.b_scale = nullptr;
    return;
  }
  if (b.fp8Factors) {
    alignas(64) float product[kMaxBlockRows * kPanel];
    alignas(64) thread_local uint16_t block[kFp8BlockElems];
    for (int64_t g = 0; g < b.groups; ++g) {
      const uint16_t *bf16 = b.widened + g * kFp8BlockElems;
      if (!b.widened) {
        hyrt_cpu_f8_to_bf16(reinterpret_cast<const uint8_t *>(b.packed) + g * kFp8BlockElems,
                            block, kFp8BlockElems);
        bf16 = block;
      }
      kernel(aBlock + g * HYRT_GEMM_GROUP_K * aElem, lda, bf16, product, kPanel, rows,
             nullptr);
      const float f = b.fp8Factors[g];
      for (int64_t r = 0; r < rows; ++r) {
        float *cr = c + r * ldc;
        const float *pr = product + r * kPanel;
        if (g == 0)
          for (int64_t j = 0; j < kPanel; ++j)
            cr[j] = f * pr[j];
        else
          for (int64_t j = 0; j < kPanel; ++j)
            cr[j] += f * pr[j];
      }
    }
    return;
  }
  const int64_t groupBytes = panelBytes(HYRT_GEMM_W8A8, HYRT_GEMM_GROUP_K);
  for (int64_t r = 0; r < rows; ++r)
    std::memset(c + r * ldc, 0, kPanel * sizeof(float));
  for (int64_t g = 0; g < b.groups; ++g) {
    post.b_scale = b.w8Scales->group(g);
    kernel(aBlock + g * HYRT_GEMM_GROUP_K * aElem, lda, b.packed + g * groupBytes, c, ldc,
           rows, &post);
  }
}

/// Panel p of one weight matrix as its row blocks read it: the panel
/// (panelB) and, with one scale per output channel, its 32 columns' scales
/// (zero past the last column) for the kernel's epilogue.
struct PanelOperand {
  PanelOperand(int32_t scheme, const char *w, int64_t pBytes, int64_t p, const float *bScale,
               int64_t N, int64_t groups, int64_t rowBlocks, PanelScales &w8, int slot = 0)
      : b(panelB(scheme, w, pBytes, p, bScale, N, groups, rowBlocks, w8, slot)),
        perChannel(bScale && groups == 0) {
    if (perChannel)
      std::memcpy(scale, bScale + p * kPanel, size_t(std::min(kPanel, N - p * kPanel)) * 4);
  }
  PanelOperand(const PanelOperand &) = delete; // post() points into it

  /// The epilogue's arguments for a row block whose A scales and group sums
  /// start at aScale and aSum (null where the scheme has none).
  PostArgs post(const float *aScale, const int32_t *aSum) const {
    return {nullptr, aScale, perChannel ? scale : nullptr, aSum};
  }

  const PanelB b;
  const bool perChannel;
  alignas(64) float scale[kPanel] = {};
};

/// Panel p of rows [mBegin, mEnd), in row blocks of up to mMax.
void gemmPanel(const GemmOperands &g, int64_t p, int64_t mBegin, int64_t mEnd) {
  const int64_t N = g.N, col = p * kPanel;
  const int64_t cols = N - col < kPanel ? N - col : kPanel;
  alignas(64) float tile[kMaxBlockRows * kPanel];
  thread_local PanelScales groupScales;
  const PanelOperand panel(g.scheme, g.w, g.panelBytes, p, g.bScale, N, g.groups,
                           (mEnd - mBegin + g.mMax - 1) / g.mMax, groupScales);
  const PanelB &b = panel.b;
  for (int64_t m0 = mBegin; m0 < mEnd; m0 += g.mMax) {
    const int64_t rows = mEnd - m0 < g.mMax ? mEnd - m0 : g.mMax;
    const char *aBlock = static_cast<const char *>(g.a) + m0 * g.lda * g.aElem;
    PostArgs post = panel.post(g.aScale ? g.aScale + m0 : nullptr,
                               g.aSum ? g.aSum + m0 * g.aSumStride : nullptr);
    if (cols == kPanel) {
      blockCall(g.kernel, aBlock, g.lda, g.aElem, b, g.out + m0 * N + col, N, rows, post);
    } else {
      // The last panel is zero padded to 32 columns: compute it into a
      // local block and keep the valid columns.
      blockCall(g.kernel, aBlock, g.lda, g.aElem, b, tile, kPanel, rows, post);
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(g.out + (m0 + r) * N + col, tile + r * kPanel,
                    size_t(cols) * sizeof(float));
    }
    if (g.bias)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          g.out[(m0 + r) * N + col + c] += g.bias[col + c];
  }
}

/// Panels x row blocks of all M rows.
void runPanels(const void *a, int64_t lda, int64_t aElem, int64_t M, int64_t N,
               const char *w, int64_t panelBytes, const float *aScale,
               const float *bScale, const float *bias, float *out,
               hyrt_brgemm_fn kernel, int64_t mMax, int64_t K,
               int64_t parallelMinMacs, int32_t scheme = HYRT_GEMM_F32,
               const int32_t *aSum = nullptr, int64_t aSumStride = 0) {
  const int64_t panels = (N + kPanel - 1) / kPanel;
  const GemmOperands g{a,    lda,  aElem, aScale, w,    panelBytes,         bScale,
                       bias, out,  N,     kernel, mMax, groupsOf(scheme, K), scheme,
                       aSum, aSumStride};
  // Below parallelMinMacs (the compiler's schedule decision) one thread runs
  // the GEMM: waking the workers would cost more than the work it splits.
  // Panels are split in contiguous ranges: each thread streams its own
  // slice of the weights in memory order, and one that finishes first takes
  // panels from the back of the other's (parallelForBalanced).
  hyrt::cpu::parallelForBalanced(panels, M * N * K >= parallelMinMacs ? hyrt::cpu::kAllThreads : 1,
                         [&](int64_t p) { gemmPanel(g, p, 0, M); });
}

/// Activations in the form a scheme's kernel reads: rows of `lda` elements
/// of `elem` bytes, plus per-token scales for W8A8.
struct Activations {
  const void *a;
  int64_t lda, elem;
  const float *scale;
  /// Integer-code schemes: [rows][sumStride] group sums of the s8 rows.
  const int32_t *sum = nullptr;
  int64_t sumStride = 0;
};

/// Converts (bf16, nearest even) or quantizes (W8A8: per token, scale =
/// max|x| / 127, stored as u8 = q + 128) x into scratch once per GEMM; f32
/// kernels read x as it is.
Activations prepareActivations(int32_t scheme, const float *x, int64_t M,
                               int64_t K, void *scratch) {
  if (scheme == HYRT_GEMM_BF16 || scheme == HYRT_GEMM_FP8 || scheme == HYRT_GEMM_FP8_FUSED) {
    // FP8: rows padded (0) to whole blocks of 128.
    const int64_t lda = hyrt_gemm_activation_lda(hyrt_gemm_activation_k(scheme, K), 2, 2);
    uint16_t *a = static_cast<uint16_t *>(scratch);
    hyrt::cpu::parallelRows(M, K, [&](int64_t m) {
      for (int64_t k = 0; k < K; ++k)
        a[m * lda + k] = hyrt::toBf16(x[m * K + k]);
      for (int64_t k = K; k < lda; ++k)
        a[m * lda + k] = 0;
    });
    return {a, lda, 2, nullptr};
  }
  if (scheme == HYRT_GEMM_W8A8 || scheme == HYRT_GEMM_W8A8_G128) {
    // Grouped weights: rows padded (q = 0) to whole groups of 128.
    const int64_t lda = hyrt_gemm_activation_lda(hyrt_gemm_activation_k(scheme, K), 1, 4);
    // Layout: per-token scales (64-byte aligned block), then the u8 rows.
    float *aScale = static_cast<float *>(scratch);
    uint8_t *a = static_cast<uint8_t *>(scratch) + roundUp(M * 4, 64);
    hyrt_cpu_quantize_rows_u8(x, M, K, lda, a, aScale);
    return {a, lda, 1, aScale};
  }
  if (hyrt_gemm_is_codes(scheme)) {
    // Layout: per-token scales, group sums (each a 64-byte aligned block),
    // then the s8 rows padded (0) to whole groups.
    const int64_t kPadded = hyrt_gemm_activation_k(scheme, K);
    const int64_t lda = hyrt_gemm_activation_lda(kPadded, 1, 4);
    char *base = static_cast<char *>(scratch);
    float *aScale = reinterpret_cast<float *>(base);
    int32_t *aSum = reinterpret_cast<int32_t *>(base + hyrt_gemm_codes_scale_bytes(M));
    int8_t *a = reinterpret_cast<int8_t *>(base + hyrt_gemm_codes_scale_bytes(M) +
                                           hyrt_gemm_codes_sum_bytes(M, K));
    const hyrt_code_format f = hyrt_gemm_code_format(scheme);
    const int64_t groups = kPadded / f.group;
    if (f.super_group) { // two-level kernels: A's scale per group (brgemm.h)
      hyrt_cpu_quantize_groups_s8_sums(x, M, K, lda, f.group, groups, a, aSum);
      return {a, lda, 1, nullptr, aSum, 2 * groups};
    }
    hyrt_cpu_quantize_rows_s8_sums(x, M, K, lda, f.group, a, aScale, aSum);
    return {a, lda, 1, aScale, aSum, groups};
  }
  if (scheme == HYRT_GEMM_FP8_F32 && K % HYRT_GEMM_GROUP_K != 0) {
    // The K = 128 kernels read whole blocks: rows copied, padded with 0.
    const int64_t lda = hyrt_gemm_activation_lda(hyrt_gemm_activation_k(scheme, K), 4, 1);
    float *a = static_cast<float *>(scratch);
    hyrt::cpu::parallelRows(M, K, [&](int64_t m) {
      std::memcpy(a + m * lda, x + m * K, size_t(K) * sizeof(float));
      std::fill(a + m * lda + K, a + (m + 1) * lda, 0.0f);
    });
    return {a, lda, 4, nullptr};
  }
  return {x, K, 4, nullptr};
}

/// out = silu(x Wg^T) * (x Wu^T) for panel p of rows [mBegin, mEnd): the
/// two [rows x 32] tiles of a row block come from the same kernel and A
/// block, combined with the row kernel the unfused SiLU·mul uses
/// (elementwise.h), so the result equals the unfused GEMMs followed by
/// hyrt_cpu_silu_mul bit for bit.
void siluMulPanel(int32_t scheme, const Activations &A, int64_t N, const char *wGate,
                  const char *wUp, int64_t panelBytes, const float *gateScale,
                  const float *upScale, float *out, hyrt_brgemm_fn kernel,
                  int64_t mMax, int64_t p, int64_t mBegin, int64_t mEnd, int64_t groups) {
  const int64_t col = p * kPanel;
  const int64_t cols = N - col < kPanel ? N - col : kPanel;
  alignas(64) float gate[kMaxBlockRows * kPanel], up[kMaxBlockRows * kPanel];
  thread_local PanelScales gGroups, uGroups;
  const int64_t rowBlocks = (mEnd - mBegin + mMax - 1) / mMax;
  const PanelOperand g(scheme, wGate, panelBytes, p, gateScale, N, groups, rowBlocks, gGroups, 0);
  const PanelOperand u(scheme, wUp, panelBytes, p, upScale, N, groups, rowBlocks, uGroups, 1);
  for (int64_t m0 = mBegin; m0 < mEnd; m0 += mMax) {
    const int64_t rows = mEnd - m0 < mMax ? mEnd - m0 : mMax;
    const char *aBlock = static_cast<const char *>(A.a) + m0 * A.lda * A.elem;
    const float *aScale = A.scale ? A.scale + m0 : nullptr;
    const int32_t *aSum = A.sum ? A.sum + m0 * A.sumStride : nullptr;
    PostArgs gPost = g.post(aScale, aSum), uPost = u.post(aScale, aSum);
    blockCall(kernel, aBlock, A.lda, A.elem, g.b, gate, kPanel, rows, gPost);
    blockCall(kernel, aBlock, A.lda, A.elem, u.b, up, kPanel, rows, uPost);
    for (int64_t r = 0; r < rows; ++r)
      hyrt::cpu::siluMulRow(gate + r * kPanel, up + r * kPanel, cols,
                            out + (m0 + r) * N + col);
  }
}

/// Panels per run of a one-block step's SiLU·mul (siluMulRun).
constexpr int64_t kSiluRun = 8;

/// silu(x Wg^T) * (x Wu^T) for panels [p0, p1) (at most kSiluRun) of a step
/// of at most mMax rows: the run's gate panels first, then its up panels,
/// each product kept, then the row kernel. The same kernel calls as
/// siluMulPanel, so the same bits; what differs is the order the weights
/// are read in: a thread streams each half in runs of kSiluRun panels
/// (512 KiB at K = 2048 int8) instead of switching halves every panel,
/// which kept a decode's gate/up GEMV below the other GEMVs' rate (dense-1b
/// w8a8: 44-45 GB/s against 52 once those read two K streams).
void siluMulRun(int32_t scheme, const Activations &A, int64_t M, int64_t N, const char *wGate,
                const char *wUp, int64_t panelBytes, const float *gateScale, const float *upScale,
                float *out, hyrt_brgemm_fn kernel, int64_t p0, int64_t p1, int64_t groups) {
  alignas(64) float prod[2][kSiluRun * kMaxBlockRows * kPanel];
  thread_local PanelScales halfGroups;
  for (int half = 0; half < 2; ++half) {
    const char *w = half == 0 ? wGate : wUp;
    const float *scale = half == 0 ? gateScale : upScale;
    for (int64_t p = p0; p < p1; ++p) {
      const PanelOperand panel(scheme, w, panelBytes, p, scale, N, groups, 1, halfGroups, half);
      PostArgs post = panel.post(A.scale, A.sum);
      blockCall(kernel, static_cast<const char *>(A.a), A.lda, A.elem, panel.b,
                prod[half] + (p - p0) * M * kPanel, kPanel, M, post);
    }
  }
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t col = p * kPanel, cols = std::min(kPanel, N - col);
    const float *gate = prod[0] + (p - p0) * M * kPanel, *up = prod[1] + (p - p0) * M * kPanel;
    for (int64_t r = 0; r < M; ++r)
      hyrt::cpu::siluMulRow(gate + r * kPanel, up + r * kPanel, cols, out + r * N + col);
  }
}

/// A's rows from r0 on (their scales and group sums with them).
Activations rowsFrom(const Activations &A, int64_t r0) {
  Activations r = A;
  r.a = static_cast<const char *>(A.a) + r0 * A.lda * A.elem;
  r.scale = A.scale ? A.scale + r0 : nullptr;
  r.sum = A.sum ? A.sum + r0 * A.sumStride : nullptr;
  return r;
}

/// siluMulPanel over every panel and all M rows, one panel range per thread
/// (steps of one row block: runs of kSiluRun panels, siluMulRun).
void runPanelsSiluMul(int32_t scheme, const Activations &A, int64_t M, int64_t N,
                      const char *wGate, const char *wUp, int64_t panelBytes,
                      const float *gateScale, const float *upScale, float *out,
                      hyrt_brgemm_fn kernel, int64_t mMax, int64_t K,
                      int64_t parallelMinMacs, int64_t groups) {
  const int64_t panels = (N + kPanel - 1) / kPanel;
  const int threads = 2 * M * N * K >= parallelMinMacs ? hyrt::cpu::kAllThreads : 1;
  if (M <= mMax) {
    // Runs of at most kSiluRun panels, as many as a multiple of the pool's
    // threads, so that the threads' contiguous shares stay even (mla-small's
    // shared experts: 88 panels, 11 runs of 8 would split 5 / 6).
    const int64_t pool = threads == 1 ? 1 : hyrt::cpu::ThreadPool::get().size();
    const int64_t runs = ((panels + kSiluRun - 1) / kSiluRun + pool - 1) / pool * pool;
    hyrt::cpu::parallelForBalanced(runs, threads, [&](int64_t r) {
      siluMulRun(scheme, A, M, N, wGate, wUp, panelBytes, gateScale, upScale, out, kernel,
                 panels * r / runs, panels * (r + 1) / runs, groups);
    });
    return;
  }
  hyrt::cpu::parallelForBalanced(panels, threads, [&](int64_t p) {
    siluMulPanel(scheme, A, N, wGate, wUp, panelBytes, gateScale, upScale, out, kernel,
                 mMax, p, 0, M, groups);
  });
}

/// Scale-array elements per weight matrix of N rows: N per channel, N x
/// groups per W8A8 group, row blocks x K blocks for FP8.
int64_t scaleStride(int32_t scheme, int64_t N, int64_t K) {
  if (hyrt_gemm_is_fp8(scheme))
    return (N + HYRT_GEMM_GROUP_K - 1) / HYRT_GEMM_GROUP_K * groupsOf(scheme, K);
  return N * std::max<int64_t>(1, groupsOf(scheme, K));
}

/// Bytes of one packed [N][K] matrix in a scheme's layout.
int64_t packedMatrixBytes(int32_t scheme, int64_t N, int64_t K) {
  return (N + kPanel - 1) / kPanel * panelBytes(scheme, K);
}

} // namespace

extern "C" void hyrt_cpu_gemm_f32(const float *x, int64_t M, int64_t K,
                                  const void *w_packed, int64_t N,
                                  const float *bias, float *out, void *,
                                  hyrt_brgemm_fn kernel, int64_t m_max,
                                  int64_t parallel_min_macs) {
  runPanels(x, K, 4, M, N, static_cast<const char *>(w_packed),
            panelBytes(HYRT_GEMM_F32, K), nullptr, nullptr, bias, out, kernel,
            m_max, K, parallel_min_macs);
}

extern "C" void hyrt_cpu_gemm_f32_bf16(const float *x, int64_t M, int64_t K,
                                       const void *w_packed, int64_t N,
                                       const float *bias, float *out, void *,
                                       hyrt_brgemm_fn kernel, int64_t m_max,
                                       int64_t parallel_min_macs) {
  runPanels(x, K, 4, M, N, static_cast<const char *>(w_packed),
            panelBytes(HYRT_GEMM_F32_BF16, K), nullptr, nullptr, bias, out,
            kernel, m_max, K, parallel_min_macs);
}

extern "C" void hyrt_cpu_gemm_bf16(const float *x, int64_t M, int64_t K,
                                   const void *w_packed, int64_t N,
                                   const float *bias, float *out, void *scratch,
                                   hyrt_brgemm_fn kernel, int64_t m_max,
                                   int64_t parallel_min_macs) {
  const Activations A = prepareActivations(HYRT_GEMM_BF16, x, M, K, scratch);
  runPanels(A.a, A.lda, A.elem, M, N, static_cast<const char *>(w_packed),
            panelBytes(HYRT_GEMM_BF16, K), nullptr, nullptr, bias, out, kernel,
            m_max, K, parallel_min_macs);
}

namespace {

/// W8A8 per channel or per group: activations quantized per token once,
/// then every panel.
void gemmW8a8(int32_t scheme, const float *x, int64_t M, int64_t K, const void *w_packed,
              const float *w_scale, int64_t N, const float *bias, float *out, void *scratch,
              hyrt_brgemm_fn kernel, int64_t m_max, int64_t parallel_min_macs) {
  const Activations A = prepareActivations(scheme, x, M, K, scratch);
  runPanels(A.a, A.lda, A.elem, M, N, static_cast<const char *>(w_packed),
            panelBytes(scheme, K), A.scale, w_scale, bias, out, kernel, m_max, K,
            parallel_min_macs, scheme);
}

} // namespace

extern "C" void hyrt_cpu_gemm_w8a8(const float *x, int64_t M, int64_t K,
                                   const void *w_packed, const float *w_scale,
                                   int64_t N, const float *bias, float *out,
                                   void *scratch, hyrt_brgemm_fn kernel,
                                   int64_t m_max, int64_t parallel_min_macs) {
  gemmW8a8(HYRT_GEMM_W8A8, x, M, K, w_packed, w_scale, N, bias, out, scratch, kernel, m_max,
           parallel_min_macs);
}

extern "C" void hyrt_cpu_gemm_w8a8_g128(const float *x, int64_t M, int64_t K,
                                        const void *w_packed, const float *w_scale,
                                        int64_t N, const float *bias, float *out,
                                        void *scratch, hyrt_brgemm_fn kernel,
                                        int64_t m_max, int64_t parallel_min_macs) {
  gemmW8a8(HYRT_GEMM_W8A8_G128, x, M, K, w_packed, w_scale, N, bias, out, scratch, kernel,
           m_max, parallel_min_macs);
}

extern "C" void hyrt_cpu_gemm_codes(int32_t scheme, const float *x, int64_t M, int64_t K,
                                    const void *w_packed, int64_t N, const float *bias,
                                    float *out, void *scratch, hyrt_brgemm_fn kernel,
                                    int64_t m_max, int64_t parallel_min_macs) {
  const Activations A = prepareActivations(scheme, x, M, K, scratch);
  runPanels(A.a, A.lda, A.elem, M, N, static_cast<const char *>(w_packed),
            panelBytes(scheme, K), A.scale, nullptr, bias, out, kernel, m_max,
            hyrt_gemm_activation_k(scheme, K), parallel_min_macs, scheme, A.sum, A.sumStride);
}

extern "C" void hyrt_cpu_gemm_fp8(int32_t scheme, const float *x, int64_t M, int64_t K,
                                  const void *w_packed, const float *w_scale, int64_t N,
                                  const float *bias, float *out, void *scratch,
                                  hyrt_brgemm_fn kernel, int64_t m_max,
                                  int64_t parallel_min_macs) {
  const Activations A = prepareActivations(scheme, x, M, K, scratch);
  runPanels(A.a, A.lda, A.elem, M, N, static_cast<const char *>(w_packed),
            panelBytes(scheme, K), nullptr, w_scale, bias, out, kernel, m_max, K,
            parallel_min_macs, scheme);
}

extern "C" void hyrt_cpu_gemm_silu_mul(int32_t scheme, const float *x,
                                       int64_t M, int64_t K,
                                       const void *w_packed,
                                       const float *w_scale, int64_t N,
                                       float *out, void *scratch,
                                       hyrt_brgemm_fn kernel, int64_t m_max,
                                       int64_t parallel_min_macs) {
  const Activations A = prepareActivations(scheme, x, M, K, scratch);
  const char *w = static_cast<const char *>(w_packed);
  runPanelsSiluMul(scheme, A, M, N, w, w + packedMatrixBytes(scheme, N, K), panelBytes(scheme, K),
                   w_scale, w_scale ? w_scale + scaleStride(scheme, N, K) : nullptr, out,
                   kernel, m_max, K, parallel_min_macs, groupsOf(scheme, K));
}


namespace {

/// The work items of a grouped GEMM: (expert, block of panels) over the
/// experts that received rows, so empty experts cost nothing and one busy
/// expert still spreads over every thread. Items are handed out
/// dynamically (experts differ in rows); a block is contiguous in memory,
/// so each item streams its slice of the expert's weights in order.
struct ExpertItems {
  std::vector<int32_t> experts; // non-empty, in expert order
  int64_t panelsPerItem = 1, blocksPerExpert = 1;
  int64_t count() const { return int64_t(experts.size()) * blocksPerExpert; }
};

/// Items per thread: about four balance uneven experts under dynamic
/// hand-out, and fewer, larger items keep each weight slice one long
/// stream. When every expert's rows fit one row block of mMax (decode,
/// small batches) an item costs its bytes alone, so the only imbalance is
/// the last item's tail: sixteen per thread make it a quarter as long while
/// each item still streams hundreds of KiB (moe-small w8a8 decode on AMD
/// Zen 4, six alternating pairs: grouped GEMMs per token median 9.9 ms
/// with four, 9.6 with sixteen, inside the host's noise; bench/README.md,
/// the tenth session).
constexpr int64_t kItemsPerThread = 4, kItemsPerThreadOneBlock = 16;

ExpertItems expertItems(const int32_t *offsets, int64_t numExperts, int64_t N, int64_t mMax) {
  ExpertItems items;
  int64_t mostRows = 0;
  for (int64_t e = 0; e < numExperts; ++e)
    if (offsets[e + 1] > offsets[e]) {
      items.experts.push_back(int32_t(e));
      mostRows = std::max<int64_t>(mostRows, offsets[e + 1] - offsets[e]);
    }
  if (items.experts.empty())
    return items;
  const int64_t panels = (N + kPanel - 1) / kPanel;
  const int64_t want = (mostRows <= mMax ? kItemsPerThreadOneBlock : kItemsPerThread) *
                       int64_t(hyrt::cpu::ThreadPool::get().size());
  const int64_t nonEmpty = int64_t(items.experts.size());
  const int64_t blocks = std::min(panels, std::max<int64_t>(1, (want + nonEmpty - 1) / nonEmpty));
  items.panelsPerItem = (panels + blocks - 1) / blocks;
  items.blocksPerExpert = (panels + items.panelsPerItem - 1) / items.panelsPerItem;
  return items;
}

/// body(e, firstPanel, endPanel, rowBegin, rowEnd) for every item, on every
/// thread once the grouped GEMM is worth splitting.
template <typename Body>
void forExpertItems(const int32_t *offsets, int64_t numExperts, int64_t N, int64_t mMax,
                    int64_t rows, int64_t K, int64_t parallelMinMacs, Body &&body) {
  const ExpertItems items = expertItems(offsets, numExperts, N, mMax);
  const int64_t panels = (N + kPanel - 1) / kPanel;
  hyrt::cpu::parallelForDynamic(
      items.count(), rows * N * K >= parallelMinMacs ? hyrt::cpu::kAllThreads : 1,
      [&](int, int64_t i) {
        const int32_t e = items.experts[i / items.blocksPerExpert];
        const int64_t p0 = (i % items.blocksPerExpert) * items.panelsPerItem;
        const int64_t p1 = std::min(panels, p0 + items.panelsPerItem);
        body(e, p0, p1, int64_t(offsets[e]), int64_t(offsets[e + 1]));
      });
}

/// Every (expert, panel block) item of a grouped GEMM over the grouped rows
/// [0, used) whose activations are A: the plain GEMM, or with silu_mul the
/// [gate; up] pair of each expert combined by the SiLU·mul epilogue.
void runGroupedItems(int32_t scheme, const Activations &A, int64_t used, int64_t K,
                     const int32_t *offsets, int64_t numExperts, const void *wPacked,
                     const float *wScale, int64_t N, bool siluMul, float *out,
                     hyrt_brgemm_fn kernel, int64_t mMax, int64_t parallelMinMacs) {
  const char *w = static_cast<const char *>(wPacked);
  const int64_t matrixBytes = packedMatrixBytes(scheme, N, K);
  const int64_t pBytes = panelBytes(scheme, K);
  forExpertItems(offsets, numExperts, N, mMax, (siluMul ? 2 : 1) * used, K, parallelMinMacs,
                 [&](int32_t e, int64_t p0, int64_t p1, int64_t r0, int64_t r1) {
                   r1 = std::min(r1, used);
                   const int64_t sStride = scaleStride(scheme, N, K);
                   const int64_t groups = groupsOf(scheme, K);
                   if (siluMul) {
                     const char *wGate = w + 2 * e * matrixBytes;
                     const float *gScale = wScale ? wScale + e * 2 * sStride : nullptr;
                     if (r1 - r0 <= mMax) { // one row block: runs, as a dense decode step
                       const Activations rows = rowsFrom(A, r0);
                       for (int64_t q = p0; q < p1; q += kSiluRun)
                         siluMulRun(scheme, rows, r1 - r0, N, wGate, wGate + matrixBytes, pBytes,
                                    gScale, gScale ? gScale + sStride : nullptr, out + r0 * N,
                                    kernel, q, std::min(p1, q + kSiluRun), groups);
                       return;
                     }
                     for (int64_t p = p0; p < p1; ++p)
                       siluMulPanel(scheme, A, N, wGate, wGate + matrixBytes, pBytes, gScale,
                                    gScale ? gScale + sStride : nullptr, out, kernel, mMax, p,
                                    r0, r1, groups);
                     return;
                   }
                   const GemmOperands g{A.a,    A.lda, A.elem, A.scale, w + e * matrixBytes,
                                        pBytes, wScale ? wScale + e * sStride : nullptr,
                                        nullptr, out, N, kernel, mMax, groups, scheme,
                                        A.sum, A.sumStride};
                   for (int64_t p = p0; p < p1; ++p)
                     gemmPanel(g, p, r0, r1);
                 });
}

} // namespace

extern "C" void
hyrt_cpu_grouped_gemm(int32_t scheme, const float *x, int64_t rows, int64_t K,
                      const int32_t *offsets, int64_t num_experts,
                      const void *w_packed, const float *w_scale, int64_t N,
                      float *out, void *scratch, hyrt_brgemm_fn kernel,
                      int64_t m_max, int64_t parallel_min_macs) {
  // Every row's activations are converted or quantized once, in one pass,
  // then one parallel region runs all (expert, panel block) items.
  const int64_t used = offsets[num_experts] < rows ? offsets[num_experts] : rows;
  runGroupedItems(scheme, prepareActivations(scheme, x, used, K, scratch), used, K, offsets,
                  num_experts, w_packed, w_scale, N, false, out, kernel, m_max,
                  parallel_min_macs);
}

extern "C" void hyrt_cpu_grouped_gemm_silu_mul(
    int32_t scheme, const float *x, int64_t rows, int64_t K,
    const int32_t *offsets, int64_t num_experts, const void *w_packed,
    const float *w_scale, int64_t N, float *out, void *scratch,
    hyrt_brgemm_fn kernel, int64_t m_max, int64_t parallel_min_macs) {
  const int64_t used = offsets[num_experts] < rows ? offsets[num_experts] : rows;
  runGroupedItems(scheme, prepareActivations(scheme, x, used, K, scratch), used, K, offsets,
                  num_experts, w_packed, w_scale, N, true, out, kernel, m_max,
                  parallel_min_macs);
}

extern "C" void hyrt_cpu_grouped_gemm_tokens(
    int32_t scheme, const float *x, int64_t num_tokens, int64_t top_k, const int32_t *rows,
    int64_t K, const int32_t *offsets, int64_t num_experts, const void *w_packed,
    const float *w_scale, int64_t N, int32_t silu_mul, float *out, void *scratch,
    hyrt_brgemm_fn kernel, int64_t m_max, int64_t parallel_min_macs) {
  // Each token converted / quantized once (the permute made top_k fp32
  // copies of it), then its u8 / bf16 row copied to every (token, slot)
  // row of the expert-grouped order; the GEMM items read those.
  const int64_t pairs = offsets[num_experts];
  const Activations tok = prepareActivations(scheme, x, num_tokens, K, scratch);
  char *pairScratch = static_cast<char *>(scratch) +
                      roundUp(hyrt_gemm_scratch_bytes_for(scheme, num_tokens, K), 64);
  Activations A = tok;
  const int64_t rowBytes = tok.lda * tok.elem;
  float *pairScale = nullptr;
  int32_t *pairSum = nullptr;
  char *pairRows = pairScratch;
  if (scheme == HYRT_GEMM_W8A8 || scheme == HYRT_GEMM_W8A8_G128) {
    // layout of prepareActivations: scales, then rows
    pairScale = reinterpret_cast<float *>(pairScratch);
    pairRows = pairScratch + roundUp(pairs * 4, 64);
  } else if (hyrt_gemm_is_codes(scheme)) { // scales, group sums, then rows
    pairScale = reinterpret_cast<float *>(pairScratch);
    pairSum = reinterpret_cast<int32_t *>(pairScratch + hyrt_gemm_codes_scale_bytes(pairs));
    pairRows = pairScratch + hyrt_gemm_codes_scale_bytes(pairs) +
               hyrt_gemm_codes_sum_bytes(pairs, K);
  }
  const int64_t sums = tok.sumStride;
  hyrt::cpu::parallelRows(pairs, K, [&](int64_t r) {
    const int64_t t = rows[r] / top_k;
    std::memcpy(pairRows + r * rowBytes, static_cast<const char *>(tok.a) + t * rowBytes,
                size_t(rowBytes));
    if (pairScale && tok.scale) // two-level code schemes: scales in the sums
      pairScale[r] = tok.scale[t];
    if (pairSum)
      std::memcpy(pairSum + r * sums, tok.sum + t * sums, size_t(sums) * sizeof(int32_t));
  });
  A.a = pairRows;
  A.scale = tok.scale ? pairScale : nullptr;
  A.sum = pairSum;
  runGroupedItems(scheme, A, pairs, K, offsets, num_experts, w_packed, w_scale, N,
                  silu_mul != 0, out, kernel, m_max, parallel_min_macs);
}

extern "C" void hyrt_cpu_gemm_w8a8_quantized(
    const uint8_t *a, const float *a_scale, int64_t M, int64_t K,
    const void *w_packed, const float *w_scale, int64_t N, const float *bias,
    float *out, hyrt_brgemm_fn kernel, int64_t m_max,
    int64_t parallel_min_macs) {
  runPanels(a, K, 1, M, N, static_cast<const char *>(w_packed),
            panelBytes(HYRT_GEMM_W8A8, K), a_scale, w_scale, bias, out, kernel,
            m_max, K, parallel_min_macs);
}
