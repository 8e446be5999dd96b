// Row gathers and column copies for optimized artifacts: the embedding
// lookup, the logit-row gather and the last-dim slices / concats (MLA's
// nope/rope split, the latent concat). The reference kernels' results bit
// for bit (they only move floats), one memcpy per row, rows split across
// the thread pool from kParallelMinElements.
#include "hyrt/cpu_kernels.h"
#include "thread_pool.h"

#include <cstring>

using hyrt::cpu::parallelRows;

extern "C" void hyrt_cpu_embedding(const float *table, int64_t vocab, int64_t dim,
                                   const int32_t *ids, int64_t num_tokens, float *out) {
  parallelRows(num_tokens, dim, [&](int64_t t) {
    float *row = out + t * dim;
    const int64_t id = ids[t];
    if (id < 0 || id >= vocab)
      std::memset(row, 0, sizeof(float) * size_t(dim));
    else
      std::memcpy(row, table + id * dim, sizeof(float) * size_t(dim));
  });
}

extern "C" void hyrt_cpu_gather_rows(const float *x, const int32_t *rows, int64_t num_rows,
                                     int64_t dim, float *out) {
  parallelRows(num_rows, dim, [&](int64_t r) {
    std::memcpy(out + r * dim, x + int64_t(rows[r]) * dim, sizeof(float) * size_t(dim));
  });
}

extern "C" void hyrt_cpu_copy_columns(const float *src, int64_t src_stride, int64_t src_offset,
                                      int64_t rows, int64_t cols, float *dst, int64_t dst_stride,
                                      int64_t dst_offset) {
  parallelRows(rows, cols, [&](int64_t r) {
    std::memcpy(dst + r * dst_stride + dst_offset, src + r * src_stride + src_offset,
                sizeof(float) * size_t(cols));
  });
}
