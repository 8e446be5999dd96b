// Drivers of the generated brgemm kernels (see hyrt/cpu_kernels.h).
#include "elementwise.h"
#include "hyrt/cpu_kernels.h"
#include "hyrt/gemm_layout.h"
#include "thread_pool.h"

#include "../reference/bf16.h"

#include <cmath>
#include <cstring>

namespace {

constexpr int64_t kPanel = 32;
constexpr int64_t kMaxBlockRows = 64;

struct PostArgs {
  const float *bias;
  const float *a_scale;
  const float *b_scale;
};

int64_t roundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// Bytes of one packed 32-column panel of K (codegen/pack.h layouts).
int64_t panelBytes(int32_t scheme, int64_t K) {
  switch (scheme) {
  case HYRT_GEMM_BF16:
  case HYRT_GEMM_F32_BF16:
    return (roundUp(K, 2) / 2) * kPanel * 2 * 2; // [K/2][32][2] bf16
  case HYRT_GEMM_W8A8:
    return (roundUp(K, 4) / 4) * kPanel * 4 + kPanel * 4; // + int32 comp[32]
  default:
    return K * kPanel * 4; // [K][32] f32
  }
}

/// Panels x row blocks; A rows start at a + row * lda * aElem.
void runPanels(const void *a, int64_t lda, int64_t aElem, int64_t M, int64_t N,
               const char *w, int64_t panelBytes, const float *aScale,
               const float *bScale, const float *bias, float *out,
               hyrt_brgemm_fn kernel, int64_t mMax, int64_t K,
               int64_t parallelMinMacs) {
  const int64_t panels = (N + kPanel - 1) / kPanel;
  // Below parallelMinMacs (the compiler's schedule decision) one thread runs
  // the GEMM: waking the workers would cost more than the work it splits.
  // Panels are split in contiguous ranges: each thread streams its own
  // slice of the weights in memory order.
  hyrt::cpu::parallelFor(panels, M * N * K >= parallelMinMacs ? hyrt::cpu::kAllThreads : 1, [&](int64_t p) {
    const int64_t col = p * kPanel;
    const int64_t cols = N - col < kPanel ? N - col : kPanel;
    alignas(64) float tile[kMaxBlockRows * kPanel];
    alignas(64) float scale[kPanel] = {};
    PostArgs post{nullptr, nullptr, nullptr};
    if (bScale) {
      std::memcpy(scale, bScale + col, size_t(cols) * sizeof(float));
      post.b_scale = scale;
    }
    for (int64_t m0 = 0; m0 < M; m0 += mMax) {
      const int64_t rows = M - m0 < mMax ? M - m0 : mMax;
      const char *aBlock = static_cast<const char *>(a) + m0 * lda * aElem;
      post.a_scale = aScale ? aScale + m0 : nullptr;
      if (cols == kPanel) {
        kernel(aBlock, lda, w + p * panelBytes, out + m0 * N + col, N, rows,
               &post);
      } else {
        // The last panel is zero padded to 32 columns: compute it into a
        // local block and keep the valid columns.
        kernel(aBlock, lda, w + p * panelBytes, tile, kPanel, rows, &post);
        for (int64_t r = 0; r < rows; ++r)
          std::memcpy(out + (m0 + r) * N + col, tile + r * kPanel,
                      size_t(cols) * sizeof(float));
      }
      if (bias)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c)
            out[(m0 + r) * N + col + c] += bias[col + c];
    }
  });
}

/// Activations in the form a scheme's kernel reads: rows of `lda` elements
/// of `elem` bytes, plus per-token scales for W8A8.
struct Activations {
  const void *a;
  int64_t lda, elem;
  const float *scale;
};

/// Converts (bf16, nearest even) or quantizes (W8A8: per token, scale =
/// max|x| / 127, stored as u8 = q + 128) x into scratch once per GEMM; f32
/// kernels read x as it is.
Activations prepareActivations(int32_t scheme, const float *x, int64_t M,
                               int64_t K, void *scratch) {
  if (scheme == HYRT_GEMM_BF16) {
    const int64_t lda = hyrt_gemm_activation_lda(K, 2, 2);
    uint16_t *a = static_cast<uint16_t *>(scratch);
    hyrt::cpu::parallelRows(M, K, [&](int64_t m) {
      for (int64_t k = 0; k < K; ++k)
        a[m * lda + k] = hyrt::toBf16(x[m * K + k]);
      for (int64_t k = K; k < lda; ++k)
        a[m * lda + k] = 0;
    });
    return {a, lda, 2, nullptr};
  }
  if (scheme == HYRT_GEMM_W8A8) {
    const int64_t lda = hyrt_gemm_activation_lda(K, 1, 4);
    // Layout: per-token scales (64-byte aligned block), then the u8 rows.
    float *aScale = static_cast<float *>(scratch);
    uint8_t *a = static_cast<uint8_t *>(scratch) + roundUp(M * 4, 64);
    hyrt_cpu_quantize_rows_u8(x, M, K, lda, a, aScale);
    return {a, lda, 1, aScale};
  }
  return {x, K, 4, nullptr};
}

/// out = silu(x Wg^T) * (x Wu^T): each thread takes panel p of both halves,
/// computes the two [rows x 32] tiles of a row block with the same kernel
/// and A block, and combines them with the row kernel the unfused SiLU·mul
/// uses (elementwise.h), so the result equals the unfused GEMMs followed by
/// hyrt_cpu_silu_mul bit for bit.
void runPanelsSiluMul(const Activations &A, int64_t M, int64_t N,
                      const char *wGate, const char *wUp, int64_t panelBytes,
                      const float *gateScale, const float *upScale, float *out,
                      hyrt_brgemm_fn kernel, int64_t mMax, int64_t K,
                      int64_t parallelMinMacs) {
  const int64_t panels = (N + kPanel - 1) / kPanel;
  hyrt::cpu::parallelFor(panels, 2 * M * N * K >= parallelMinMacs ? hyrt::cpu::kAllThreads : 1, [&](int64_t p) {
    const int64_t col = p * kPanel;
    const int64_t cols = N - col < kPanel ? N - col : kPanel;
    alignas(64) float gate[kMaxBlockRows * kPanel], up[kMaxBlockRows * kPanel];
    alignas(64) float gScale[kPanel] = {}, uScale[kPanel] = {};
    PostArgs gPost{nullptr, nullptr, nullptr}, uPost{nullptr, nullptr, nullptr};
    if (gateScale) {
      std::memcpy(gScale, gateScale + col, size_t(cols) * sizeof(float));
      std::memcpy(uScale, upScale + col, size_t(cols) * sizeof(float));
      gPost.b_scale = gScale;
      uPost.b_scale = uScale;
    }
    for (int64_t m0 = 0; m0 < M; m0 += mMax) {
      const int64_t rows = M - m0 < mMax ? M - m0 : mMax;
      const char *aBlock = static_cast<const char *>(A.a) + m0 * A.lda * A.elem;
      gPost.a_scale = uPost.a_scale = A.scale ? A.scale + m0 : nullptr;
      kernel(aBlock, A.lda, wGate + p * panelBytes, gate, kPanel, rows, &gPost);
      kernel(aBlock, A.lda, wUp + p * panelBytes, up, kPanel, rows, &uPost);
      for (int64_t r = 0; r < rows; ++r)
        hyrt::cpu::siluMulRow(gate + r * kPanel, up + r * kPanel, cols,
                              out + (m0 + r) * N + col);
    }
  });
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

extern "C" void hyrt_cpu_gemm_w8a8(const float *x, int64_t M, int64_t K,
                                   const void *w_packed, const float *w_scale,
                                   int64_t N, const float *bias, float *out,
                                   void *scratch, hyrt_brgemm_fn kernel,
                                   int64_t m_max, int64_t parallel_min_macs) {
  const Activations A = prepareActivations(HYRT_GEMM_W8A8, x, M, K, scratch);
  runPanels(A.a, A.lda, A.elem, M, N, static_cast<const char *>(w_packed),
            panelBytes(HYRT_GEMM_W8A8, K), A.scale, w_scale, bias, out, kernel,
            m_max, K, parallel_min_macs);
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
  runPanelsSiluMul(A, M, N, w, w + packedMatrixBytes(scheme, N, K),
                   panelBytes(scheme, K), w_scale, w_scale ? w_scale + N : nullptr,
                   out, kernel, m_max, K, parallel_min_macs);
}


extern "C" void
hyrt_cpu_grouped_gemm(int32_t scheme, const float *x, int64_t rows, int64_t K,
                      const int32_t *offsets, int64_t num_experts,
                      const void *w_packed, const float *w_scale, int64_t N,
                      float *out, void *scratch, hyrt_brgemm_fn kernel,
                      int64_t m_max, int64_t parallel_min_macs) {
  (void)rows;
  const char *w = static_cast<const char *>(w_packed);
  const int64_t expertBytes = packedMatrixBytes(scheme, N, K);
  for (int64_t e = 0; e < num_experts; ++e) {
    const int64_t begin = offsets[e], count = offsets[e + 1] - offsets[e];
    if (count <= 0)
      continue;
    const float *xe = x + begin * K;
    float *oe = out + begin * N;
    const char *we = w + e * expertBytes;
    switch (scheme) {
    case HYRT_GEMM_BF16:
      hyrt_cpu_gemm_bf16(xe, count, K, we, N, nullptr, oe, scratch, kernel,
                         m_max, parallel_min_macs);
      break;
    case HYRT_GEMM_W8A8:
      hyrt_cpu_gemm_w8a8(xe, count, K, we, w_scale + e * N, N, nullptr, oe,
                         scratch, kernel, m_max, parallel_min_macs);
      break;
    case HYRT_GEMM_F32_BF16:
      hyrt_cpu_gemm_f32_bf16(xe, count, K, we, N, nullptr, oe, scratch, kernel,
                             m_max, parallel_min_macs);
      break;
    default:
      hyrt_cpu_gemm_f32(xe, count, K, we, N, nullptr, oe, scratch, kernel,
                        m_max, parallel_min_macs);
      break;
    }
  }
}

extern "C" void hyrt_cpu_grouped_gemm_silu_mul(
    int32_t scheme, const float *x, int64_t rows, int64_t K,
    const int32_t *offsets, int64_t num_experts, const void *w_packed,
    const float *w_scale, int64_t N, float *out, void *scratch,
    hyrt_brgemm_fn kernel, int64_t m_max, int64_t parallel_min_macs) {
  (void)rows;
  const char *w = static_cast<const char *>(w_packed);
  const int64_t expertBytes = 2 * packedMatrixBytes(scheme, N, K);
  for (int64_t e = 0; e < num_experts; ++e) {
    const int64_t begin = offsets[e], count = offsets[e + 1] - offsets[e];
    if (count <= 0)
      continue;
    hyrt_cpu_gemm_silu_mul(scheme, x + begin * K, count, K, w + e * expertBytes,
                           w_scale ? w_scale + e * 2 * N : nullptr, N,
                           out + begin * N, scratch, kernel, m_max,
                           parallel_min_macs);
  }
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
