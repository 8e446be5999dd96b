// Reference GEMMs of the integer-code schemes (HYRT_GEMM_W4A8,
// HYRT_GEMM_W8A8_G32): scalar, read the packed panels the kernels read
// (hyrt/gemm_layout.h, codegen/pack.h pack_b_grouped) by their documented
// layout, and follow W8A8's semantics: activations quantized per token,
// each group's integer products summed exactly.
#include "hyrt/gemm_layout.h"
#include "hyrt/reference.h"

#include "hyrt/support/f16.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace {

constexpr int64_t kPanel = 32, kGroup = HYRT_GEMM_CODE_GROUP;

/// What one matrix's packed panels hold, by layout arithmetic.
struct CodesMatrix {
  const uint8_t *w;
  int64_t bits, groups, quadBytes, groupBytes, panelBytes;

  CodesMatrix(const uint8_t *w, int64_t bits, int64_t K)
      : w(w), bits(bits), groups((K + kGroup - 1) / kGroup),
        quadBytes(bits == 4 ? 64 : 128), groupBytes(kGroup / 4 * quadBytes + kPanel * 2),
        panelBytes(groups * groupBytes) {}

  int64_t bytes(int64_t N) const { return (N + kPanel - 1) / kPanel * panelBytes; }

  /// The code of column n at K-element k.
  int32_t code(int64_t n, int64_t k) const {
    const uint8_t *group = w + (n / kPanel) * panelBytes + (k / kGroup) * groupBytes;
    const int64_t c = n % kPanel, q = (k % kGroup) / 4, e = k % 4;
    if (bits == 8)
      return group[q * quadBytes + 4 * c + e];
    const uint8_t byte = group[q * quadBytes + 4 * (c % 16) + e];
    return c < 16 ? byte & 15 : byte >> 4;
  }

  /// The fp16 scale of column n and group g.
  float scale(int64_t n, int64_t g) const {
    const uint8_t *p = w + (n / kPanel) * panelBytes + g * groupBytes + kGroup / 4 * quadBytes +
                       2 * (n % kPanel);
    uint16_t h;
    std::memcpy(&h, p, 2);
    return hyrt::fromF16(h);
  }
};

} // namespace

extern "C" void hyrt_ref_matmul_codes(const float *x, const uint8_t *w, const float *bias,
                                      int64_t M, int64_t N, int64_t K, int64_t bits,
                                      int64_t parts, float *out) {
  const int32_t zero = bits == 4 ? 8 : 128;
  const int64_t rows = N / parts; // each part packed on its own panels
  std::vector<int8_t> q(size_t(M * K));
  std::vector<float> aScale(static_cast<size_t>(M));
  hyrt_ref_quantize_rows(x, M, K, q.data(), aScale.data());
  for (int64_t part = 0; part < parts; ++part) {
    const CodesMatrix mat(w + part * CodesMatrix(w, bits, K).bytes(rows), bits, K);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t r = 0; r < rows; ++r) {
        double acc = 0;
        for (int64_t g = 0; g < mat.groups; ++g) {
          int64_t dot = 0;
          for (int64_t k = g * kGroup; k < std::min(K, (g + 1) * kGroup); ++k)
            dot += int64_t(q[size_t(m * K + k)]) * (mat.code(r, k) - zero);
          acc += double(mat.scale(r, g)) * double(dot);
        }
        const int64_t n = part * rows + r;
        out[m * N + n] = float(double(aScale[size_t(m)]) * acc) + (bias ? bias[n] : 0.0f);
      }
  }
}

extern "C" void hyrt_ref_moe_grouped_matmul_codes(const float *x, const uint8_t *w,
                                                  const int32_t *offsets, int64_t num_rows,
                                                  int64_t num_experts, int64_t N, int64_t K,
                                                  int64_t bits, int64_t parts, float *out) {
  const int64_t matrixBytes = parts * CodesMatrix(w, bits, K).bytes(N / parts);
  for (int64_t e = 0; e < num_experts; ++e) {
    const int64_t begin = offsets[e];
    const int64_t end = std::min<int64_t>(offsets[e + 1], num_rows);
    if (end > begin)
      hyrt_ref_matmul_codes(x + begin * K, w + e * matrixBytes, nullptr, end - begin, N, K,
                            bits, parts, out + begin * N);
  }
}
