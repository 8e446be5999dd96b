// A synthetic linear weight quantized to int4 groups of 128 and written in
// AWQ GEMM's layout: K-major codes and zero points packed 8 output columns
// per int32 word, fp16 scales [K / 128, N].
#include "models/checkpoint/synth_awq.h"

#include "models/checkpoint/int4_pack.h"

#include <cstring>

namespace hyc::models::detail {

namespace {

io::SafetensorsEntry int32Entry(std::string name, std::vector<int64_t> shape,
                                const std::vector<int32_t> &words) {
  io::SafetensorsEntry e{std::move(name), io::DType::I32, std::move(shape), {}};
  e.bytes.resize(words.size() * 4);
  std::memcpy(e.bytes.data(), words.data(), e.bytes.size());
  return e;
}

} // namespace

Status quantize_entry_awq(io::SafetensorsEntry &weight, std::vector<io::SafetensorsEntry> &extra) {
  static const std::string kWeight = ".weight";
  const std::string &name = weight.name;
  if (weight.shape.size() != 2 || name.size() <= kWeight.size() ||
      name.compare(name.size() - kWeight.size(), kWeight.size(), kWeight) != 0)
    return Error("synth --awq: '" + name + "' is not a 2-D '<module>.weight'");
  const int64_t n = weight.shape[0], k = weight.shape[1];
  if (k % kSynthAwqGroup != 0 || n % 8 != 0)
    return Error("synth --awq: '" + name + "' is [N, K] = " + io::shape_to_string(weight.shape) +
                 "; AWQ needs K a multiple of " + std::to_string(kSynthAwqGroup) +
                 " (its group size) and N a " +
                 "multiple of 8 (codes per int32 word): pick a preset, --ffn or " +
                 "--expert-ffn whose widths are multiples of 128 (e.g. --preset " +
                 "small --ffn 512)");
  io::TensorView view;
  view.dtype = weight.dtype;
  view.shape = weight.shape;
  view.data = weight.bytes.data();
  view.nbytes = weight.bytes.size();
  Expected<std::vector<float>> w = io::to_f32(view);
  if (!w)
    return Error("synth --awq: '" + name + "': " + w.error());
  Expected<Int4GroupQuant> q = quantize_int4_groups(w->data(), n, k, kSynthAwqGroup);
  if (!q)
    return Error("synth --awq: '" + name + "': " + q.error());
  const int64_t groups = k / kSynthAwqGroup;
  // AWQ stores K-major: transpose [N][K] codes and [N][K / 128] zeros and
  // scales.
  std::vector<uint8_t> codes(size_t(k * n)), zeros(size_t(groups * n));
  std::vector<uint16_t> scales(size_t(groups * n));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < k; ++c)
      codes[size_t(c * n + r)] = q->q[size_t(r * k + c)];
    for (int64_t g = 0; g < groups; ++g) {
      zeros[size_t(g * n + r)] = q->zeros[size_t(r * groups + g)];
      scales[size_t(g * n + r)] = q->scales[size_t(r * groups + g)];
    }
  }
  const std::string prefix = name.substr(0, name.size() - kWeight.size());
  weight = int32Entry(prefix + ".qweight", {k, n / 8}, pack_awq_rows(codes.data(), k, n));
  extra.push_back(
      int32Entry(prefix + ".qzeros", {groups, n / 8}, pack_awq_rows(zeros.data(), groups, n)));
  io::SafetensorsEntry s{prefix + ".scales", io::DType::F16, {groups, n}, {}};
  s.bytes.resize(scales.size() * 2);
  std::memcpy(s.bytes.data(), scales.data(), s.bytes.size());
  extra.push_back(std::move(s));
  return Status();
}

} // namespace hyc::models::detail
