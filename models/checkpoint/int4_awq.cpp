// AutoAWQ's GEMM packing: per layer `<prefix>.qweight` I32 [K, N / 8] and
// `<prefix>.qzeros` I32 [K / group, N / 8], each word 8 output columns in
// AWQ's interleaved nibble order (int4_pack.h), and `<prefix>.scales` F16
// [K / group, N]; w[n][k] = scales[k / g][n] * (q[k][n] - z[k / g][n]).
#include "models/checkpoint/int4_formats.h"

#include "models/checkpoint/family.h"

#include <cstring>

namespace hyc::models::detail {

namespace {

Expected<Int4Layer> checkAwq(const io::SafetensorsModel &model, const Int4Scheme &scheme,
                             const std::string &prefix, const std::string &where) {
  const Int4Format &format = awq_format();
  const std::string codes = prefix + ".qweight";
  Expected<Int4Layer> packed =
      int4_packed_layer(model, where, prefix, codes, {0, false, "[K, N / 8]"}, scheme.group);
  if (!packed)
    return packed.take_error();
  Int4Layer layer = *packed;
  const int64_t g = scheme.group;
  const std::string dims = int4_dims(layer, codes, g);
  HYC_CKPT_TRY(check_int4_part(model, format, where, prefix + ".qzeros", "I32",
                               {layer.k / g, layer.n / 8}, "[K / group_size, N / 8], " + dims));
  HYC_CKPT_TRY(check_int4_part(model, format, where, prefix + ".scales", "F16",
                               {layer.k / g, layer.n}, "[K / group_size, N], " + dims));
  return layer;
}

Status readAwq(const io::SafetensorsModel &model, const Int4Scheme &scheme, const Int4Layer &layer,
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
  // AWQ stores K-major ([K][N] codes, [K / group][N] zeros and scales);
  // the weight is [N][K].
  std::vector<uint8_t> kMajor(size_t(k * n));
  unpack_awq_rows(v[0].data, k, n, kMajor.data());
  out.q.resize(size_t(n * k));
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c)
      out.q[size_t(c * k + r)] = kMajor[size_t(r * n + c)];
  std::vector<uint8_t> zMajor(size_t(groups * n));
  unpack_awq_rows(v[1].data, groups, n, zMajor.data());
  out.zeros.resize(size_t(n * groups));
  out.scales.resize(size_t(n * groups));
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t c = 0; c < n; ++c) {
      out.zeros[size_t(c * groups + g)] = zMajor[size_t(g * n + c)];
      std::memcpy(&out.scales[size_t(c * groups + g)], v[2].data + 2 * (g * n + c), 2);
    }
  release_int4_views(v);
  return Status();
}

} // namespace

const Int4Format &awq_format() {
  static const Int4Format format = [] {
    Int4Format f;
    f.name = "AWQ";
    f.codes = ".qweight";
    f.parts = {".qweight", ".qzeros", ".scales"};
    f.only_with_codes = {".qzeros", ".scales"};
    f.check = checkAwq;
    f.read = readAwq;
    return f;
  }();
  return format;
}

} // namespace hyc::models::detail
