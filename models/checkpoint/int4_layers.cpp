// Finding and reading packed int4 layers, whatever the packing: the
// format (int4_formats.h) says which tensors make a layer and how to check
// and unpack them; this file walks the checkpoint's names with it.
#include "models/checkpoint/int4_layers.h"

#include "models/checkpoint/family.h"
#include "models/checkpoint/int4_formats.h"
#include "models/io/mapped_file.h"

namespace hyc::models::detail {

namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

const Int4Format &formatOf(const Int4Scheme &scheme) {
  if (scheme.method == "gptq")
    return gptq_format();
  if (scheme.method == "compressed-tensors")
    return ct_packed_format();
  return awq_format();
}

/// "qweight, qzeros and scales".
std::string partList(const Int4Format &format) {
  std::string out;
  for (size_t i = 0; i < format.parts.size(); ++i)
    out += (i == 0                         ? ""
            : i + 1 == format.parts.size() ? " and "
                                           : ", ") +
           format.parts[i].substr(1);
  return out;
}

} // namespace

Status check_int4_part(const io::SafetensorsModel &model, const Int4Format &format,
                       const std::string &where, const std::string &name, const std::string &dtype,
                       const std::vector<int64_t> &shape, const std::string &shapeWhy) {
  const io::SafetensorsTensorInfo *t = model.find_tensor(name);
  if (!t)
    return Error(where + "'" + name + "' is missing (each " + format.name + " layer stores " +
                 partList(format) + ")");
  if (t->dtype_name != dtype)
    return Error(where + "'" + name + "' has dtype " + t->dtype_name + ", expected " + dtype);
  if (t->shape != shape)
    return Error(where + "'" + name + "' has shape " + io::shape_to_string(t->shape) +
                 ", expected " + io::shape_to_string(shape) + " (" + shapeWhy + ")");
  return Status();
}

Status int4_views(const io::SafetensorsModel &model, const Int4Layer &layer,
                  const std::vector<std::pair<std::string, size_t>> &namesAndBytes,
                  std::vector<io::TensorView> &views) {
  views.clear();
  for (const auto &[name, bytes] : namesAndBytes) {
    Expected<io::TensorView> v = model.tensor(name);
    if (!v)
      return v.take_error();
    if (v->nbytes != bytes)
      return Error("int4 layer '" + layer.prefix + "': '" + name + "' holds " +
                   std::to_string(v->nbytes) + " bytes, expected " + std::to_string(bytes) +
                   " for N=" + std::to_string(layer.n) + ", K=" + std::to_string(layer.k));
    views.push_back(*v);
  }
  return Status();
}

void release_int4_views(const std::vector<io::TensorView> &views) {
  for (const io::TensorView &v : views)
    io::release_mapped_pages(v.data, v.nbytes);
}

Expected<Int4Layer> int4_packed_layer(const io::SafetensorsModel &model, const std::string &where,
                                      const std::string &prefix, const std::string &codes,
                                      const Int4Packing &packing, int64_t group) {
  const io::SafetensorsTensorInfo *q = model.find_tensor(codes);
  if (q->dtype_name != "I32")
    return Error(where + "'" + codes + "' has dtype " + q->dtype_name +
                 ", expected I32 (8 int4 codes per word)");
  if (q->shape.size() != 2 || q->shape[0] <= 0 || q->shape[1] <= 0)
    return Error(where + "'" + codes + "' has shape " + io::shape_to_string(q->shape) +
                 ", expected " + packing.shape + " with K and N positive");
  Int4Layer layer;
  layer.prefix = prefix;
  const int64_t kStored = q->shape[size_t(packing.kDim)], nStored = q->shape[size_t(1 - packing.kDim)];
  layer.k = packing.kPacked ? kStored * 8 : kStored;
  layer.n = packing.kPacked ? nStored : nStored * 8;
  if (layer.k % group != 0)
    return Error(where + "group_size " + std::to_string(group) +
                 " does not divide K=" + std::to_string(layer.k) + " ('" + codes + "' is " +
                 packing.shape + " = " + io::shape_to_string(q->shape) + ")");
  return layer;
}

std::string int4_dims(const Int4Layer &layer, const std::string &codes, int64_t group) {
  return "K=" + std::to_string(layer.k) + ", N=" + std::to_string(layer.n) + " from '" + codes +
         "', group_size " + std::to_string(group);
}

std::string int4_dtype_name(const Int4Scheme &scheme) {
  const std::string base = scheme.method == "gptq"                 ? "GPTQ_INT4"
                           : scheme.method == "compressed-tensors" ? "CT_INT4"
                                                                   : "AWQ_INT4";
  return scheme.group % 128 == 0 ? base : base + "_G" + std::to_string(scheme.group);
}

Expected<Int4Layers> find_int4_layers(const io::SafetensorsModel &model, const Int4Scheme &scheme,
                                      const std::string &origin) {
  const Int4Format &format = formatOf(scheme);
  Int4Layers layers;
  layers.scheme = scheme;
  const std::vector<std::string> names = model.tensor_names();
  for (const std::string &name : names) {
    if (!endsWith(name, format.codes))
      continue;
    const std::string prefix = name.substr(0, name.size() - format.codes.size());
    const std::string where = origin + ": " + format.name + " layer '" + prefix + "': ";
    Int4Layer layer;
    HYC_CKPT_ASSIGN(layer, format.check(model, scheme, prefix, where));
    if (model.has(prefix + ".weight"))
      return Error(where + "'" + prefix + ".weight' is stored beside '" + name +
                   "' (expected one of them: the layer is either packed or not)");
    layers.by_codes.emplace(name, std::move(layer));
    for (const auto *suffixes : {&format.parts, &format.optional_parts})
      for (const std::string &suffix : *suffixes)
        if (model.has(prefix + suffix))
          layers.parts.insert(prefix + suffix);
  }
  for (const std::string &name : names)
    for (const std::string &suffix : format.only_with_codes)
      if (endsWith(name, suffix) && !layers.parts.count(name))
        return Error(origin + ": '" + name + "' has no '" +
                     name.substr(0, name.size() - suffix.size()) + format.codes + "' (each " +
                     format.name + " layer stores " + partList(format) + ")");
  if (layers.by_codes.empty())
    return Error(origin + ": quantization_config.quant_method is '" + scheme.method +
                 "', but no tensor ends in '" + format.codes + "' (each " + format.name +
                 " layer stores " + partList(format) + ")");
  return layers;
}

Status read_int4_layer(const io::SafetensorsModel &model, const Int4Scheme &scheme,
                       const Int4Layer &layer, Int4GroupQuant &out) {
  return formatOf(scheme).read(model, scheme, layer, out);
}

} // namespace hyc::models::detail
