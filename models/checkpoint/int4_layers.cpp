// AWQ quantization_config, the checks of each packed layer's tensors, and
// a layer unpacked from AWQ GEMM's words.
#include "models/checkpoint/int4_layers.h"

#include "models/checkpoint/family.h"
#include "models/io/mapped_file.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace hyc::models::detail {

namespace {

// AutoAWQ's tensor names, beside the module's `.weight` it replaces.
const std::string kCodes = ".qweight";
const std::string kZeros = ".qzeros";
const std::string kScales = ".scales";

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

/// Checks one tensor of a layer: present, of `dtype`, of `shape`; `shapeWhy`
/// says where the expected shape comes from.
Status checkPart(const io::SafetensorsModel &model, const std::string &where,
                 const std::string &name, const char *dtype,
                 const std::vector<int64_t> &shape, const std::string &shapeWhy) {
  const io::SafetensorsTensorInfo *t = model.find_tensor(name);
  if (!t)
    return Error(where + "'" + name + "' is missing (an AWQ layer stores " +
                 "qweight, qzeros and scales)");
  if (t->dtype_name != dtype)
    return Error(where + "'" + name + "' has dtype " + t->dtype_name + ", expected " +
                 dtype);
  if (t->shape != shape)
    return Error(where + "'" + name + "' has shape " + io::shape_to_string(t->shape) +
                 ", expected " + io::shape_to_string(shape) + " (" + shapeWhy + ")");
  return Status();
}

/// The [N, K] of an AWQ layer whose tensors agree with each other.
Expected<Int4Layer> checkAwqLayer(const io::SafetensorsModel &model,
                                  const Int4Scheme &scheme, const std::string &prefix,
                                  const std::string &origin) {
  const std::string where = origin + ": AWQ layer '" + prefix + "': ";
  const std::string codes = prefix + kCodes;
  const io::SafetensorsTensorInfo *q = model.find_tensor(codes);
  if (q->dtype_name != "I32")
    return Error(where + "'" + codes + "' has dtype " + q->dtype_name +
                 ", expected I32 (8 int4 codes per word)");
  if (q->shape.size() != 2 || q->shape[0] <= 0 || q->shape[1] <= 0)
    return Error(where + "'" + codes + "' has shape " + io::shape_to_string(q->shape) +
                 ", expected [K, N / 8] with K and N positive");
  Int4Layer layer;
  layer.prefix = prefix;
  layer.k = q->shape[0];
  layer.n = q->shape[1] * 8;
  const int64_t g = scheme.group;
  if (layer.k % g != 0)
    return Error(where + "group_size " + std::to_string(g) + " does not divide K=" +
                 std::to_string(layer.k) + " ('" + codes + "' is [K, N / 8] = " +
                 io::shape_to_string(q->shape) + ")");
  const std::string dims = "K=" + std::to_string(layer.k) + ", N=" +
                           std::to_string(layer.n) + " from '" + codes +
                           "', group_size " + std::to_string(g);
  HYC_CKPT_TRY(checkPart(model, where, prefix + kZeros, "I32",
                         {layer.k / g, layer.n / 8}, "[K / group_size, N / 8], " + dims));
  HYC_CKPT_TRY(checkPart(model, where, prefix + kScales, "F16",
                         {layer.k / g, layer.n}, "[K / group_size, N], " + dims));
  if (model.has(prefix + ".weight"))
    return Error(where + "'" + prefix + ".weight' is stored beside '" + codes +
                 "' (expected one of them: the layer is either packed or not)");
  return layer;
}

} // namespace

Expected<Int4Scheme> read_awq_scheme(const io::HfConfig &config) {
  const std::string where = config.path() + ": quantization_config (quant_method awq): ";
  Int4Scheme scheme;
  scheme.method = "awq";
  int64_t bits = 0;
  HYC_CKPT_ASSIGN(bits, config.get_int_or("quantization_config.bits", 4));
  if (bits != 4)
    return Error(where + "bits = " + std::to_string(bits) + ", expected 4 (hyc reads " +
                 "AWQ's 4-bit codes only)");
  HYC_CKPT_ASSIGN(scheme.group, config.get_int_or("quantization_config.group_size", 128));
  if (scheme.group <= 0 || scheme.group % 32 != 0)
    return Error(where + "group_size = " + std::to_string(scheme.group) +
                 ", expected a positive multiple of 32 (128 is AWQ's usual)");
  bool zeroPoint = true;
  HYC_CKPT_ASSIGN(zeroPoint, config.get_bool_or("quantization_config.zero_point", true));
  if (!zeroPoint)
    return Error(where + "zero_point = false, expected true (hyc reads AWQ's " +
                 "asymmetric codes with qzeros)");
  std::string version;
  HYC_CKPT_ASSIGN(version, config.get_string_or("quantization_config.version", "gemm"));
  // GEMV and the kernel-specific variants (exllama, marlin, ...) pack their
  // words differently; only GEMM's layout is implemented here.
  if (lower(version) != "gemm")
    return Error(where + "version = '" + version + "', expected 'gemm' (the " +
                 "qweight [K, N / 8] packing hyc reads)");
  return scheme;
}

std::string int4_dtype_name(const Int4Scheme &scheme) {
  return scheme.group % 128 == 0 ? "AWQ_INT4"
                                 : "AWQ_INT4_G" + std::to_string(scheme.group);
}

Expected<Int4Layers> find_int4_layers(const io::SafetensorsModel &model,
                                      const Int4Scheme &scheme,
                                      const std::string &origin) {
  Int4Layers layers;
  layers.scheme = scheme;
  const std::vector<std::string> names = model.tensor_names();
  for (const std::string &name : names) {
    if (!endsWith(name, kCodes))
      continue;
    const std::string prefix = name.substr(0, name.size() - kCodes.size());
    Int4Layer layer;
    HYC_CKPT_ASSIGN(layer, checkAwqLayer(model, scheme, prefix, origin));
    layers.by_codes.emplace(name, std::move(layer));
    for (const std::string *suffix : {&kCodes, &kZeros, &kScales})
      layers.parts.insert(prefix + *suffix);
  }
  for (const std::string &name : names)
    for (const std::string *suffix : {&kZeros, &kScales})
      if (endsWith(name, *suffix) && !layers.parts.count(name))
        return Error(origin + ": '" + name + "' has no '" +
                     name.substr(0, name.size() - suffix->size()) + kCodes +
                     "' (an AWQ layer stores qweight, qzeros and scales)");
  if (layers.by_codes.empty())
    return Error(origin + ": quantization_config.quant_method is 'awq', but no tensor " +
                 "is an AWQ layer (expected '<module>.qweight' with its qzeros and scales)");
  return layers;
}

Status read_int4_layer(const io::SafetensorsModel &model, const Int4Scheme &scheme,
                       const Int4Layer &layer, Int4GroupQuant &out) {
  Expected<io::TensorView> codes = model.tensor(layer.prefix + kCodes);
  if (!codes)
    return codes.take_error();
  Expected<io::TensorView> zeros = model.tensor(layer.prefix + kZeros);
  if (!zeros)
    return zeros.take_error();
  Expected<io::TensorView> scales = model.tensor(layer.prefix + kScales);
  if (!scales)
    return scales.take_error();
  const int64_t n = layer.n, k = layer.k, groups = k / scheme.group;
  if (codes->nbytes != size_t(k * n / 2) || zeros->nbytes != size_t(groups * n / 2) ||
      scales->nbytes != size_t(groups * n * 2))
    return Error("AWQ layer '" + layer.prefix + "': stored sizes disagree with N=" +
                 std::to_string(n) + ", K=" + std::to_string(k) + ", group_size " +
                 std::to_string(scheme.group));
  out = Int4GroupQuant();
  out.n = n, out.k = k, out.group = scheme.group;
  // AWQ stores K-major ([K][N] codes, [K / group][N] zeros and scales);
  // the weight is [N][K].
  std::vector<uint8_t> kMajor(size_t(k * n));
  unpack_awq_rows(codes->data, k, n, kMajor.data());
  out.q.resize(size_t(n * k));
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c)
      out.q[size_t(c * k + r)] = kMajor[size_t(r * n + c)];
  std::vector<uint8_t> zMajor(size_t(groups * n));
  unpack_awq_rows(zeros->data, groups, n, zMajor.data());
  out.zeros.resize(size_t(n * groups));
  out.scales.resize(size_t(n * groups));
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t c = 0; c < n; ++c) {
      out.zeros[size_t(c * groups + g)] = zMajor[size_t(g * n + c)];
      std::memcpy(&out.scales[size_t(c * groups + g)], scales->data + 2 * (g * n + c), 2);
    }
  for (const io::TensorView *v : {&*codes, &*zeros, &*scales})
    io::release_mapped_pages(v->data, v->nbytes);
  return Status();
}

} // namespace hyc::models::detail
