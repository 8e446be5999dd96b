// DType helpers and the conversions of every TensorView type to fp32.
#include "models/io/tensor.h"

#include "models/io/gguf_dequant.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace hyc::io {

namespace {

template <typename T> T loadUnaligned(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

const std::array<float, 256> &f8E4M3Table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int bits = 0; bits < 256; ++bits) {
      int sign = bits >> 7, exponent = (bits >> 3) & 0xF, mantissa = bits & 7;
      float magnitude;
      if (exponent == 0xF && mantissa == 7)
        magnitude = std::numeric_limits<float>::quiet_NaN();
      else if (exponent == 0)
        magnitude = std::ldexp(static_cast<float>(mantissa) / 8.0f, -6);
      else
        magnitude = std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f,
                               exponent - 7);
      t[bits] = sign ? -magnitude : magnitude;
    }
    return t;
  }();
  return table;
}

std::string describe(const TensorView &view) {
  return "tensor '" + view.name + "' (" + dtype_name(view.dtype) + " " +
         shape_to_string(view.shape) + ")";
}

// Reads a small float tensor (scales) of any float dtype into fp32.
Expected<std::vector<float>> scalesToF32(const TensorView &scale) {
  if (scale.dtype != DType::F32 && scale.dtype != DType::BF16 &&
      scale.dtype != DType::F16)
    return Error("scale " + describe(scale) +
                 " must be F32, BF16 or F16, found " + dtype_name(scale.dtype));
  return to_f32(scale);
}

} // namespace

const char *dtype_name(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::Q8_0:
    return "Q8_0";
  case DType::F8_E4M3:
    return "F8_E4M3";
  case DType::I8:
    return "I8";
  case DType::I32:
    return "I32";
  case DType::Q8_GROUPED:
    return "Q8_GROUPED";
  case DType::Q4_0:
    return "Q4_0";
  case DType::Q4_1:
    return "Q4_1";
  case DType::Q5_0:
    return "Q5_0";
  case DType::Q5_1:
    return "Q5_1";
  case DType::Q2_K:
    return "Q2_K";
  case DType::Q3_K:
    return "Q3_K";
  case DType::Q4_K:
    return "Q4_K";
  case DType::Q5_K:
    return "Q5_K";
  case DType::Q6_K:
    return "Q6_K";
  case DType::IQ4_NL:
    return "IQ4_NL";
  case DType::IQ4_XS:
    return "IQ4_XS";
  case DType::MXFP4:
    return "MXFP4";
  }
  return "?";
}

Expected<size_t> dtype_data_bytes(DType dtype, int64_t numel) {
  if (numel < 0)
    return Error("negative element count " + std::to_string(numel));
  uint64_t n = static_cast<uint64_t>(numel);
  // A wrapped byte count would pass the readers' bounds checks and then
  // size buffers by the element count.
  if (n > std::numeric_limits<size_t>::max() / 4)
    return Error("element count " + std::to_string(numel) +
                 " is too large: its byte size overflows");
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return static_cast<size_t>(n * 4);
  case DType::F16:
  case DType::BF16:
    return static_cast<size_t>(n * 2);
  case DType::F8_E4M3:
  case DType::I8:
  case DType::Q8_GROUPED:
    return static_cast<size_t>(n);
  default:
    break;
  }
  QuantBlock block;
  if (!quant_block(dtype, &block))
    return Error("unknown dtype");
  if (n % uint64_t(block.elements) != 0)
    return Error(std::string(dtype_name(dtype)) + " needs a multiple of " +
                 std::to_string(block.elements) + " elements, found " +
                 std::to_string(numel));
  return static_cast<size_t>(n / uint64_t(block.elements) *
                             uint64_t(block.bytes));
}

Expected<int64_t> shape_numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return Error("negative dimension in shape " + shape_to_string(shape));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      return Error("element count of shape " + shape_to_string(shape) +
                   " overflows int64");
    n *= d;
  }
  return n;
}

std::string shape_to_string(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t TensorView::numel() const {
  Expected<int64_t> n = shape_numel(shape);
  return n.ok() ? *n : 0;
}

float f16_to_f32(uint16_t bits) {
  int sign = bits >> 15, exponent = (bits >> 10) & 0x1F,
      mantissa = bits & 0x3FF;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 0x1F)
    magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN()
                         : std::numeric_limits<float>::infinity();
  else
    magnitude = std::ldexp(static_cast<float>(mantissa + 1024), exponent - 25);
  return sign ? -magnitude : magnitude;
}

float bf16_to_f32(uint16_t bits) {
  uint32_t word = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &word, 4);
  return f;
}

float f8_e4m3_to_f32(uint8_t bits) { return f8E4M3Table()[bits]; }

uint16_t f32_to_bf16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

uint16_t f32_to_f16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u)
    return sign | 0x7E00;
  if (abs >= 0x47800000u) // >= 65536 (incl. inf): overflow to infinity
    return sign | 0x7C00;
  if (abs < 0x38800000u) { // below 2^-14: f16 subnormal or zero
    float magnitude;
    std::memcpy(&magnitude, &abs, 4);
    return sign |
           static_cast<uint16_t>(std::nearbyint(std::ldexp(magnitude, 24)));
  }
  uint32_t half = ((abs >> 23) - 127 + 15) << 10 | ((abs & 0x7FFFFFu) >> 13);
  uint32_t rest = abs & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
    ++half; // a carry into the exponent is the correct rounding
  return sign | static_cast<uint16_t>(half);
}

Status to_f32(const TensorView &view, float *out) {
  Expected<int64_t> numel = shape_numel(view.shape);
  if (!numel)
    return Error(describe(view) + ": " + numel.error());
  Expected<size_t> expected = dtype_data_bytes(view.dtype, *numel);
  if (!expected)
    return Error(describe(view) + ": " + expected.error());
  if (*expected != view.nbytes)
    return Error(describe(view) + ": expected " + std::to_string(*expected) +
                 " bytes, found " + std::to_string(view.nbytes));
  const uint8_t *p = view.data;
  const size_t n = static_cast<size_t>(*numel);
  if (n == 0)
    return Status();
  switch (view.dtype) {
  case DType::F32:
    std::memcpy(out, p, n * 4);
    break;
  case DType::F16:
    for (size_t i = 0; i < n; ++i)
      out[i] = f16_to_f32(loadUnaligned<uint16_t>(p + 2 * i));
    break;
  case DType::BF16:
    for (size_t i = 0; i < n; ++i)
      out[i] = bf16_to_f32(loadUnaligned<uint16_t>(p + 2 * i));
    break;
  case DType::F8_E4M3:
    for (size_t i = 0; i < n; ++i)
      out[i] = f8_e4m3_to_f32(p[i]);
    break;
  case DType::I8:
    for (size_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(static_cast<int8_t>(p[i]));
    break;
  case DType::I32:
    for (size_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(loadUnaligned<int32_t>(p + 4 * i));
    break;
  case DType::Q8_GROUPED: {
    if (view.group_size <= 0 || !view.group_scales)
      return Error(describe(view) + ": Q8_GROUPED view without group scales");
    size_t gs = static_cast<size_t>(view.group_size);
    for (size_t i = 0; i < n; ++i) {
      float scale = loadUnaligned<float>(view.group_scales + 4 * (i / gs));
      out[i] = scale * static_cast<int8_t>(p[i]);
    }
    break;
  }
  default: // the block types; the size check above covered their bytes
    if (Status s = dequantize(view.dtype, p, *numel, out); !s)
      return Error(describe(view) + ": " + s.error());
    break;
  }
  return Status();
}

Expected<std::vector<float>> to_f32(const TensorView &view) {
  std::vector<float> out(static_cast<size_t>(view.numel()));
  Status s = to_f32(view, out.data());
  if (!s)
    return s.take_error();
  return out;
}

Expected<std::vector<float>> dequant_fp8_block(const TensorView &weight,
                                               const TensorView &scale_inv,
                                               int64_t block_n,
                                               int64_t block_k) {
  if (weight.dtype != DType::F8_E4M3 || weight.shape.size() != 2)
    return Error("FP8 block dequant: " + describe(weight) +
                 ", expected a 2-D F8_E4M3 tensor");
  if (block_n <= 0 || block_k <= 0)
    return Error("FP8 block dequant: block sizes must be positive");
  const int64_t n = weight.shape[0], k = weight.shape[1];
  const std::vector<int64_t> want = {(n + block_n - 1) / block_n,
                                     (k + block_k - 1) / block_k};
  if (scale_inv.shape != want)
    return Error("FP8 block dequant of '" + weight.name + "' " +
                 shape_to_string(weight.shape) + " with " +
                 std::to_string(block_n) + "x" + std::to_string(block_k) +
                 " blocks: scale '" + scale_inv.name + "' has shape " +
                 shape_to_string(scale_inv.shape) + ", expected " +
                 shape_to_string(want));
  Expected<std::vector<float>> scales = scalesToF32(scale_inv);
  if (!scales)
    return scales.take_error();
  Expected<std::vector<float>> w = to_f32(weight);
  if (!w)
    return w.take_error();
  std::vector<float> &out = *w;
  for (int64_t r = 0; r < n; ++r) {
    const float *scaleRow = scales->data() + (r / block_n) * want[1];
    float *row = out.data() + r * k;
    for (int64_t c = 0; c < k; ++c)
      row[c] *= scaleRow[c / block_k];
  }
  return std::move(*w);
}

Expected<std::vector<float>> dequant_int8_channel(const TensorView &weight,
                                                  const TensorView &scale) {
  if (weight.dtype != DType::I8 || weight.shape.size() != 2)
    return Error("INT8 channel dequant: " + describe(weight) +
                 ", expected a 2-D I8 tensor");
  const int64_t n = weight.shape[0], k = weight.shape[1];
  bool shapeOk = scale.shape == std::vector<int64_t>{n} ||
                 scale.shape == std::vector<int64_t>{n, 1};
  if (!shapeOk)
    return Error("INT8 channel dequant of '" + weight.name + "' " +
                 shape_to_string(weight.shape) + ": scale '" + scale.name +
                 "' has shape " + shape_to_string(scale.shape) +
                 ", expected [" + std::to_string(n) + "] or [" +
                 std::to_string(n) + ", 1]");
  Expected<std::vector<float>> scales = scalesToF32(scale);
  if (!scales)
    return scales.take_error();
  Expected<std::vector<float>> w = to_f32(weight);
  if (!w)
    return w.take_error();
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c)
      (*w)[r * k + c] *= (*scales)[r];
  return std::move(*w);
}

} // namespace hyc::io
