// A minimal GGUF v3 writer written from the format specification alone
// (ggml's docs/gguf.md), independent of hyc's own writer
// (models/io/gguf_writer.cpp), so that the loaders are tested against files
// whose layout was not derived from the code that reads them:
//
//   "GGUF" | u32 version 3 | u64 tensor_count | u64 kv_count
//   kv:     string key | u32 value type | value
//   tensor: string name | u32 n_dims | u64 ne[n_dims] (ne[0] innermost)
//           | u32 ggml type | u64 offset (from the data section, aligned)
//   padding to general.alignment (32 by default) | tensor data
//
// string = u64 byte length + bytes (no NUL); array = u32 element type + u64
// count + elements; everything little-endian.
#ifndef HYC_TEST_COMMON_GGUF_SPEC_WRITER_H
#define HYC_TEST_COMMON_GGUF_SPEC_WRITER_H

#include <cstdint>
#include <string>
#include <vector>

namespace hyc::test {

class GgufSpecWriter {
public:
  void u32(const std::string &key, uint32_t v);
  void i32(const std::string &key, int32_t v);
  void u64(const std::string &key, uint64_t v);
  void f32(const std::string &key, float v);
  void boolean(const std::string &key, bool v);
  void str(const std::string &key, const std::string &v);
  void strings(const std::string &key, const std::vector<std::string> &v);
  void f32s(const std::string &key, const std::vector<float> &v);
  void i32s(const std::string &key, const std::vector<int32_t> &v);

  /// An F32 tensor given in row-major order with its row-major shape
  /// (outermost first, as numpy / torch write it); the tensor info stores
  /// the dims reversed, ggml's ne order.
  void tensor(const std::string &name, const std::vector<int64_t> &shape,
              const std::vector<float> &values);
  /// An F16 tensor (values rounded to nearest even).
  void tensor_f16(const std::string &name, const std::vector<int64_t> &shape,
                  const std::vector<float> &values);

  /// A tensor of any ggml type given as its raw data (for the block types:
  /// the blocks of the flattened tensor, e.g. made by the encoders below).
  void tensor_raw(const std::string &name, const std::vector<int64_t> &shape,
                  uint32_t ggml_type, std::vector<uint8_t> data);

  /// The whole file; `alignment` also becomes general.alignment when it is
  /// not the default 32.
  std::vector<uint8_t> bytes(uint32_t alignment = 32) const;
  /// Writes bytes() to `path`; false on an I/O error.
  bool write(const std::string &path, uint32_t alignment = 32) const;

private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;
    uint32_t ggml_type;
    std::vector<uint8_t> data;
  };
  std::vector<uint8_t> &kv(const std::string &key, uint32_t type);

  uint64_t kv_count_ = 0;
  std::vector<uint8_t> kvs_;
  std::vector<Tensor> tensors_;
};

/// `v` rounded to IEEE half precision (nearest even) and widened back: the
/// value a block scale written from `v` holds.
float fp16_round(float v);

/// Encoders of ggml's block-quantized types, written from the block layouts
/// of the format definition (ggml-common.h's block_* structs, packed as
/// ggml's quantize_row_*_ref packs them). Each takes the fields of one
/// block in element order: scales as floats (stored as fp16, so pass values
/// that fp16_round leaves unchanged, or compare with fp16_round's), integer
/// codes already offset as stored (Q4_0's q in 0..15 means q - 8, Q3_K's
/// 3-bit q in 0..7 means q - 4, Q6_K's q in 0..63 means q - 32, 6-bit
/// scales of Q3_K / IQ4_XS in 0..63 mean sc - 32), and returns the block's
/// bytes. Out-of-range codes are masked to their field width.
namespace ggml_blocks {

/// ggml tensor type ids.
enum : uint32_t {
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kMXFP4 = 39,
};

using Codes = std::vector<int>; ///< one per element of the block

/// 34 bytes: f16 d | int8 q[32].
std::vector<uint8_t> q8_0(float d, const Codes &q);
/// 18 bytes: f16 d | qs[16], element j in the low nibble of qs[j], j + 16
/// in its high nibble.
std::vector<uint8_t> q4_0(float d, const Codes &q);
/// 20 bytes: f16 d | f16 m | qs[16] as Q4_0.
std::vector<uint8_t> q4_1(float d, float m, const Codes &q);
/// 22 bytes: f16 d | u32 qh (bit j = bit 4 of element j) | qs[16] as Q4_0.
std::vector<uint8_t> q5_0(float d, const Codes &q);
/// 24 bytes: f16 d | f16 m | u32 qh | qs[16].
std::vector<uint8_t> q5_1(float d, float m, const Codes &q);
/// 18 bytes: f16 d | qs[16] (indices into the IQ4_NL table) as Q4_0.
std::vector<uint8_t> iq4_nl(float d, const Codes &idx);
/// 17 bytes: u8 E8M0 exponent | qs[16] (e2m1 codes) as Q4_0.
std::vector<uint8_t> mxfp4(uint8_t e, const Codes &idx);
/// 84 bytes: scales[16] (sc | m << 4, per 16 elements) | qs[64] | f16 d |
/// f16 dmin. sc, m: 16 each in 0..15; q: 256 in 0..3.
std::vector<uint8_t> q2_K(float d, float dmin, const Codes &sc, const Codes &m,
                          const Codes &q);
/// 110 bytes: hmask[32] | qs[64] | scales[12] | f16 d. sc: 16 in 0..63; q:
/// 256 in 0..7 (bit 2 goes to hmask, set = no -4).
std::vector<uint8_t> q3_K(float d, const Codes &sc, const Codes &q);
/// 144 bytes: f16 d | f16 dmin | scales[12] (6-bit sc and m per 32) |
/// qs[128]. sc, m: 8 in 0..63; q: 256 in 0..15.
std::vector<uint8_t> q4_K(float d, float dmin, const Codes &sc, const Codes &m,
                          const Codes &q);
/// 176 bytes: f16 d | f16 dmin | scales[12] | qh[32] | qs[128]; q in 0..31.
std::vector<uint8_t> q5_K(float d, float dmin, const Codes &sc, const Codes &m,
                          const Codes &q);
/// 210 bytes: ql[128] | qh[64] | int8 scales[16] | f16 d. sc: 16 int8;
/// q: 256 in 0..63.
std::vector<uint8_t> q6_K(float d, const Codes &sc, const Codes &q);
/// 136 bytes: f16 d | u16 scales_h | scales_l[4] | qs[128]. ls: 8 in 0..63;
/// idx: 256 in 0..15.
std::vector<uint8_t> iq4_xs(float d, const Codes &ls, const Codes &idx);

} // namespace ggml_blocks

} // namespace hyc::test

#endif // HYC_TEST_COMMON_GGUF_SPEC_WRITER_H
