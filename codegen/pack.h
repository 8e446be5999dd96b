// Weight packing into the layouts the brgemm kernels read: [N][K] row-major
// (Hugging Face layout) -> K-major 32-column panels, padded with zeros in N and
// K so no kernel ever needs a tail path. Plus the conversions and
// quantizers that produce the kernels' inputs.
#pragma once

#include "codegen/brgemm.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace hyc::codegen {

/// Columns per packed panel.
constexpr int kPanelCols = 32;

/// Zero-initialized memory aligned to 64 bytes; buffers of 2 MiB or more are
/// aligned to 2 MiB and advised to use transparent huge pages.
class AlignedBuffer {
public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes);
  uint8_t *data() { return data_.get(); }
  const uint8_t *data() const { return data_.get(); }
  size_t size() const { return size_; }

private:
  struct Free {
    void operator()(uint8_t *p) const;
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t size_ = 0;
};

/// K steps of a panel: K (f32), ceil(K/2) (bf16 pairs), ceil(K/4) (s8 quads,
/// and the grouped layouts' code quads).
int64_t packed_k_steps(BLayout layout, int64_t k);
/// Bytes of one panel (each K step is 128 bytes; s8 panels end with
/// int32 comp[32]). Grouped layouts depend on the group: 0 here, see
/// grouped_panel_bytes.
int64_t packed_panel_bytes(BLayout layout, int64_t k);
/// Byte offset of comp[32] inside an s8 panel.
int64_t packed_comp_offset(int64_t k);

/// Weights packed for the kernels: ceil(N/32) panels of panel_bytes each.
struct PackedB {
  BLayout layout = BLayout::bf16_vnni2;
  int64_t n = 0; ///< logical columns (rows of the original [N][K] matrix)
  int64_t k = 0; ///< logical reduction length
  int64_t n_panels = 0;
  int64_t panel_bytes = 0;
  int64_t group = 0;       ///< grouped layouts: K elements per scale group
  bool asymmetric = false; ///< grouped layouts: panels carry mins
  int64_t super_group = 0; ///< grouped layouts: two-level scales when > 0
  Codebook codebook = Codebook::none; ///< grouped u4 layouts: code values
  AlignedBuffer data;

  const uint8_t *panel(int64_t p) const {
    return data.data() + p * panel_bytes;
  }
  /// s8 only: the panel's int32 comp[32] (128 * column sums; 0 in padding).
  const int32_t *comp(int64_t p) const {
    return reinterpret_cast<const int32_t *>(panel(p) + packed_comp_offset(k));
  }
};

/// fp32 -> bf16, round to nearest even; NaN stays a (quiet) NaN.
uint16_t f32_to_bf16(float x);
/// bf16 -> fp32 (exact).
float bf16_to_f32(uint16_t x);

/// [N][K] fp32 (row stride ldw elements) -> [ceil(N/32)][K][32] fp32.
PackedB pack_b_f32(const float *w, int64_t n, int64_t k, int64_t ldw);
/// [N][K] bf16 bits -> [ceil(N/32)][ceil(K/2)][32][2].
PackedB pack_b_bf16(const uint16_t *w, int64_t n, int64_t k, int64_t ldw);
/// [N][K] fp32, rounded to bf16 (RNE) -> [ceil(N/32)][ceil(K/2)][32][2].
PackedB pack_b_bf16_from_f32(const float *w, int64_t n, int64_t k, int64_t ldw);
/// [N][K] s8 -> [ceil(N/32)][ceil(K/4)][32][4] + int32 comp[32] per panel,
/// comp[n] = sum_k 128 * B[k][n].
PackedB pack_b_s8(const int8_t *w, int64_t n, int64_t k, int64_t ldw);
/// Per-group int8 weights (one scale per `group` K-elements): each 32-column
/// panel holds ceil(k / group) s8_vnni4 blocks of K = group, each with its
/// own comp row, the last zero padded; panel_bytes covers all of them. The
/// K = group kernel runs once per block (hyrt_cpu_gemm_w8a8_g128).
PackedB pack_b_s8_grouped(const int8_t *w, int64_t n, int64_t k, int64_t ldw,
                          int64_t group);
/// [N][K] e4m3fn codes (FP8 weight-only) -> the bf16_vnni2 order with one
/// byte per element, [ceil(N/32)][ceil(K/128) * 64][32][2], K zero padded
/// (code 0 is +0.0) to whole 128-element blocks: widening a panel's bytes
/// to 16 bits in place order (hyrt_cpu_f8_to_bf16) gives the bf16_vnni2
/// panel of K = 128 blocks the bf16 kernels read. panel_bytes covers all
/// blocks; layout says bf16_vnni2 (the kernels' B layout after widening).
PackedB pack_b_f8(const uint8_t *codes, int64_t n, int64_t k, int64_t ldw);
/// Symmetric int8 with one scale per (row, group of `group` K-elements):
/// scales [n][ceil(k / group)], scale = max|w| / 127 over the group.
void quantize_s8_per_group(const float *w, int64_t n, int64_t k, int64_t ldw,
                           int64_t group, int8_t *q, float *scales);

/// fp32 -> fp16 bits, round to nearest even (overflow to inf, NaN quiet).
uint16_t f32_to_f16(float x);
/// fp16 bits -> fp32 (exact).
float f16_to_f32(uint16_t x);

/// Bytes of one 32-column panel of a grouped layout (BrgemmDesc's
/// "Grouped integer kernels"): k / group groups, each group / 4 K quads of
/// codes (128 bytes for bits = 8, 64 for bits = 4), scales[32] fp16 and,
/// when asymmetric, mins[32] fp16. k must be a multiple of group.
int64_t grouped_panel_bytes(int bits, int64_t k, int64_t group,
                            bool asymmetric);
/// The same for any format: one-level as above; two-level, per super-block
/// d[32] fp16 (64 bytes), dmin[32] fp16 when asymmetric (64 bytes), then
/// per group its code quads and sc[32] int8 + m[32] uint8 (64 bytes).
int64_t grouped_panel_bytes(const GroupedFormat &format, int64_t k);

/// Packs unsigned codes [N][K] (one code per byte, row stride ldc, each
/// below 2^bits) with scales and mins [N][K/group] fp16 bits (mins nullptr:
/// symmetric) into the u4_grouped (bits 4) or u8_grouped (bits 8) layout.
/// Padding columns get the zero point (8 or 128) as codes when symmetric,
/// 0 when asymmetric, and scales and mins 0, so they produce 0. Throws
/// std::invalid_argument naming the first bad argument or code.
PackedB pack_b_grouped(const uint8_t *codes, int64_t n, int64_t k, int64_t ldc,
                       int bits, int64_t group, const uint16_t *scales_f16,
                       const uint16_t *mins_f16);
/// The same for a one-level format (super_group 0), which may name a code
/// book (IQ4_NL: 4-bit indices into hyrt::kIq4nlU8, symmetric); mins_f16
/// must be given exactly when format.asymmetric. A code book has no code
/// for its zero point 128, so its padding columns get code 0 and scale 0
/// (still exactly 0: every term is scaled by 0).
PackedB pack_b_grouped(const uint8_t *codes, int64_t n, int64_t k, int64_t ldc,
                       const GroupedFormat &format, const uint16_t *scales_f16,
                       const uint16_t *mins_f16);

/// Packs codes [N][K] (as above) with two-level scales (format.super_group
/// > 0, BrgemmDesc "Grouped integer kernels"): sub_scales and sub_mins
/// [N][K/group] (the int8 sc and uint8 m of each group), d_f16 and dmin_f16
/// [N][K/super_group] fp16 bits (the super-block factors). sub_mins and
/// dmin_f16 are given exactly when format.asymmetric. Stored exactly as
/// given, so GGUF Q4_K (u4, group 32, super 256, asymmetric), Q5_K (u8
/// codes 0..31, likewise), Q6_K (u8 codes q + 96, group 16, symmetric),
/// IQ4_XS (u4, iq4nl, sc = ls - 32) and AWQ (u4, group 32, super 128,
/// asymmetric, d = dmin = the group scale, sc = 1, m = the zero point) keep
/// their values bit for bit. Padding columns get d = dmin = 0 and sc = m =
/// 0 (codes as pack_b_grouped), so they produce exactly 0. Throws
/// std::invalid_argument naming the first bad argument or code.
PackedB pack_b_grouped_two_level(const uint8_t *codes, int64_t n, int64_t k,
                                 int64_t ldc, const GroupedFormat &format,
                                 const int8_t *sub_scales,
                                 const uint8_t *sub_mins, const uint16_t *d_f16,
                                 const uint16_t *dmin_f16);

/// Quantizes [N][K] fp32 weights (row stride ldw, K a multiple of group)
/// per (row, group) to unsigned codes [N][K] (contiguous) with fp16 scales
/// and, when asymmetric, fp16 mins [N][K/group]; the kernels then multiply
/// exactly dequantized = scale * (code - zp) (zp = 2^(bits-1)), or
/// scale * code - min.
///   symmetric:  scale = absmax / (2^(bits-1) - 1), rounded UP to fp16, so
///               |w / scale| <= 2^(bits-1) - 1 and no code clamps (code
///               0 stays unused, as in the signed range [-127, 127]).
///   asymmetric: min = -(group minimum) rounded up to fp16, then
///               scale = (max + min) / (2^bits - 1) rounded up, so every
///               (w + min) / scale lies in [0, 2^bits - 1].
/// code = round-half-even of the exact quotient from the rounded values,
/// so |w - dequantized| <= scale / 2 for every weight whose group's scale
/// stays finite in fp16 (|w| up to about 65504 * 7 for 4 bits). A group of
/// zeros gets scale 0 (and min 0) and codes zp (0 when asymmetric).
void quantize_grouped(const float *w, int64_t n, int64_t k, int64_t ldw,
                      int bits, int64_t group, bool asymmetric, uint8_t *codes,
                      uint16_t *scales_f16, uint16_t *mins_f16);

/// Symmetric per-output-channel quantization of [N][K] fp32 weights (row
/// stride ldw) into q [N][K] (contiguous): scale[n] = max_k |w| / 127,
/// q = round-half-even(w / scale) in [-127, 127]; an all-zero row gets
/// scale 1.
void quantize_s8_per_channel(const float *w, int64_t n, int64_t k, int64_t ldw,
                             int8_t *q, float *scales);

/// Per-token activation quantization for u8 x s8 kernels: scale[m] =
/// max_k |x| / 127, stored value u8 = round(x / scale) + 128.
void quantize_u8_per_token(const float *x, int64_t m, int64_t k, int64_t ldx,
                           uint8_t *q, int64_t ldq, float *scales);

} // namespace hyc::codegen
