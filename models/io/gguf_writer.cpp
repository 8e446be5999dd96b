// GgufWriter: serializes metadata and tensors into a GGUF v3 file.
#include "models/io/gguf_writer.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

namespace hyc::io {

namespace {

template <typename T> void putLe(std::vector<uint8_t> &out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void putString(std::vector<uint8_t> &out, const std::string &s) {
  putLe<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

bool supportedTensorType(uint32_t t) {
  return t == GGML_F32 || t == GGML_F16 || t == GGML_BF16 || t == GGML_Q8_0 ||
         t == GGML_Q4_0 || t == GGML_I8 || t == GGML_I32;
}

DType dtypeOf(uint32_t t) {
  switch (t) {
  case GGML_F16:
    return DType::F16;
  case GGML_BF16:
    return DType::BF16;
  case GGML_Q8_0:
    return DType::Q8_0;
  case GGML_Q4_0:
    return DType::Q4_0;
  case GGML_I8:
    return DType::I8;
  case GGML_I32:
    return DType::I32;
  default:
    return DType::F32;
  }
}

} // namespace

#define HYC_GGUF_SCALAR(fn, ctype, tag)                                        \
  GgufWriteValue GgufWriteValue::fn(ctype v) {                                 \
    GgufWriteValue x;                                                          \
    x.type_ = GgufType::tag;                                                   \
    putLe(x.scalar_, v);                                                       \
    return x;                                                                  \
  }
HYC_GGUF_SCALAR(u8, uint8_t, UINT8)
HYC_GGUF_SCALAR(i8, int8_t, INT8)
HYC_GGUF_SCALAR(u16, uint16_t, UINT16)
HYC_GGUF_SCALAR(i16, int16_t, INT16)
HYC_GGUF_SCALAR(u32, uint32_t, UINT32)
HYC_GGUF_SCALAR(i32, int32_t, INT32)
HYC_GGUF_SCALAR(u64, uint64_t, UINT64)
HYC_GGUF_SCALAR(i64, int64_t, INT64)
HYC_GGUF_SCALAR(f32, float, FLOAT32)
HYC_GGUF_SCALAR(f64, double, FLOAT64)
#undef HYC_GGUF_SCALAR

GgufWriteValue GgufWriteValue::boolean(bool v) {
  GgufWriteValue x;
  x.type_ = GgufType::BOOL;
  x.scalar_.push_back(v ? 1 : 0);
  return x;
}

GgufWriteValue GgufWriteValue::string(std::string v) {
  GgufWriteValue x;
  x.type_ = GgufType::STRING;
  x.str_ = std::move(v);
  return x;
}

GgufWriteValue GgufWriteValue::array(GgufType elem_type,
                                     std::vector<GgufWriteValue> elems) {
  GgufWriteValue x;
  x.type_ = GgufType::ARRAY;
  x.elem_type_ = elem_type;
  x.elems_ = std::move(elems);
  return x;
}

GgufWriteValue GgufWriteValue::string_array(const std::vector<std::string> &v) {
  std::vector<GgufWriteValue> elems;
  elems.reserve(v.size());
  for (const std::string &s : v)
    elems.push_back(string(s));
  return array(GgufType::STRING, std::move(elems));
}

GgufWriteValue GgufWriteValue::f32_array(const std::vector<float> &v) {
  std::vector<GgufWriteValue> elems;
  elems.reserve(v.size());
  for (float f : v)
    elems.push_back(f32(f));
  return array(GgufType::FLOAT32, std::move(elems));
}

GgufWriteValue GgufWriteValue::i32_array(const std::vector<int32_t> &v) {
  std::vector<GgufWriteValue> elems;
  elems.reserve(v.size());
  for (int32_t i : v)
    elems.push_back(i32(i));
  return array(GgufType::INT32, std::move(elems));
}

GgufWriteValue GgufWriteValue::u32_array(const std::vector<uint32_t> &v) {
  std::vector<GgufWriteValue> elems;
  elems.reserve(v.size());
  for (uint32_t i : v)
    elems.push_back(u32(i));
  return array(GgufType::UINT32, std::move(elems));
}

std::string GgufWriteValue::check() const {
  if (static_cast<uint32_t>(type_) > static_cast<uint32_t>(GgufType::FLOAT64))
    return "invalid type";
  if (type_ != GgufType::ARRAY)
    return "";
  if (static_cast<uint32_t>(elem_type_) >
      static_cast<uint32_t>(GgufType::FLOAT64))
    return "invalid array element type";
  for (size_t i = 0; i < elems_.size(); ++i) {
    if (elems_[i].type_ != elem_type_)
      return std::string("array[") + gguf_type_name(elem_type_) + "] element " +
             std::to_string(i) + " has type " + gguf_type_name(elems_[i].type_);
    std::string inner = elems_[i].check();
    if (!inner.empty())
      return "element " + std::to_string(i) + ": " + inner;
  }
  return "";
}

void GgufWriteValue::serialize(std::vector<uint8_t> &out) const {
  switch (type_) {
  case GgufType::STRING:
    putString(out, str_);
    return;
  case GgufType::ARRAY:
    putLe<uint32_t>(out, static_cast<uint32_t>(elem_type_));
    putLe<uint64_t>(out, elems_.size());
    for (const GgufWriteValue &e : elems_)
      e.serialize(out);
    return;
  default:
    out.insert(out.end(), scalar_.begin(), scalar_.end());
    return;
  }
}

Status GgufWriter::set(const std::string &key, GgufWriteValue value) {
  if (key.empty())
    return Error("GGUF writer: empty metadata key");
  std::string problem = value.check();
  if (!problem.empty())
    return Error("GGUF writer: key '" + key + "': " + problem);
  for (Kv &kv : kvs_)
    if (kv.key == key) {
      kv.value = std::move(value);
      return Status();
    }
  kvs_.push_back(Kv{key, std::move(value)});
  return Status();
}

bool GgufWriter::has(const std::string &key) const {
  for (const Kv &kv : kvs_)
    if (kv.key == key)
      return true;
  return false;
}

Status GgufWriter::set_alignment(uint32_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    return Error("GGUF writer: alignment " + std::to_string(alignment) +
                 " is not a power of two");
  alignment_ = alignment;
  return Status();
}

Status GgufWriter::add_tensor(const std::string &name, uint32_t ggml_type,
                              std::vector<int64_t> shape, GgufTensorFill fill) {
  const std::string where = "GGUF writer: tensor '" + name + "'";
  if (name.empty())
    return Error("GGUF writer: empty tensor name");
  for (const Tensor &t : tensors_)
    if (t.name == name)
      return Error(where + ": duplicate name");
  if (!supportedTensorType(ggml_type))
    return Error(where + ": ggml type " + ggml_type_name(ggml_type) + " (" +
                 std::to_string(ggml_type) +
                 ") is not supported (supported: F32, F16, BF16, Q8_0, Q4_0, "
                 "I8, I32)");
  if (shape.size() > 4)
    return Error(where + ": " + std::to_string(shape.size()) +
                 " dims, GGUF allows at most 4");
  Expected<int64_t> numel = shape_numel(shape);
  if (!numel)
    return Error(where + ": " + numel.error());
  if ((ggml_type == GGML_Q8_0 || ggml_type == GGML_Q4_0) && !shape.empty() &&
      shape.back() % 32 != 0)
    return Error(where + ": " + ggml_type_name(ggml_type) +
                 " needs the innermost dim to be a multiple of 32, shape " +
                 shape_to_string(shape));
  Expected<size_t> bytes = dtype_data_bytes(dtypeOf(ggml_type), *numel);
  if (!bytes)
    return Error(where + ": " + bytes.error());
  if (!fill)
    return Error(where + ": no data");
  tensors_.push_back(
      Tensor{name, ggml_type, std::move(shape), *bytes, std::move(fill)});
  return Status();
}

Status GgufWriter::add_tensor_bytes(const std::string &name, uint32_t ggml_type,
                                    std::vector<int64_t> shape,
                                    std::vector<uint8_t> bytes) {
  Expected<int64_t> numel = shape_numel(shape);
  if (numel && supportedTensorType(ggml_type)) {
    Expected<size_t> want = dtype_data_bytes(dtypeOf(ggml_type), *numel);
    if (want && *want != bytes.size())
      return Error("GGUF writer: tensor '" + name +
                   "': " + ggml_type_name(ggml_type) + " " +
                   shape_to_string(shape) + " needs " + std::to_string(*want) +
                   " bytes, got " + std::to_string(bytes.size()));
  }
  auto data = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  return add_tensor(name, ggml_type, std::move(shape),
                    [data](uint8_t *dst) -> Status {
                      if (!data->empty())
                        std::memcpy(dst, data->data(), data->size());
                      return Status();
                    });
}

Status GgufWriter::add_tensor_f32(const std::string &name,
                                  std::vector<int64_t> shape,
                                  std::vector<float> values,
                                  uint32_t ggml_type) {
  if (ggml_type != GGML_F32 && ggml_type != GGML_F16 && ggml_type != GGML_BF16)
    return Error("GGUF writer: tensor '" + name +
                 "': add_tensor_f32 stores "
                 "F32, F16 or BF16, not " +
                 ggml_type_name(ggml_type));
  Expected<int64_t> numel = shape_numel(shape);
  if (numel && static_cast<size_t>(*numel) != values.size())
    return Error("GGUF writer: tensor '" + name + "': shape " +
                 shape_to_string(shape) + " has " + std::to_string(*numel) +
                 " elements, got " + std::to_string(values.size()) + " values");
  auto data = std::make_shared<std::vector<float>>(std::move(values));
  return add_tensor(name, ggml_type, std::move(shape),
                    [data, ggml_type](uint8_t *dst) -> Status {
                      const std::vector<float> &v = *data;
                      if (ggml_type == GGML_F32) {
                        if (!v.empty())
                          std::memcpy(dst, v.data(), v.size() * 4);
                        return Status();
                      }
                      for (size_t i = 0; i < v.size(); ++i) {
                        uint16_t h = ggml_type == GGML_F16 ? f32_to_f16(v[i])
                                                           : f32_to_bf16(v[i]);
                        std::memcpy(dst + 2 * i, &h, 2);
                      }
                      return Status();
                    });
}

Status GgufWriter::write(const std::string &path) const {
  // general.alignment always reflects the writer's alignment.
  std::vector<Kv> kvs;
  for (const Kv &kv : kvs_)
    if (kv.key != "general.alignment")
      kvs.push_back(kv);
  if (alignment_ != 32)
    kvs.push_back(Kv{"general.alignment", GgufWriteValue::u32(alignment_)});

  std::vector<uint8_t> head = {'G', 'G', 'U', 'F'};
  putLe<uint32_t>(head, 3);
  putLe<uint64_t>(head, tensors_.size());
  putLe<uint64_t>(head, kvs.size());
  for (const Kv &kv : kvs) {
    putString(head, kv.key);
    putLe<uint32_t>(head, static_cast<uint32_t>(kv.value.type()));
    kv.value.serialize(head);
  }
  const uint64_t align = alignment_;
  std::vector<uint64_t> offsets;
  uint64_t offset = 0;
  for (const Tensor &t : tensors_) {
    putString(head, t.name);
    putLe<uint32_t>(head, static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it)
      putLe<uint64_t>(head, static_cast<uint64_t>(*it));
    putLe<uint32_t>(head, t.ggml_type);
    putLe<uint64_t>(head, offset);
    offsets.push_back(offset);
    offset += (t.nbytes + align - 1) / align * align;
  }
  head.resize((head.size() + align - 1) / align * align, 0);

  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out)
    return Error(tmp + ": cannot open for writing");
  out.write(reinterpret_cast<const char *>(head.data()),
            static_cast<std::streamsize>(head.size()));
  std::vector<uint8_t> buf;
  for (const Tensor &t : tensors_) {
    const size_t padded = (t.nbytes + align - 1) / align * align;
    buf.assign(padded, 0);
    Status s = t.fill(buf.data());
    if (!s) {
      out.close();
      std::remove(tmp.c_str());
      return Error(path + ": tensor '" + t.name + "': " + s.error());
    }
    out.write(reinterpret_cast<const char *>(buf.data()),
              static_cast<std::streamsize>(padded));
  }
  out.close();
  if (!out) {
    std::remove(tmp.c_str());
    return Error(tmp + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Error(path + ": cannot rename " + tmp + " into place");
  }
  return Status();
}

} // namespace hyc::io
