// safetensors reader: validates the JSON header against the file, opens
// sharded checkpoints through model.safetensors.index.json.
#include "models/io/safetensors.h"
#include "hyrt/support/json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace hyc::io {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct HeaderError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Element size for every safetensors dtype name hyc knows; 0 if unknown.
size_t dtypeElementBytes(const std::string &name) {
  static const std::map<std::string, size_t> kSizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};
  auto it = kSizes.find(name);
  return it == kSizes.end() ? 0 : it->second;
}

bool supportedDtype(const std::string &name, DType &out) {
  static const std::map<std::string, DType> kTypes = {
      {"F32", DType::F32},         {"F16", DType::F16}, {"BF16", DType::BF16},
      {"F8_E4M3", DType::F8_E4M3}, {"I8", DType::I8},   {"I32", DType::I32}};
  auto it = kTypes.find(name);
  if (it == kTypes.end())
    return false;
  out = it->second;
  return true;
}

uint64_t nonNegativeInt(const json &j, const std::string &what) {
  if (j.is_number_unsigned())
    return j.get<uint64_t>();
  if (j.is_number_integer() && j.get<int64_t>() >= 0)
    return static_cast<uint64_t>(j.get<int64_t>());
  throw HeaderError(what + " is " + j.dump() +
                    ", expected a non-negative integer");
}

std::string rangeText(uint64_t b, uint64_t e) {
  return "[" + std::to_string(b) + ", " + std::to_string(e) + "]";
}

} // namespace

/// Parses and validates a safetensors JSON header into a SafetensorsFile.
class SafetensorsHeaderParser {
public:
  static void parse(SafetensorsFile &f) {
    const uint64_t size = f.file_.size();
    if (size < 8)
      throw HeaderError("truncated: " + std::to_string(size) +
                        " bytes, too small for the 8-byte header length");
    uint64_t headerLen;
    std::memcpy(&headerLen, f.file_.data(), 8);
    if (headerLen > size - 8)
      throw HeaderError("header length " + std::to_string(headerLen) +
                        " extends past the end of the file (" +
                        std::to_string(size) + " bytes, header fits at most " +
                        std::to_string(size - 8) + ")");
    f.data_offset_ = 8 + headerLen;
    const char *text = reinterpret_cast<const char *>(f.file_.data() + 8);
    json header;
    if (std::string e = hyrt::parse_json(std::string_view(text, headerLen), &header);
        !e.empty())
      throw HeaderError("invalid JSON header: " + e);
    if (!header.is_object())
      throw HeaderError("JSON header is " + std::string(header.type_name()) +
                        ", expected an object");
    const uint64_t dataBytes = size - f.data_offset_;
    for (auto it = header.begin(); it != header.end(); ++it) {
      if (it.key() == "__metadata__") {
        parseMetadata(f, it.value());
        continue;
      }
      f.tensors_.push_back(parseEntry(it.key(), it.value(), dataBytes));
    }
    std::sort(f.tensors_.begin(), f.tensors_.end(),
              [](const auto &a, const auto &b) {
                return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
              });
    for (size_t i = 1; i < f.tensors_.size(); ++i) {
      const auto &prev = f.tensors_[i - 1], &cur = f.tensors_[i];
      if (cur.begin < prev.end && cur.begin != cur.end)
        throw HeaderError("tensors '" + prev.name + "' " +
                          rangeText(prev.begin, prev.end) + " and '" +
                          cur.name + "' " + rangeText(cur.begin, cur.end) +
                          " overlap");
    }
    for (size_t i = 0; i < f.tensors_.size(); ++i)
      f.index_.emplace(f.tensors_[i].name, i);
  }

private:
  static void parseMetadata(SafetensorsFile &f, const json &m) {
    if (!m.is_object())
      throw HeaderError("__metadata__ is " + std::string(m.type_name()) +
                        ", expected an object");
    for (auto it = m.begin(); it != m.end(); ++it)
      f.metadata_[it.key()] =
          it->is_string() ? it->get<std::string>() : it->dump();
  }

  static SafetensorsTensorInfo parseEntry(const std::string &name,
                                          const json &e, uint64_t dataBytes) {
    const std::string where = "tensor '" + name + "'";
    if (!e.is_object())
      throw HeaderError(where + " entry is " + std::string(e.type_name()) +
                        ", expected an object");
    SafetensorsTensorInfo t;
    t.name = name;
    auto dtype = e.find("dtype");
    if (dtype == e.end() || !dtype->is_string())
      throw HeaderError(where + ": missing or non-string 'dtype'");
    t.dtype_name = dtype->get<std::string>();
    t.supported = supportedDtype(t.dtype_name, t.dtype);
    auto shape = e.find("shape");
    if (shape == e.end() || !shape->is_array())
      throw HeaderError(where + ": missing or non-array 'shape'");
    for (const json &d : *shape) {
      uint64_t dim = nonNegativeInt(d, where + " shape dim");
      if (dim > static_cast<uint64_t>(INT64_MAX))
        throw HeaderError(where + ": shape dim " + std::to_string(dim) +
                          " too large");
      t.shape.push_back(static_cast<int64_t>(dim));
    }
    auto offsets = e.find("data_offsets");
    if (offsets == e.end() || !offsets->is_array() || offsets->size() != 2)
      throw HeaderError(where + ": 'data_offsets' must be [begin, end]");
    t.begin = nonNegativeInt((*offsets)[0], where + " data_offsets[0]");
    t.end = nonNegativeInt((*offsets)[1], where + " data_offsets[1]");
    if (t.begin > t.end)
      throw HeaderError(where + ": data_offsets " + rangeText(t.begin, t.end) +
                        " has begin > end");
    if (t.end > dataBytes)
      throw HeaderError(where + ": data_offsets " + rangeText(t.begin, t.end) +
                        " extend past the data section (" +
                        std::to_string(dataBytes) + " bytes)");
    Expected<int64_t> numel = shape_numel(t.shape);
    if (!numel)
      throw HeaderError(where + ": " + numel.error());
    if (size_t elem = dtypeElementBytes(t.dtype_name)) {
      uint64_t n = static_cast<uint64_t>(*numel);
      uint64_t span = t.end - t.begin;
      if (n > UINT64_MAX / elem || n * elem != span)
        throw HeaderError(
            where + ": dtype " + t.dtype_name + " x shape " +
            shape_to_string(t.shape) + " needs " + std::to_string(n) + " x " +
            std::to_string(elem) + " bytes, but data_offsets " +
            rangeText(t.begin, t.end) + " span " + std::to_string(span));
    }
    return t;
  }
};

Expected<SafetensorsFile> SafetensorsFile::open(const std::string &path) {
  Expected<MappedFile> mapped = MappedFile::open(path);
  if (!mapped)
    return mapped.take_error();
  SafetensorsFile f;
  f.file_ = std::move(*mapped);
  try {
    SafetensorsHeaderParser::parse(f);
  } catch (const std::exception &e) {
    return Error(path + ": " + e.what());
  }
  return f;
}

const SafetensorsTensorInfo *
SafetensorsFile::find_tensor(const std::string &name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Expected<TensorView> SafetensorsFile::tensor(const std::string &name) const {
  const SafetensorsTensorInfo *t = find_tensor(name);
  if (!t)
    return Error(path() + ": no tensor named '" + name + "'");
  if (!t->supported)
    return Error(path() + ": tensor '" + name + "' has unsupported dtype '" +
                 t->dtype_name +
                 "' (supported: F32, F16, BF16, F8_E4M3, I8, I32)");
  TensorView v;
  v.name = name;
  v.dtype = t->dtype;
  v.shape = t->shape;
  v.data = file_.data() + data_offset_ + t->begin;
  v.nbytes = static_cast<size_t>(t->end - t->begin);
  return v;
}

Expected<SafetensorsModel> SafetensorsModel::open(const std::string &path) {
  std::error_code ec;
  std::string file = path;
  if (fs::is_directory(path, ec)) {
    fs::path dir(path);
    if (fs::exists(dir / "model.safetensors.index.json", ec))
      file = (dir / "model.safetensors.index.json").string();
    else if (fs::exists(dir / "model.safetensors", ec))
      file = (dir / "model.safetensors").string();
    else
      return Error(path + ": directory has neither " +
                   "model.safetensors.index.json nor model.safetensors");
  }
  const std::string suffix = ".json";
  if (file.size() >= suffix.size() &&
      file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0)
    return open_index(file);
  Expected<SafetensorsFile> f = SafetensorsFile::open(file);
  if (!f)
    return f.take_error();
  SafetensorsModel m;
  m.path_ = file;
  for (const SafetensorsTensorInfo &t : f->tensor_infos())
    m.where_.emplace(t.name, 0);
  m.shards_.push_back(std::move(*f));
  return m;
}

Expected<SafetensorsModel>
SafetensorsModel::open_index(const std::string &indexPath) {
  Expected<MappedFile> mapped = MappedFile::open(indexPath);
  if (!mapped)
    return mapped.take_error();
  json index;
  const std::string_view text(reinterpret_cast<const char *>(mapped->data()),
                              mapped->size());
  if (std::string e = hyrt::parse_json(text, &index); !e.empty())
    return Error(indexPath + ": " + e);
  auto map = index.is_object() ? index.find("weight_map") : index.end();
  if (!index.is_object() || map == index.end() || !map->is_object())
    return Error(indexPath + ": missing object 'weight_map'");
  // Shards in order of first appearance; tensors mapped to shard indices.
  std::vector<std::string> shardNames;
  std::map<std::string, size_t> shardIndex;
  std::vector<std::pair<std::string, size_t>> mapping;
  for (auto it = map->begin(); it != map->end(); ++it) {
    if (!it->is_string())
      return Error(indexPath + ": weight_map entry '" + it.key() + "' is " +
                   it->type_name() + ", expected a file name string");
    std::string shard = it->get<std::string>();
    auto [pos, inserted] = shardIndex.emplace(shard, shardNames.size());
    if (inserted)
      shardNames.push_back(shard);
    mapping.emplace_back(it.key(), pos->second);
  }
  SafetensorsModel m;
  m.path_ = indexPath;
  fs::path dir = fs::path(indexPath).parent_path();
  for (const std::string &name : shardNames) {
    Expected<SafetensorsFile> f = SafetensorsFile::open((dir / name).string());
    if (!f)
      return Error(indexPath + ": shard '" + name +
                   "' named in weight_map: " + f.error());
    m.shards_.push_back(std::move(*f));
  }
  for (const auto &[tensor, shard] : mapping) {
    if (!m.shards_[shard].find_tensor(tensor))
      return Error(indexPath + ": weight_map puts tensor '" + tensor +
                   "' in shard '" + shardNames[shard] +
                   "', but that shard has no such tensor");
    m.where_.emplace(tensor, shard);
  }
  return m;
}

std::vector<std::string> SafetensorsModel::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(where_.size());
  for (const auto &entry : where_)
    names.push_back(entry.first);
  std::sort(names.begin(), names.end());
  return names;
}

const SafetensorsTensorInfo *
SafetensorsModel::find_tensor(const std::string &name) const {
  auto it = where_.find(name);
  return it == where_.end() ? nullptr : shards_[it->second].find_tensor(name);
}

Expected<TensorView> SafetensorsModel::tensor(const std::string &name) const {
  auto it = where_.find(name);
  if (it == where_.end())
    return Error(path_ + ": no tensor named '" + name + "'");
  return shards_[it->second].tensor(name);
}

Expected<std::vector<float>>
SafetensorsModel::read_f32(const std::string &name) const {
  Expected<TensorView> v = tensor(name);
  if (!v)
    return v.take_error();
  Expected<std::vector<float>> out = to_f32(*v);
  if (!out)
    return Error(shards_[where_.at(name)].path() + ": " + out.error());
  return out;
}

} // namespace hyc::io
