// Reference kernels for dense matmul (x . w^T + bias) and elementwise ops.
#include "hyrt/reference.h"

#include <cmath>
#include <cstring>
#include <algorithm>
#include <vector>

namespace {
/// x rounded to the nearest bf16 (ties to even), kept in fp32; NaN stays NaN.
float roundToBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return x;
  bits += 0x7fffu + ((bits >> 16) & 1u);
  bits &= 0xffff0000u;
  std::memcpy(&x, &bits, 4);
  return x;
}
} // namespace

extern "C" void hyrt_ref_matmul(const float *x, const float *w,
                                const float *bias, int64_t M, int64_t N,
                                int64_t K, float *out) {
  // Four rows of x share each pass over a weight row; double accumulation.
  constexpr int64_t kRows = 4;
  for (int64_t m0 = 0; m0 < M; m0 += kRows) {
    const int64_t mb = M - m0 < kRows ? M - m0 : kRows;
    for (int64_t n = 0; n < N; ++n) {
      const float *wr = w + n * K;
      double acc[kRows] = {0.0, 0.0, 0.0, 0.0};
      for (int64_t k = 0; k < K; ++k) {
        const double wk = wr[k];
        for (int64_t i = 0; i < mb; ++i)
          acc[i] += double(x[(m0 + i) * K + k]) * wk;
      }
      const double b = bias ? double(bias[n]) : 0.0;
      for (int64_t i = 0; i < mb; ++i)
        out[(m0 + i) * N + n] = float(acc[i] + b);
    }
  }
}

extern "C" void hyrt_ref_add(const float *a, const float *b, int64_t n,
                             float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] + b[i];
}

extern "C" void hyrt_ref_silu_mul(const float *gate, const float *up,
                                  int64_t n, float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

extern "C" void hyrt_ref_copy_columns(const float *src, int64_t src_stride,
                                      int64_t src_offset, int64_t rows,
                                      int64_t cols, float *dst,
                                      int64_t dst_stride, int64_t dst_offset) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dst[r * dst_stride + dst_offset + c] = src[r * src_stride + src_offset + c];
}

extern "C" void hyrt_ref_matmul_bf16_activations(const float *x, const float *w,
                                                 const float *bias, int64_t M,
                                                 int64_t N, int64_t K,
                                                 float *out) {
  std::vector<float> rounded(size_t(M) * size_t(K));
  for (size_t i = 0; i < rounded.size(); ++i)
    rounded[i] = roundToBf16(x[i]);
  hyrt_ref_matmul(rounded.data(), w, bias, M, N, K, out);
}

extern "C" void hyrt_ref_quantize_rows(const float *x, int64_t M, int64_t K,
                                       int8_t *q, float *scale) {
  for (int64_t m = 0; m < M; ++m) {
    const float *row = x + m * K;
    float amax = 0;
    bool finite = true;
    for (int64_t k = 0; k < K; ++k) {
      finite = finite && std::isfinite(row[k]);
      amax = std::fmax(amax, std::fabs(row[k]));
    }
    const float s = amax > 0 ? amax / 127.0f : 1.0f;
    // x * (1/scale), as the kernels compute it, so that both round alike.
    const float inv = 1.0f / s;
    scale[m] = finite ? s : std::nanf("");
    for (int64_t k = 0; k < K; ++k) {
      const float v = std::nearbyint(row[k] * inv);
      q[m * K + k] = finite ? int8_t(std::fmin(127.0f, std::fmax(-127.0f, v))) : 0;
    }
  }
}

extern "C" void hyrt_ref_matmul_w8a8_quantized(const int8_t *q,
                                               const float *scale,
                                               const int8_t *w_q,
                                               const float *w_scale,
                                               const float *bias, int64_t M,
                                               int64_t N, int64_t K,
                                               float *out) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const int8_t *wr = w_q + n * K;
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += int64_t(q[m * K + k]) * wr[k];
      const double b = bias ? double(bias[n]) : 0.0;
      // A NaN scale (a row with NaN or Inf) makes the row NaN.
      out[m * N + n] = float(double(acc) * scale[m] * w_scale[n] + b);
    }
}

extern "C" void hyrt_ref_matmul_w8a8(const float *x, const int8_t *w_q,
                                     const float *w_scale, const float *bias,
                                     int64_t M, int64_t N, int64_t K,
                                     float *out) {
  std::vector<int8_t> q(static_cast<size_t>(M * K));
  std::vector<float> scale(static_cast<size_t>(M));
  hyrt_ref_quantize_rows(x, M, K, q.data(), scale.data());
  hyrt_ref_matmul_w8a8_quantized(q.data(), scale.data(), w_q, w_scale, bias, M,
                                 N, K, out);
}

extern "C" void hyrt_ref_matmul_w8a8_grouped(const float *x, const int8_t *w_q,
                                             const float *w_scale, const float *bias,
                                             int64_t M, int64_t N, int64_t K, int64_t group,
                                             float *out) {
  std::vector<int8_t> q(static_cast<size_t>(M * K));
  std::vector<float> scale(static_cast<size_t>(M));
  hyrt_ref_quantize_rows(x, M, K, q.data(), scale.data());
  const int64_t groups = (K + group - 1) / group;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const int8_t *wr = w_q + n * K;
      double acc = bias ? double(bias[n]) : 0.0;
      for (int64_t g = 0; g < groups; ++g) {
        int64_t sum = 0; // exact within a group
        for (int64_t k = g * group; k < std::min(K, (g + 1) * group); ++k)
          sum += int64_t(q[m * K + k]) * wr[k];
        acc += double(sum) * scale[m] * w_scale[n * groups + g];
      }
      out[m * N + n] = float(acc);
    }
}

namespace {
/// e4m3fn -> fp32: bias 7, subnormals m * 2^-9, S.1111.111 NaN.
float decodeE4m3(uint8_t code) {
  const int e = (code >> 3) & 15, m = code & 7;
  float v;
  if (e == 15 && m == 7)
    v = std::nanf("");
  else if (e == 0)
    v = std::ldexp(float(m), -9);
  else
    v = std::ldexp(1.0f + float(m) / 8.0f, e - 7);
  return (code & 0x80) ? -v : v;
}
} // namespace

extern "C" void hyrt_ref_matmul_fp8(const float *x, const uint8_t *codes,
                                    const float *factors, const float *bias, int64_t M,
                                    int64_t N, int64_t K, int64_t parts, float *out) {
  // Dequantize every weight (code * its block's factor, exact in double),
  // then the fp32 reference matmul.
  const int64_t rowsPerPart = N / parts, kBlocks = (K + 127) / 128;
  const int64_t blocksPerPart = (rowsPerPart + 127) / 128;
  std::vector<float> w(static_cast<size_t>(N * K));
  for (int64_t n = 0; n < N; ++n) {
    const int64_t blockRow = (n / rowsPerPart) * blocksPerPart + (n % rowsPerPart) / 128;
    for (int64_t k = 0; k < K; ++k)
      w[n * K + k] = float(double(decodeE4m3(codes[n * K + k])) *
                           factors[blockRow * kBlocks + k / 128]);
  }
  hyrt_ref_matmul(x, w.data(), bias, M, N, K, out);
}

extern "C" void hyrt_ref_gather_rows(const float *x, const int32_t *rows,
                                     int64_t num_rows, int64_t dim,
                                     float *out) {
  for (int64_t r = 0; r < num_rows; ++r)
    std::memcpy(out + r * dim, x + int64_t(rows[r]) * dim, sizeof(float) * dim);
}

extern "C" void hyrt_ref_silu_mul_halves(const float *gate_up, int64_t rows,
                                         int64_t n, float *out) {
  for (int64_t r = 0; r < rows; ++r)
    hyrt_ref_silu_mul(gate_up + r * 2 * n, gate_up + r * 2 * n + n, n,
                      out + r * n);
}

extern "C" void hyrt_ref_rms_norm_quantize(const float *x, const float *residual,
                                           const float *w, int64_t rows,
                                           int64_t dim, float eps, int8_t *q,
                                           float *scale, float *residual_out) {
  std::vector<float> row(static_cast<size_t>(dim));
  for (int64_t r = 0; r < rows; ++r) {
    hyrt_ref_rms_norm(x + r * dim, residual ? residual + r * dim : nullptr, w, 1,
                      dim, eps, row.data(),
                      residual_out ? residual_out + r * dim : nullptr);
    hyrt_ref_quantize_rows(row.data(), 1, dim, q + r * dim, scale + r);
  }
}

extern "C" void hyrt_ref_silu_mul_quantize(const float *gate, const float *up,
                                           int64_t rows, int64_t dim, int8_t *q,
                                           float *scale) {
  std::vector<float> row(static_cast<size_t>(dim));
  for (int64_t r = 0; r < rows; ++r) {
    hyrt_ref_silu_mul(gate + r * dim, up + r * dim, dim, row.data());
    hyrt_ref_quantize_rows(row.data(), 1, dim, q + r * dim, scale + r);
  }
}
