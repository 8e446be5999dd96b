// AutoGPTQ's packing: per layer `<prefix>.qweight` I32 [K / 8, N], each word
// 8 consecutive K-rows of one column (nibble i, bits 4i..4i+3, is row
// 8j + i); `<prefix>.qzeros` I32 [K / group, N / 8], each word 8 consecutive
// columns in the same natural order, holding zero - zero_offset;
// `<prefix>.scales` F16 [K / group, N]; `<prefix>.g_idx` I32 [K], when
// present, must map row k to group k / group (no act-order).
#include "models/checkpoint/int4_formats.h"

#include "models/checkpoint/family.h"

#include <cstring>

namespace hyc::models::detail {

namespace {

uint32_t wordAt(const uint8_t *data, int64_t index) {
  uint32_t w;
  std::memcpy(&w, data + 4 * index, 4);
  return w;
}

/// g_idx, when stored, must be the identity grouping k / group: anything
/// else is act-order's permutation, which these groups cannot express.
Status checkGroupIndex(const io::SafetensorsModel &model, const Int4Layer &layer, int64_t group,
                       const std::string &where) {
  const std::string name = layer.prefix + ".g_idx";
  if (!model.has(name))
    return Status();
  HYC_CKPT_TRY(check_int4_part(model, gptq_format(), where, name, "I32", {layer.k},
                               "[K], K=" + std::to_string(layer.k)));
  Expected<io::TensorView> v = model.tensor(name);
  if (!v)
    return v.take_error();
  for (int64_t k = 0; k < layer.k; ++k) {
    const int32_t g = int32_t(wordAt(v->data, k));
    if (g != k / group)
      return Error(where + "'" + name + "'[" + std::to_string(k) + "] = " + std::to_string(g) +
                   ", expected " + std::to_string(k / group) +
                   " (k / group_size: a g_idx that reorders K is act-order, not read)");
  }
  return Status();
}

Expected<Int4Layer> checkGptq(const io::SafetensorsModel &model, const Int4Scheme &scheme,
                              const std::string &prefix, const std::string &where) {
  const Int4Format &format = gptq_format();
  const std::string codes = prefix + ".qweight";
  Expected<Int4Layer> packed =
      int4_packed_layer(model, where, prefix, codes, {0, true, "[K / 8, N]"}, scheme.group);
  if (!packed)
    return packed.take_error();
  Int4Layer layer = *packed;
  const int64_t g = scheme.group;
  if (layer.n % 8 != 0)
    return Error(where + "N=" + std::to_string(layer.n) + " ('" + codes +
                 "' is [K / 8, N]) is not a multiple of 8, which qzeros packs per word");
  const std::string dims = int4_dims(layer, codes, g);
  HYC_CKPT_TRY(check_int4_part(model, format, where, prefix + ".qzeros", "I32",
                               {layer.k / g, layer.n / 8}, "[K / group_size, N / 8], " + dims));
  HYC_CKPT_TRY(check_int4_part(model, format, where, prefix + ".scales", "F16",
                               {layer.k / g, layer.n}, "[K / group_size, N], " + dims));
  HYC_CKPT_TRY(checkGroupIndex(model, layer, g, where));
  return layer;
}

Status readGptq(const io::SafetensorsModel &model, const Int4Scheme &scheme, const Int4Layer &layer,
                Int4GroupQuant &out) {
  const int64_t n = layer.n, k = layer.k, groups = k / scheme.group;
  std::vector<io::TensorView> v;
  HYC_CKPT_TRY(int4_views(model, layer,
                          {{layer.prefix + ".qweight", size_t(k * n / 2)},
                           {layer.prefix + ".qzeros", size_t(groups * n / 2)},
                           {layer.prefix + ".scales", size_t(groups * n * 2)}},
                          v));
  out = Int4GroupQuant();
  out.n = n, out.k = k, out.group = scheme.group;
  out.q.resize(size_t(n * k));
  for (int64_t r = 0; r < k / 8; ++r)
    for (int64_t c = 0; c < n; ++c) {
      const uint32_t w = wordAt(v[0].data, r * n + c);
      for (int i = 0; i < 8; ++i)
        out.q[size_t(c * k + 8 * r + i)] = uint8_t((w >> (4 * i)) & 15u);
    }
  out.zeros.resize(size_t(n * groups));
  out.scales.resize(size_t(n * groups));
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t c = 0; c < n; ++c) {
      const uint32_t w = wordAt(v[1].data, g * (n / 8) + c / 8);
      // v1's stored 15 (a zero of 0, minus one, wrapped) reads back as 16,
      // as every GPTQ v1 reader computes it.
      out.zeros[size_t(c * groups + g)] =
          uint8_t(((w >> (4 * (c % 8))) & 15u) + unsigned(scheme.zero_offset));
      std::memcpy(&out.scales[size_t(c * groups + g)], v[2].data + 2 * (g * n + c), 2);
    }
  release_int4_views(v);
  return Status();
}

} // namespace

const Int4Format &gptq_format() {
  static const Int4Format format = [] {
    Int4Format f;
    f.name = "GPTQ";
    f.codes = ".qweight";
    f.parts = {".qweight", ".qzeros", ".scales"};
    f.optional_parts = {".g_idx"};
    f.only_with_codes = {".qzeros", ".scales", ".g_idx"};
    f.check = checkGptq;
    f.read = readGptq;
    return f;
  }();
  return format;
}

} // namespace hyc::models::detail
