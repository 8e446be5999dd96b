// compressed-tensors pack-quantized (int4, strategy group), as its
// pack_to_int32 writes it: per layer `<prefix>.weight_packed` I32
// [N, K / 8], each word 8 consecutive K-elements of one row in natural
// nibble order (element i in bits 4i..4i+3), each stored as q + 8 for the
// signed code q; `<prefix>.weight_scale` [N, K / group] in the model's
// float type; `<prefix>.weight_zero_point` absent for symmetric weights
// (zero 0, i.e. 8 once offset), I32 [ceil(N / 8), K / group] packed along N
// the same way (asymmetric), or I8 [N, K / group] signed (written unpacked,
// as symmetric layers keep their zeros); `<prefix>.weight_shape` [2], the
// unpacked [N, K]. w = scale * (q - zp) = scale * (stored - (zp + 8)).
#include "models/checkpoint/int4_formats.h"

#include "models/checkpoint/family.h"

#include <cmath>
#include <cstring>

namespace hyc::models::detail {

namespace {

uint32_t wordAt(const uint8_t *data, int64_t index) {
  uint32_t w;
  std::memcpy(&w, data + 4 * index, 4);
  return w;
}

/// The scales as fp16 bits: F16 as stored; BF16 / F32 converted, which the
/// check at open made exact.
Status scalesAsF16(const io::TensorView &v, std::vector<uint16_t> &bits) {
  bits.resize(size_t(v.numel()));
  if (v.dtype == io::DType::F16) {
    std::memcpy(bits.data(), v.data, bits.size() * 2);
    return Status();
  }
  Expected<std::vector<float>> f = io::to_f32(v);
  if (!f)
    return f.take_error();
  for (size_t i = 0; i < bits.size(); ++i)
    bits[i] = io::f32_to_f16((*f)[i]);
  return Status();
}

/// A BF16 / F32 scale is kept only when fp16 holds it exactly (the
/// StoredCodes layout has fp16 scales); the first that does not is named.
Status checkScalesFitF16(const io::SafetensorsModel &model, const std::string &name, int64_t groups,
                         const std::string &where) {
  Expected<io::TensorView> v = model.tensor(name);
  if (!v)
    return v.take_error();
  if (v->dtype == io::DType::F16)
    return Status();
  Expected<std::vector<float>> f = io::to_f32(*v);
  if (!f)
    return f.take_error();
  for (size_t i = 0; i < f->size(); ++i) {
    const float s = (*f)[i];
    if (!std::isfinite(s) || io::f16_to_f32(io::f32_to_f16(s)) != s)
      return Error(where + "'" + name + "'[" + std::to_string(int64_t(i) / groups) + "][" +
                   std::to_string(int64_t(i) % groups) + "] = " + std::to_string(s) +
                   " is not an fp16 value (hyc keeps int4 group scales as fp16)");
  }
  return Status();
}

Expected<Int4Layer> checkCt(const io::SafetensorsModel &model, const Int4Scheme &scheme,
                            const std::string &prefix, const std::string &where) {
  const Int4Format &format = ct_packed_format();
  const std::string codes = prefix + ".weight_packed";
  Expected<Int4Layer> packed =
      int4_packed_layer(model, where, prefix, codes, {1, true, "[N, K / 8]"}, scheme.group);
  if (!packed)
    return packed.take_error();
  Int4Layer layer = *packed;
  const int64_t g = scheme.group, groups = layer.k / g;
  const std::string dims = int4_dims(layer, codes, g);
  const std::string shapeName = prefix + ".weight_shape";
  const io::SafetensorsTensorInfo *shape = model.find_tensor(shapeName);
  if (!shape)
    return Error(where + "'" + shapeName + "' is missing (each " + format.name +
                 " layer stores weight_packed, weight_scale and weight_shape)");
  if (shape->shape != std::vector<int64_t>{2})
    return Error(where + "'" + shapeName + "' has shape " + io::shape_to_string(shape->shape) +
                 ", expected [2] (the unpacked [N, K])");
  const std::string scaleName = prefix + ".weight_scale";
  const io::SafetensorsTensorInfo *scale = model.find_tensor(scaleName);
  const std::string scaleDtype =
      scale && (scale->dtype_name == "BF16" || scale->dtype_name == "F32") ? scale->dtype_name
                                                                           : "F16";
  HYC_CKPT_TRY(check_int4_part(model, format, where, scaleName, scaleDtype, {layer.n, groups},
                               "[N, K / group_size], " + dims));
  HYC_CKPT_TRY(checkScalesFitF16(model, scaleName, groups, where));
  const std::string zeroName = prefix + ".weight_zero_point";
  const io::SafetensorsTensorInfo *zero = model.find_tensor(zeroName);
  if (!zero && !scheme.symmetric)
    return Error(where + "'" + zeroName + "' is missing (asymmetric weights store " +
                 "their zero points)");
  if (zero && zero->dtype_name == "I8") {
    HYC_CKPT_TRY(check_int4_part(model, format, where, zeroName, "I8", {layer.n, groups},
                                 "[N, K / group_size] unpacked, " + dims));
    Expected<io::TensorView> z = model.tensor(zeroName);
    if (!z)
      return z.take_error();
    for (int64_t i = 0; i < layer.n * groups; ++i)
      if (int8_t(z->data[i]) < -8 || int8_t(z->data[i]) > 7)
        return Error(where + "'" + zeroName + "'[" + std::to_string(i / groups) + "][" +
                     std::to_string(i % groups) + "] = " + std::to_string(int(int8_t(z->data[i]))) +
                     ", expected an int4 zero point in -8..7");
  } else if (zero) {
    HYC_CKPT_TRY(check_int4_part(model, format, where, zeroName, "I32", {(layer.n + 7) / 8, groups},
                                 "[ceil(N / 8), K / group_size] packed along N, " + dims));
  }
  return layer;
}

Status readCt(const io::SafetensorsModel &model, const Int4Scheme &scheme, const Int4Layer &layer,
              Int4GroupQuant &out) {
  const int64_t n = layer.n, k = layer.k, groups = k / scheme.group;
  const std::string zeroName = layer.prefix + ".weight_zero_point";
  const io::SafetensorsTensorInfo *zero = model.find_tensor(zeroName);
  const io::SafetensorsTensorInfo *scale = model.find_tensor(layer.prefix + ".weight_scale");
  if (!scale)
    return Error("int4 layer '" + layer.prefix + "': no weight_scale");
  const size_t scaleBytes = size_t(n * groups) * (scale->dtype_name == "F32" ? 4 : 2);
  std::vector<std::pair<std::string, size_t>> parts = {
      {layer.prefix + ".weight_packed", size_t(n * k / 2)},
      {layer.prefix + ".weight_scale", scaleBytes}};
  if (zero)
    parts.push_back({zeroName, zero->dtype_name == "I8" ? size_t(n * groups)
                                                        : size_t((n + 7) / 8 * groups * 4)});
  std::vector<io::TensorView> v;
  HYC_CKPT_TRY(int4_views(model, layer, parts, v));
  out = Int4GroupQuant();
  out.n = n, out.k = k, out.group = scheme.group;
  out.q.resize(size_t(n * k));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < k / 8; ++j) {
      const uint32_t w = wordAt(v[0].data, r * (k / 8) + j);
      for (int i = 0; i < 8; ++i)
        out.q[size_t(r * k + 8 * j + i)] = uint8_t((w >> (4 * i)) & 15u);
    }
  HYC_CKPT_TRY(scalesAsF16(v[1], out.scales));
  out.zeros.assign(size_t(n * groups), 8); // symmetric: q - 0 = stored - 8
  if (zero && zero->dtype_name == "I8") {
    for (int64_t i = 0; i < n * groups; ++i)
      out.zeros[size_t(i)] = uint8_t(int(int8_t(v[2].data[i])) + 8);
  } else if (zero) {
    for (int64_t r = 0; r < n; ++r)
      for (int64_t g = 0; g < groups; ++g) {
        const uint32_t w = wordAt(v[2].data, (r / 8) * groups + g);
        out.zeros[size_t(r * groups + g)] = uint8_t((w >> (4 * (r % 8))) & 15u);
      }
  }
  release_int4_views(v);
  return Status();
}

} // namespace

const Int4Format &ct_packed_format() {
  static const Int4Format format = [] {
    Int4Format f;
    f.name = "compressed-tensors pack-quantized";
    f.codes = ".weight_packed";
    f.parts = {".weight_packed", ".weight_scale", ".weight_shape"};
    f.optional_parts = {".weight_zero_point"};
    f.only_with_codes = {".weight_zero_point", ".weight_shape"};
    f.check = checkCt;
    f.read = readCt;
    return f;
  }();
  return format;
}

} // namespace hyc::models::detail
