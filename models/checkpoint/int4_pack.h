// Int4 weights as Hugging Face quantizers store them: the bit packing of
// AWQ GEMM's int32 words, and the asymmetric group quantizer `hyc synth
// --awq` uses. Pure functions over arrays: the loader (int4_layers.h) and
// the synthesizer share them; tests check them against their own unpacking.
#ifndef HYC_MODELS_CHECKPOINT_INT4_PACK_H
#define HYC_MODELS_CHECKPOINT_INT4_PACK_H

#include "models/checkpoint/model_spec.h"

#include <cstdint>
#include <vector>

namespace hyc::models {

/// AWQ GEMM's nibble order: nibble i (bits 4i..4i+3) of word j of a row
/// holds column 8j + kAwqNibbleColumn[i]. AutoAWQ interleaves even and odd
/// columns so that its GPU dequantizer can split a word into two halves of
/// adjacent pairs with one shift; a natural-order reader gets the columns
/// permuted, which is why the order is named here once.
inline constexpr int kAwqNibbleColumn[8] = {0, 2, 4, 6, 1, 3, 5, 7};

/// Packs `rows` x `cols` 4-bit values (row-major, each 0..15; cols a
/// multiple of 8) into AWQ GEMM words: rows x cols / 8 int32, row-major.
/// AWQ packs qweight [K, N / 8] and qzeros [K / group, N / 8] this way.
std::vector<int32_t> pack_awq_rows(const uint8_t *values, int64_t rows, int64_t cols);

/// The inverse: `words` is rows x cols / 8 little-endian int32 (any
/// alignment: a view into a mapped file), `values` gets rows x cols.
void unpack_awq_rows(const uint8_t *words, int64_t rows, int64_t cols, uint8_t *values);

/// A [N][K] matrix quantized to 4 bits with one fp16 scale and one zero
/// point per `group` consecutive K-elements of a row:
/// w[n][k] ~ scale[n][k / group] * (q[n][k] - zero[n][k / group]).
struct Int4GroupQuant {
  int64_t n = 0, k = 0, group = 0;
  std::vector<uint8_t> q; ///< [N][K], 0..15
  /// [N][K / group], 0..15 (16 where a GPTQ v1 file stores 15: zero - 1
  /// of a zero of 0, wrapped, which every v1 reader takes as 16).
  std::vector<uint8_t> zeros;
  std::vector<uint16_t> scales; ///< [N][K / group], fp16 bits, > 0
};

/// Asymmetric min/max quantization by groups of `group` (which must divide
/// k) along K. The group's range [min, max] is widened to hold 0 (as GPTQ's
/// quantizer does) so that the zero point z = round(-min / s) is a code;
/// s = (max - min) / 15 rounded up to fp16, so that max - min fits in 15
/// steps of the stored scale: then q = clamp(round(w / s) + z, 0, 15) is
/// within s / 2 of w for every element. An all-zero group gets s = 1, z = 0.
/// Fails on non-finite weights or a range too wide for an fp16 scale.
Expected<Int4GroupQuant> quantize_int4_groups(const float *w, int64_t n, int64_t k, int64_t group);

/// out[n][k] = fp16(scale) * (q - zero), n * k floats. Exact: an fp16
/// times an integer of at most 4 bits needs 15 significant bits.
void dequantize_int4_groups(const Int4GroupQuant &q, float *out);

/// `q` as StoredCodes "q4z128" (model_spec.h): codes = q, and for each 128
/// K-elements d = dmin = the group's scale, sub_scales = 1 and sub_mins =
/// the zero point. False (out untouched) when the group is not a multiple
/// of 128, which that layout cannot hold (one d per 128).
bool int4_groups_to_q4z128(const Int4GroupQuant &q, StoredCodes &out);

} // namespace hyc::models

#endif // HYC_MODELS_CHECKPOINT_INT4_PACK_H
