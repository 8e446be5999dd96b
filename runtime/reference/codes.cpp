// Reference GEMMs of the integer-code schemes (hyrt/gemm_layout.h
// hyrt_gemm_is_codes: HYRT_GEMM_W4A8, HYRT_GEMM_W8A8_G32 and the stored
// formats HYRT_GEMM_Q4K ... HYRT_GEMM_Q4Z): scalar, read the packed panels
// the kernels read (hyrt_gemm_code_format, codegen/pack.h) by their
// documented layout, and follow the kernels' semantics: activations
// quantized per token (per group for the two-level formats), each group's
// integer products summed exactly.
#include "hyrt/gemm_layout.h"
#include "hyrt/reference.h"

#include "hyrt/support/f16.h"
#include "hyrt/support/iq4nl.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace {

constexpr int64_t kPanel = 32;

/// What one matrix's packed panels hold, by layout arithmetic.
struct CodesMatrix {
  const uint8_t *w;
  hyrt_code_format f;
  int64_t unit, units, quadBytes, groupBytes, headerBytes, unitBytes, panelBytes;

  CodesMatrix(const uint8_t *w, int32_t scheme, int64_t K)
      : w(w), f(hyrt_gemm_code_format(scheme)), unit(hyrt_gemm_code_unit(scheme)),
        units((K + unit - 1) / unit), quadBytes(f.bits == 4 ? 64 : 128),
        // one-level: codes then fp16 scales (and mins); two-level: codes
        // then sc[32] and m[32], each super-block led by d (and dmin).
        groupBytes(f.group / 4 * quadBytes + (f.super_group ? 64 : f.asymmetric ? 128 : 64)),
        headerBytes(f.super_group ? (f.asymmetric ? 128 : 64) : 0),
        unitBytes(headerBytes + unit / f.group * groupBytes),
        panelBytes(hyrt_gemm_code_panel_bytes(scheme, K)) {}

  int64_t groups() const { return units * unit / f.group; }
  int64_t bytes(int64_t N) const { return (N + kPanel - 1) / kPanel * panelBytes; }

  /// The start of group g of column n's panel.
  const uint8_t *groupAt(int64_t n, int64_t g) const {
    const int64_t u = g * f.group / unit, inUnit = g - u * (unit / f.group);
    return w + (n / kPanel) * panelBytes + u * unitBytes + headerBytes + inUnit * groupBytes;
  }
  float f16At(const uint8_t *p) const {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return hyrt::fromF16(h);
  }

  /// The code of column n at K-element k minus the zero point (symmetric)
  /// or as stored (asymmetric), through the codebook where there is one.
  int32_t value(int64_t n, int64_t k) const {
    const uint8_t *group = groupAt(n, k / f.group);
    const int64_t c = n % kPanel, q = (k % f.group) / 4, e = k % 4;
    int32_t code;
    if (f.bits == 8) {
      code = group[q * quadBytes + 4 * c + e];
    } else {
      const uint8_t byte = group[q * quadBytes + 4 * (c % 16) + e];
      code = c < 16 ? byte & 15 : byte >> 4;
    }
    if (f.codebook)
      return hyrt::kIq4nlValues[code];
    return f.asymmetric ? code : code - (f.bits == 4 ? 8 : 128);
  }

  /// The scale and (asymmetric) min of column n and group g.
  void scaleMin(int64_t n, int64_t g, double &scale, double &min) const {
    const uint8_t *group = groupAt(n, g), *tail = group + f.group / 4 * quadBytes;
    const int64_t c = n % kPanel;
    if (!f.super_group) {
      scale = f16At(tail + 2 * c);
      min = f.asymmetric ? f16At(tail + 64 + 2 * c) : 0.0;
      return;
    }
    const int64_t u = g * f.group / unit;
    const uint8_t *header = w + (n / kPanel) * panelBytes + u * unitBytes;
    scale = double(f16At(header + 2 * c)) * double(int8_t(tail[c]));
    min = f.asymmetric ? double(f16At(header + 64 + 2 * c)) * double(tail[32 + c]) : 0.0;
  }
};

} // namespace

extern "C" void hyrt_ref_matmul_codes(const float *x, const uint8_t *w, const float *bias,
                                      int64_t M, int64_t N, int64_t K, int64_t scheme,
                                      int64_t parts, float *out) {
  const int64_t rows = N / parts; // each part packed on its own panels
  const hyrt_code_format f = hyrt_gemm_code_format(int32_t(scheme));
  const int64_t group = f.group, groups = (K + group - 1) / group;
  // Activations per token, or per group for the two-level formats
  // (codegen/brgemm.h): each group then quantized as a row of its own.
  std::vector<int8_t> q(size_t(M * K));
  std::vector<float> aScale(size_t(M * groups));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t g = 0; g < (f.super_group ? groups : 1); ++g) {
      const int64_t k0 = f.super_group ? g * group : 0;
      const int64_t len = f.super_group ? std::min(group, K - k0) : K;
      float s;
      hyrt_ref_quantize_rows(x + m * K + k0, 1, len, q.data() + m * K + k0, &s);
      for (int64_t gg = g; gg < (f.super_group ? g + 1 : groups); ++gg)
        aScale[size_t(m * groups + gg)] = s;
    }
  const int64_t partBytes = CodesMatrix(w, int32_t(scheme), K).bytes(rows);
  for (int64_t part = 0; part < parts; ++part) {
    const CodesMatrix mat(w + part * partBytes, int32_t(scheme), K);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t r = 0; r < rows; ++r) {
        double acc = 0;
        for (int64_t g = 0; g < groups; ++g) {
          int64_t dot = 0, sum = 0;
          for (int64_t k = g * group; k < std::min(K, (g + 1) * group); ++k) {
            dot += int64_t(q[size_t(m * K + k)]) * mat.value(r, k);
            sum += q[size_t(m * K + k)];
          }
          double scale, min;
          mat.scaleMin(r, g, scale, min);
          acc += double(aScale[size_t(m * groups + g)]) * (scale * double(dot) - min * double(sum));
        }
        const int64_t n = part * rows + r;
        out[m * N + n] = float(acc) + (bias ? bias[n] : 0.0f);
      }
  }
}

extern "C" void hyrt_ref_moe_grouped_matmul_codes(const float *x, const uint8_t *w,
                                                  const int32_t *offsets, int64_t num_rows,
                                                  int64_t num_experts, int64_t N, int64_t K,
                                                  int64_t scheme, int64_t parts, float *out) {
  const int64_t matrixBytes = parts * CodesMatrix(w, int32_t(scheme), K).bytes(N / parts);
  for (int64_t e = 0; e < num_experts; ++e) {
    const int64_t begin = offsets[e];
    const int64_t end = std::min<int64_t>(offsets[e + 1], num_rows);
    if (end > begin)
      hyrt_ref_matmul_codes(x + begin * K, w + e * matrixBytes, nullptr, end - begin, N, K,
                            scheme, parts, out + begin * N);
  }
}
