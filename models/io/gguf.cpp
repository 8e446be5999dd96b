// GGUF reader: parses header, metadata and tensor infos with bounds checks,
// and hands out typed metadata and zero-copy tensor views.
#include "models/io/gguf.h"

#include "models/io/gguf_dequant.h"

#include "models/io/byte_reader.h"

#include <cstdio>
#include <cstring>
#include <limits>
#include <new>

namespace hyc::io {

using detail::ByteReader;
using detail::ParseError;

namespace {

constexpr int kMaxArrayDepth = 8;
constexpr uint32_t kMaxDims = 4;

bool isUnsignedInt(GgufType t) {
  return t == GgufType::UINT8 || t == GgufType::UINT16 ||
         t == GgufType::UINT32 || t == GgufType::UINT64;
}
bool isSignedInt(GgufType t) {
  return t == GgufType::INT8 || t == GgufType::INT16 || t == GgufType::INT32 ||
         t == GgufType::INT64;
}

// Bytes of one scalar element, 0 for STRING/ARRAY/invalid.
size_t scalarSize(GgufType t) {
  switch (t) {
  case GgufType::UINT8:
  case GgufType::INT8:
  case GgufType::BOOL:
    return 1;
  case GgufType::UINT16:
  case GgufType::INT16:
    return 2;
  case GgufType::UINT32:
  case GgufType::INT32:
  case GgufType::FLOAT32:
    return 4;
  case GgufType::UINT64:
  case GgufType::INT64:
  case GgufType::FLOAT64:
    return 8;
  default:
    return 0;
  }
}

// Decodes one scalar of type `t` at `p` into the matching GgufValue field.
void decodeScalar(GgufType t, const uint8_t *p, GgufValue &v) {
  v.type = t;
  auto load = [p](auto x) {
    std::memcpy(&x, p, sizeof(x));
    return x;
  };
  switch (t) {
  case GgufType::UINT8:
    v.u = load(uint8_t());
    break;
  case GgufType::BOOL:
    v.u = load(uint8_t()) != 0;
    break;
  case GgufType::UINT16:
    v.u = load(uint16_t());
    break;
  case GgufType::UINT32:
    v.u = load(uint32_t());
    break;
  case GgufType::UINT64:
    v.u = load(uint64_t());
    break;
  case GgufType::INT8:
    v.i = load(int8_t());
    break;
  case GgufType::INT16:
    v.i = load(int16_t());
    break;
  case GgufType::INT32:
    v.i = load(int32_t());
    break;
  case GgufType::INT64:
    v.i = load(int64_t());
    break;
  case GgufType::FLOAT32:
    v.f = load(float());
    break;
  case GgufType::FLOAT64:
    v.f = load(double());
    break;
  default:
    break;
  }
}

GgufType checkedType(uint32_t raw, const char *what) {
  if (raw > static_cast<uint32_t>(GgufType::FLOAT64))
    throw ParseError(std::string("invalid ") + what + " " +
                     std::to_string(raw) + ", expected 0..12");
  return static_cast<GgufType>(raw);
}

std::string readGgufString(ByteReader &r, const char *what) {
  uint64_t len = r.read<uint64_t>(what);
  return r.readString(len, what);
}

GgufValue readValue(ByteReader &r, GgufType type, int depth) {
  GgufValue v;
  v.type = type;
  if (size_t size = scalarSize(type)) {
    decodeScalar(type, r.take(size, "metadata value"), v);
    return v;
  }
  if (type == GgufType::STRING) {
    v.str = readGgufString(r, "string value");
    return v;
  }
  // ARRAY
  v.elem_type =
      checkedType(r.read<uint32_t>("array element type"), "array element type");
  v.count = r.read<uint64_t>("array length");
  const std::string left = ", only " + std::to_string(r.remaining()) + " left";
  const std::string what = "truncated: array of " + std::to_string(v.count) +
                           " " + gguf_type_name(v.elem_type);
  if (size_t size = scalarSize(v.elem_type)) {
    if (v.count > r.remaining() / size)
      throw ParseError(what + " needs " + std::to_string(size) + " bytes each" +
                       left);
    v.raw = r.take(v.count * size, "array data");
  } else if (v.elem_type == GgufType::STRING) {
    if (v.count > r.remaining() / 8)
      throw ParseError(what + " needs at least 8 bytes each" + left);
    v.strings.reserve(static_cast<size_t>(v.count));
    for (uint64_t i = 0; i < v.count; ++i)
      v.strings.push_back(readGgufString(r, "array string"));
  } else {
    if (depth >= kMaxArrayDepth)
      throw ParseError("arrays nested deeper than " +
                       std::to_string(kMaxArrayDepth));
    if (v.count > r.remaining() / 12)
      throw ParseError(what + " needs at least 12 bytes each" + left);
    v.arrays.reserve(static_cast<size_t>(v.count));
    for (uint64_t i = 0; i < v.count; ++i)
      v.arrays.push_back(readValue(r, GgufType::ARRAY, depth + 1));
  }
  return v;
}

/// The ggml types hyc reads and their TensorView types.
constexpr std::pair<uint32_t, DType> kReadableTypes[] = {
    {GGML_F32, DType::F32},       {GGML_F16, DType::F16},
    {GGML_BF16, DType::BF16},     {GGML_Q4_0, DType::Q4_0},
    {GGML_Q4_1, DType::Q4_1},     {GGML_Q5_0, DType::Q5_0},
    {GGML_Q5_1, DType::Q5_1},     {GGML_Q8_0, DType::Q8_0},
    {GGML_Q2_K, DType::Q2_K},     {GGML_Q3_K, DType::Q3_K},
    {GGML_Q4_K, DType::Q4_K},     {GGML_Q5_K, DType::Q5_K},
    {GGML_Q6_K, DType::Q6_K},     {GGML_IQ4_NL, DType::IQ4_NL},
    {GGML_IQ4_XS, DType::IQ4_XS}, {GGML_MXFP4, DType::MXFP4},
    {GGML_I8, DType::I8},         {GGML_I32, DType::I32},
};

bool dtypeForGgml(uint32_t ggmlType, DType &dtype) {
  for (const auto &[ggml, d] : kReadableTypes)
    if (ggml == ggmlType) {
      dtype = d;
      return true;
    }
  return false;
}

std::string printableMagic(const uint8_t *p, size_t n) {
  std::string text = "'", hex;
  for (size_t i = 0; i < n; ++i) {
    text += (p[i] >= 32 && p[i] < 127) ? static_cast<char>(p[i]) : '.';
    char buf[4];
    std::snprintf(buf, sizeof buf, "%s%02x", i ? " " : "", p[i]);
    hex += buf;
  }
  return text + "' (" + hex + ")";
}

} // namespace

const char *gguf_type_name(GgufType type) {
  static const char *const kNames[] = {
      "uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
      "bool",  "string", "array",  "uint64", "int64",  "float64"};
  auto i = static_cast<uint32_t>(type);
  return i < 13 ? kNames[i] : "invalid";
}

const char *ggml_type_name(uint32_t t) {
  static const char *const kNames[] = {
      "F32",        "F16",        "Q4_0",       "Q4_1",     "Q4_2",    "Q4_3",
      "Q5_0",       "Q5_1",       "Q8_0",       "Q8_1",     "Q2_K",    "Q3_K",
      "Q4_K",       "Q5_K",       "Q6_K",       "Q8_K",     "IQ2_XXS", "IQ2_XS",
      "IQ3_XXS",    "IQ1_S",      "IQ4_NL",     "IQ3_S",    "IQ2_S",   "IQ4_XS",
      "I8",         "I16",        "I32",        "I64",      "F64",     "IQ1_M",
      "BF16",       "Q4_0_4_4",   "Q4_0_4_8",   "Q4_0_8_8", "TQ1_0",   "TQ2_0",
      "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4"};
  return t < sizeof(kNames) / sizeof(kNames[0]) ? kNames[t] : "unknown";
}

const char *ggml_supported_types() {
  static const std::string names = [] {
    std::string out;
    for (const auto &[ggml, d] : kReadableTypes)
      out += (out.empty() ? "" : ", ") + std::string(ggml_type_name(ggml));
    return out;
  }();
  return names.c_str();
}

std::string GgufValue::type_string() const {
  if (type != GgufType::ARRAY)
    return gguf_type_name(type);
  if (elem_type != GgufType::ARRAY)
    return std::string("array[") + gguf_type_name(elem_type) + "]";
  return "array[" +
         (arrays.empty() ? std::string("array") : arrays[0].type_string()) +
         "]";
}

/// Fills a GgufFile from its mapping; throws ParseError on malformed input.
class GgufParser {
public:
  static void parse(GgufFile &g) {
    ByteReader r(g.file_.data(), g.file_.size());
    const uint8_t *magic = r.take(4, "magic");
    if (std::memcmp(magic, "GGUF", 4) != 0)
      throw ParseError("bad magic: expected 'GGUF', found " +
                       printableMagic(magic, 4));
    g.version_ = r.read<uint32_t>("version");
    if (g.version_ != 2 && g.version_ != 3)
      throw ParseError("unsupported GGUF version " +
                       std::to_string(g.version_) + ", expected 2 or 3");
    uint64_t nTensors = r.read<uint64_t>("tensor count");
    uint64_t nKv = r.read<uint64_t>("metadata count");
    const std::string sizeText = std::to_string(r.size());
    if (nTensors > r.remaining() / 24)
      throw ParseError("header claims " + std::to_string(nTensors) +
                       " tensors, impossible in a file of " + sizeText +
                       " bytes (truncated or corrupt)");
    if (nKv > r.remaining() / 13)
      throw ParseError("header claims " + std::to_string(nKv) +
                       " metadata entries, impossible in a file of " +
                       sizeText + " bytes (truncated or corrupt)");
    parseMetadata(g, r, nKv);
    parseTensorInfos(g, r, nTensors);
  }

private:
  static void parseMetadata(GgufFile &g, ByteReader &r, uint64_t nKv) {
    g.metadata_.reserve(static_cast<size_t>(nKv));
    for (uint64_t i = 0; i < nKv; ++i) {
      std::string key;
      try {
        key = readGgufString(r, "metadata key");
        GgufType type =
            checkedType(r.read<uint32_t>("value type"), "value type");
        GgufValue value = readValue(r, type, 0);
        if (!g.metadata_index_.emplace(key, g.metadata_.size()).second)
          throw ParseError("duplicate key");
        g.metadata_.emplace_back(key, std::move(value));
      } catch (const ParseError &e) {
        throw ParseError("metadata entry " + std::to_string(i) +
                         (key.empty() ? "" : " (key '" + key + "')") + ": " +
                         e.what());
      }
    }
    if (const GgufValue *a = g.find("general.alignment")) {
      if (a->type != GgufType::UINT32)
        throw ParseError("key 'general.alignment' has type " +
                         a->type_string() + ", expected uint32");
      if (a->u == 0 || (a->u & (a->u - 1)) != 0)
        throw ParseError("key 'general.alignment' is " + std::to_string(a->u) +
                         ", expected a power of two");
      g.alignment_ = a->u;
    }
  }

  static void parseTensorInfos(GgufFile &g, ByteReader &r, uint64_t n) {
    g.tensors_.reserve(static_cast<size_t>(n));
    for (uint64_t i = 0; i < n; ++i) {
      GgufTensorInfo t;
      try {
        t.name = readGgufString(r, "tensor name");
        uint32_t nDims = r.read<uint32_t>("dimension count");
        if (nDims > kMaxDims)
          throw ParseError("has " + std::to_string(nDims) +
                           " dims, expected at most " +
                           std::to_string(kMaxDims));
        for (uint32_t d = 0; d < nDims; ++d) {
          uint64_t dim = r.read<uint64_t>("dimension");
          if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            throw ParseError("dimension " + std::to_string(d) + " is " +
                             std::to_string(dim) + ", too large");
          t.ne.push_back(static_cast<int64_t>(dim));
        }
        t.shape.assign(t.ne.rbegin(), t.ne.rend());
        t.ggml_type = r.read<uint32_t>("tensor type");
        t.offset = r.read<uint64_t>("tensor data offset");
      } catch (const ParseError &e) {
        throw ParseError("tensor info " + std::to_string(i) +
                         (t.name.empty() ? "" : " ('" + t.name + "')") + ": " +
                         e.what());
      }
      if (!g.tensor_index_.emplace(t.name, g.tensors_.size()).second)
        throw ParseError("duplicate tensor name '" + t.name +
                         "' (tensor infos " +
                         std::to_string(g.tensor_index_[t.name]) + " and " +
                         std::to_string(i) + ")");
      g.tensors_.push_back(std::move(t));
    }
    uint64_t end = r.offset();
    g.data_offset_ = (end + g.alignment_ - 1) / g.alignment_ * g.alignment_;
    if (n > 0 && g.data_offset_ > r.size())
      throw ParseError("tensor data section starts at offset " +
                       std::to_string(g.data_offset_) +
                       ", past the end of the file (" +
                       std::to_string(r.size()) + " bytes)");
    for (GgufTensorInfo &t : g.tensors_)
      checkTensorBounds(g, t, r.size());
  }

  static void checkTensorBounds(GgufFile &g, GgufTensorInfo &t,
                                uint64_t fileSize) {
    const std::string where = "tensor '" + t.name + "'";
    Expected<int64_t> numel = shape_numel(t.shape);
    if (!numel)
      throw ParseError(where + ": " + numel.error());
    if (t.offset % g.alignment_ != 0)
      throw ParseError(where + ": data offset " + std::to_string(t.offset) +
                       " is not a multiple of the alignment " +
                       std::to_string(g.alignment_));
    uint64_t available = fileSize - g.data_offset_;
    if (t.offset > available)
      throw ParseError(where + ": data offset " + std::to_string(t.offset) +
                       " (absolute " +
                       std::to_string(g.data_offset_ + t.offset) +
                       ") is past the end of the file (" +
                       std::to_string(fileSize) + " bytes)");
    DType dtype;
    if (!dtypeForGgml(t.ggml_type, dtype))
      return; // size unknown; tensor() reports the unsupported type
    // Blocks run along a row: a row that is not whole blocks has no
    // meaning in ggml (and would split a block between two rows here).
    QuantBlock block;
    if (quant_block(dtype, &block) && !t.ne.empty() &&
        t.ne[0] % block.elements != 0)
      throw ParseError(where + " of type " + ggml_type_name(t.ggml_type) +
                       " has rows of ne[0]=" + std::to_string(t.ne[0]) +
                       " values, expected a multiple of " +
                       std::to_string(block.elements) + " (the " +
                       ggml_type_name(t.ggml_type) + " block size)");
    Expected<size_t> bytes = dtype_data_bytes(dtype, *numel);
    if (!bytes)
      throw ParseError(where + ": " + bytes.error());
    t.nbytes = *bytes;
    if (t.nbytes > available - t.offset)
      throw ParseError(
          where + ": data [" + std::to_string(g.data_offset_ + t.offset) +
          ", " + std::to_string(g.data_offset_ + t.offset + t.nbytes) + ") (" +
          std::to_string(t.nbytes) + " bytes of " +
          ggml_type_name(t.ggml_type) + " " + shape_to_string(t.shape) +
          ") extends past the end of the file (" + std::to_string(fileSize) +
          " bytes)");
  }
};

Expected<GgufFile> GgufFile::open(const std::string &path) {
  Expected<MappedFile> mapped = MappedFile::open(path);
  if (!mapped)
    return mapped.take_error();
  GgufFile g;
  g.file_ = std::move(*mapped);
  try {
    GgufParser::parse(g);
  } catch (const ParseError &e) {
    return Error(path + ": " + e.what());
  } catch (const std::bad_alloc &) {
    return Error(path + ": out of memory while parsing GGUF metadata");
  }
  return g;
}

const GgufValue *GgufFile::find(const std::string &key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

Expected<const GgufValue *> GgufFile::lookup(const std::string &key) const {
  if (const GgufValue *v = find(key))
    return v;
  return Error(path() + ": missing key '" + key + "'");
}

Error GgufFile::typeError(const std::string &key, const GgufValue &v,
                          const char *expected) const {
  return Error(path() + ": key '" + key + "' has type " + v.type_string() +
               ", expected " + expected);
}

namespace {

// Converts an integer GgufValue to T; false if it does not fit.
template <typename T> bool intFits(const GgufValue &v, T &out) {
  using L = std::numeric_limits<T>;
  if (isUnsignedInt(v.type)) {
    if (v.u > static_cast<uint64_t>(L::max()))
      return false;
    out = static_cast<T>(v.u);
    return true;
  }
  if (v.i < 0) {
    if (!L::is_signed || v.i < static_cast<int64_t>(L::min()))
      return false;
  } else if (static_cast<uint64_t>(v.i) > static_cast<uint64_t>(L::max())) {
    return false;
  }
  out = static_cast<T>(v.i);
  return true;
}

std::string intText(const GgufValue &v) {
  return isUnsignedInt(v.type) ? std::to_string(v.u) : std::to_string(v.i);
}

template <typename T>
Expected<T> getInt(const GgufFile &g, const std::string &key,
                   const char *typeName) {
  const GgufValue *v = g.find(key);
  if (!v)
    return Error(g.path() + ": missing key '" + key + "'");
  if (!isUnsignedInt(v->type) && !isSignedInt(v->type))
    return Error(g.path() + ": key '" + key + "' has type " + v->type_string() +
                 ", expected " + typeName);
  T out{};
  if (!intFits(*v, out))
    return Error(g.path() + ": key '" + key + "' is " + intText(*v) +
                 ", which does not fit in " + typeName);
  return out;
}

} // namespace

Expected<uint32_t> GgufFile::get_u32(const std::string &key) const {
  return getInt<uint32_t>(*this, key, "uint32");
}
Expected<uint64_t> GgufFile::get_u64(const std::string &key) const {
  return getInt<uint64_t>(*this, key, "uint64");
}
Expected<int32_t> GgufFile::get_i32(const std::string &key) const {
  return getInt<int32_t>(*this, key, "int32");
}
Expected<int64_t> GgufFile::get_i64(const std::string &key) const {
  return getInt<int64_t>(*this, key, "int64");
}

Expected<double> GgufFile::get_f64(const std::string &key) const {
  Expected<const GgufValue *> v = lookup(key);
  if (!v)
    return v.take_error();
  if ((*v)->type != GgufType::FLOAT32 && (*v)->type != GgufType::FLOAT64)
    return typeError(key, **v, "float32 or float64");
  return (*v)->f;
}

Expected<float> GgufFile::get_f32(const std::string &key) const {
  Expected<double> d = get_f64(key);
  if (!d)
    return d.take_error();
  return static_cast<float>(*d);
}

Expected<bool> GgufFile::get_bool(const std::string &key) const {
  Expected<const GgufValue *> v = lookup(key);
  if (!v)
    return v.take_error();
  if ((*v)->type != GgufType::BOOL)
    return typeError(key, **v, "bool");
  return (*v)->u != 0;
}

Expected<std::string> GgufFile::get_string(const std::string &key) const {
  Expected<const GgufValue *> v = lookup(key);
  if (!v)
    return v.take_error();
  if ((*v)->type != GgufType::STRING)
    return typeError(key, **v, "string");
  return (*v)->str;
}

Expected<std::vector<std::string>>
GgufFile::get_string_array(const std::string &key) const {
  Expected<const GgufValue *> v = lookup(key);
  if (!v)
    return v.take_error();
  if ((*v)->type != GgufType::ARRAY || (*v)->elem_type != GgufType::STRING)
    return typeError(key, **v, "array[string]");
  return (*v)->strings;
}

Expected<std::vector<float>>
GgufFile::get_f32_array(const std::string &key) const {
  Expected<const GgufValue *> v = lookup(key);
  if (!v)
    return v.take_error();
  const GgufValue &a = **v;
  if (a.type != GgufType::ARRAY ||
      (a.elem_type != GgufType::FLOAT32 && a.elem_type != GgufType::FLOAT64))
    return typeError(key, a, "array[float32]");
  std::vector<float> out(static_cast<size_t>(a.count));
  size_t size = scalarSize(a.elem_type);
  GgufValue elem;
  for (size_t i = 0; i < out.size(); ++i) {
    decodeScalar(a.elem_type, a.raw + i * size, elem);
    out[i] = static_cast<float>(elem.f);
  }
  return out;
}

Expected<std::vector<int32_t>>
GgufFile::get_i32_array(const std::string &key) const {
  Expected<const GgufValue *> v = lookup(key);
  if (!v)
    return v.take_error();
  const GgufValue &a = **v;
  if (a.type != GgufType::ARRAY ||
      (!isSignedInt(a.elem_type) && !isUnsignedInt(a.elem_type)))
    return typeError(key, a, "array[int32]");
  std::vector<int32_t> out(static_cast<size_t>(a.count));
  size_t size = scalarSize(a.elem_type);
  GgufValue elem;
  for (size_t i = 0; i < out.size(); ++i) {
    decodeScalar(a.elem_type, a.raw + i * size, elem);
    if (!intFits(elem, out[i]))
      return Error(path() + ": key '" + key + "' element " + std::to_string(i) +
                   " is " + intText(elem) + ", which does not fit in int32");
  }
  return out;
}

const GgufTensorInfo *GgufFile::find_tensor(const std::string &name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Expected<TensorView> GgufFile::tensor(const std::string &name) const {
  const GgufTensorInfo *t = find_tensor(name);
  if (!t)
    return Error(path() + ": no tensor named '" + name + "'");
  TensorView view;
  if (!dtypeForGgml(t->ggml_type, view.dtype))
    return Error(path() + ": unsupported tensor type " +
                 std::to_string(t->ggml_type) + " (" +
                 ggml_type_name(t->ggml_type) + ") for tensor '" + name +
                 "', supported: " + ggml_supported_types());
  view.name = name;
  view.shape = t->shape;
  view.data = file_.data() + data_offset_ + t->offset;
  view.nbytes = static_cast<size_t>(t->nbytes);
  return view;
}

Expected<std::vector<float>> GgufFile::read_f32(const std::string &name) const {
  Expected<TensorView> v = tensor(name);
  if (!v)
    return v.take_error();
  Expected<std::vector<float>> out = to_f32(*v);
  if (!out)
    return Error(path() + ": " + out.error());
  return out;
}

} // namespace hyc::io
