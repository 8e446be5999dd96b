// Driver GEMM: splits C into (32-column panel, block-row) tasks, runs them
// on OpenMP threads (panel-major, so a thread keeps its B panel in L2 across
// row blocks), and routes a partial last panel through a stack buffer.
#include "codegen/gemm.h"

#include "codegen/tiles.h"

#include <algorithm>
#include <cstring>

#include <omp.h>

namespace hyc::codegen {

std::unique_ptr<Gemm> Gemm::create(const GemmDesc &desc, std::string *error) {
  if (desc.k < 1 || desc.k > (int64_t(1) << 30)) {
    if (error)
      *error = "K=" + std::to_string(desc.k) + " out of range";
    return nullptr;
  }
  BrgemmDesc kd =
      make_brgemm_desc(desc.isa, desc.a_type, desc.b_type, desc.c_type,
                       int(desc.k), 32, desc.accumulate, desc.epilogue);
  BrgemmGenResult r = generate_brgemm(kd);
  if (!r) {
    if (error)
      *error = r.error;
    return nullptr;
  }
  return std::unique_ptr<Gemm>(new Gemm(desc, std::move(r.kernel)));
}

Gemm::Gemm(const GemmDesc &desc, std::unique_ptr<BrgemmKernel> kernel)
    : desc_(desc), kernel_(std::move(kernel)) {
  if (desc.isa == Isa::amx)
    tile_release_ = std::make_unique<JitCode>(generate_amx_tile_release());
}

std::string Gemm::check(const void *a, int64_t lda, const PackedB &w,
                        const void *c, int64_t ldc, int64_t m,
                        const float *bias, const float *a_scale,
                        const float *b_scale) const {
  const BrgemmDesc &kd = kernel_->desc();
  if (w.layout != kd.b_layout || w.k != desc_.k)
    return "weights packed for K=" + std::to_string(w.k) +
           " in another layout or K than the kernel's K=" +
           std::to_string(desc_.k);
  if (m < 0)
    return "m=" + std::to_string(m) + " is negative";
  if (m > 0 && (!a || !c))
    return "A or C is null";
  if (lda < desc_.k || ldc < w.n)
    return "lda=" + std::to_string(lda) + " / ldc=" + std::to_string(ldc) +
           " below K=" + std::to_string(desc_.k) +
           " / N=" + std::to_string(w.n);
  if (kd.epilogue == Epilogue::bias && !bias)
    return "bias epilogue without a bias vector";
  if (kd.a_type == DataType::u8 && kd.c_type == DataType::f32 &&
      (!a_scale || !b_scale))
    return "u8 x s8 -> f32 needs a_scale and b_scale";
  return {};
}

bool Gemm::run(const void *a, int64_t lda, const PackedB &w, void *c,
               int64_t ldc, int64_t m, const float *bias, const float *a_scale,
               const float *b_scale, std::string *error) const {
  const std::string problem =
      check(a, lda, w, c, ldc, m, bias, a_scale, b_scale);
  if (!problem.empty()) {
    if (error)
      *error = problem;
    return false;
  }
  if (m == 0)
    return true;
  const BrgemmDesc &kd = kernel_->desc();
  const int m_block = kd.m_max;
  const int64_t m_blocks = (m + m_block - 1) / m_block;
  const int64_t n_panels = w.n_panels;
  const int64_t a_elem = data_type_size(kd.a_type);
  const int64_t c_elem = data_type_size(kd.c_type);
  const BrgemmFn fn = kernel_->fn();
  const int threads = desc_.threads > 0 ? desc_.threads : omp_get_max_threads();
  const int64_t tasks = n_panels * m_blocks;

  // Rows whose stride is a multiple of 4 KiB map to the same L1 set: a
  // block's 14 A streams then thrash 12 ways. Re-stride A (cheap next to the
  // GEMM) so consecutive rows fall 64 bytes apart in the set index.
  AlignedBuffer restrided;
  if (m > 1 && (lda * a_elem) % 4096 == 0) {
    const int64_t row_bytes = desc_.k * a_elem;
    const int64_t new_lda = (lda * a_elem + 64) / a_elem;
    restrided = AlignedBuffer(size_t(m * new_lda * a_elem));
    const uint8_t *src = static_cast<const uint8_t *>(a);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < m; ++i)
      std::memcpy(restrided.data() + i * new_lda * a_elem,
                  src + i * lda * a_elem, size_t(row_bytes));
    a = restrided.data();
    lda = new_lda;
  }

  const TileReleaseFn release =
      tile_release_ ? tile_release_->entry<TileReleaseFn>() : nullptr;
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t p = t / m_blocks, mb = t % m_blocks;
      const int64_t n0 = p * kPanelCols, m0 = mb * m_block;
      const int64_t rows = std::min<int64_t>(m_block, m - m0);
      const int64_t cols = std::min<int64_t>(kPanelCols, w.n - n0);
      const uint8_t *a_blk =
          static_cast<const uint8_t *>(a) + m0 * lda * a_elem;
      uint8_t *c_blk = static_cast<uint8_t *>(c) + (m0 * ldc + n0) * c_elem;
      BrgemmPostArgs post;
      post.bias = bias ? bias + n0 : nullptr;
      post.a_scale = a_scale ? a_scale + m0 : nullptr;
      post.b_scale = b_scale ? b_scale + n0 : nullptr;
      if (cols == kPanelCols) {
        fn(a_blk, lda, w.panel(p), c_blk, ldc, rows, &post);
        continue;
      }
      // Partial panel: the kernel writes 32 columns and reads 32 entries of
      // bias / b_scale, so give it padded copies.
      alignas(64) uint8_t tmp_c[32 * kPanelCols * 4];
      alignas(64) float tmp_bias[kPanelCols] = {}, tmp_scale[kPanelCols] = {};
      if (bias) {
        std::memcpy(tmp_bias, bias + n0, cols * sizeof(float));
        post.bias = tmp_bias;
      }
      if (b_scale) {
        std::memcpy(tmp_scale, b_scale + n0, cols * sizeof(float));
        post.b_scale = tmp_scale;
      }
      for (int64_t i = 0; i < rows; ++i)
        if (kd.accumulate)
          std::memcpy(tmp_c + i * kPanelCols * c_elem, c_blk + i * ldc * c_elem,
                      cols * c_elem);
      fn(a_blk, lda, w.panel(p), tmp_c, kPanelCols, rows, &post);
      for (int64_t i = 0; i < rows; ++i)
        std::memcpy(c_blk + i * ldc * c_elem, tmp_c + i * kPanelCols * c_elem,
                    cols * c_elem);
    }
    if (release)
      release();
  }
  return true;
}

} // namespace hyc::codegen
