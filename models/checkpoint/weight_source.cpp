// ViewWeightSource (lookup and fp32 conversion), weight validation against
// a spec, and llama2.c tokenizer discovery, shared by the format loaders.
#include "models/checkpoint/weight_source.h"

#include "models/checkpoint/gguf_codes.h"

#include <cstring>

#include "models/io/gguf_dequant.h"
#include "models/io/llama2c.h"

#include <filesystem>

namespace hyc::models::detail {

void ViewWeightSource::add(WeightInfo info, std::string stored_name) {
  if (index_.count(info.name))
    return;
  index_.emplace(info.name, infos_.size());
  infos_.push_back(std::move(info));
  stored_.push_back(std::move(stored_name));
}

const WeightInfo *ViewWeightSource::find(const std::string &name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &infos_[it->second];
}

const std::string *ViewWeightSource::stored_of(const std::string &name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &stored_[it->second];
}

Expected<io::TensorView>
ViewWeightSource::viewOf(const std::string &name,
                         const std::string **stored) const {
  auto it = index_.find(name);
  if (it == index_.end())
    return Error(origin() + ": no weight named '" + name + "'");
  *stored = &stored_[it->second];
  Expected<io::TensorView> v = view(**stored);
  if (!v)
    return Error(origin() + ": weight '" + name + "': " + v.error());
  return v;
}

Status ViewWeightSource::convert(const std::string &, const io::TensorView &v,
                                 float *out) const {
  return io::to_f32(v, out);
}

Status ViewWeightSource::read_f32(const std::string &name, float *out) const {
  const std::string *stored = nullptr;
  Expected<io::TensorView> v = viewOf(name, &stored);
  if (!v)
    return v.take_error();
  Status s = convert(*stored, *v, out);
  release(*v);
  if (!s)
    return Error(origin() + ": weight '" + name + "'" +
                 (*stored != name ? " (stored as '" + *stored + "')" : "") +
                 ": " + s.error());
  return Status();
}

bool ViewWeightSource::read_f32_rows(const std::string &name, int64_t row0, int64_t rows,
                                     float *out) const {
  const std::string *stored = nullptr;
  Expected<io::TensorView> v = viewOf(name, &stored);
  if (!v || !plain_rows(*stored) || v->shape.size() != 2 || row0 < 0 || rows < 0 || row0 + rows > v->shape[0] ||
      (v->dtype != io::DType::F32 && v->dtype != io::DType::F16 &&
       v->dtype != io::DType::BF16))
    return false;
  // Unscaled element types: a row range is a contiguous byte range.
  const size_t elem = v->dtype == io::DType::F32 ? 4 : 2;
  const size_t rowBytes = size_t(v->shape[1]) * elem;
  if (v->nbytes != size_t(v->shape[0]) * rowBytes)
    return false;
  io::TensorView part = *v;
  part.shape = {rows, v->shape[1]};
  part.data = v->data + size_t(row0) * rowBytes;
  part.nbytes = size_t(rows) * rowBytes;
  if (!io::to_f32(part, out))
    return false;
  release(part);
  return true;
}

bool ViewWeightSource::read_int8_channel(const std::string &name, int8_t *q,
                                         float *scale) const {
  const std::string *stored = nullptr;
  Expected<io::TensorView> v = viewOf(name, &stored);
  if (!v || v->dtype != io::DType::I8 || v->shape.size() != 2)
    return false;
  std::vector<float> s;
  if (!channel_scales(*stored, v->shape[0], s))
    return false;
  std::memcpy(q, v->data, size_t(v->shape[0] * v->shape[1]));
  std::memcpy(scale, s.data(), s.size() * sizeof(float));
  release(*v);
  return true;
}

bool ViewWeightSource::read_fp8_block(const std::string &name, uint8_t *codes,
                                      float *scale_inv) const {
  const std::string *stored = nullptr;
  Expected<io::TensorView> v = viewOf(name, &stored);
  if (!v || v->dtype != io::DType::F8_E4M3 || v->shape.size() != 2)
    return false;
  std::vector<float> s;
  if (!fp8_block_scales(*stored, v->shape[0], v->shape[1], s))
    return false;
  std::memcpy(codes, v->data, size_t(v->shape[0] * v->shape[1]));
  std::memcpy(scale_inv, s.data(), s.size() * sizeof(float));
  release(*v);
  return true;
}

bool ViewWeightSource::read_codes_g32(const std::string &name, int bits, uint8_t *codes,
                                      uint16_t *scales) const {
  const std::string *stored = nullptr;
  Expected<io::TensorView> v = viewOf(name, &stored);
  // Q4_0 and Q5_0 fit 8-bit codes too (code = q + 128 with the same d); Q8_0
  // and Q5_0 do not fit 4 bits.
  if (!v || (bits != 4 && bits != 8) || v->shape.size() != 2 || v->shape[1] % 32 != 0 ||
      !(v->dtype == io::DType::Q4_0 ||
        (bits == 8 && (v->dtype == io::DType::Q8_0 || v->dtype == io::DType::Q5_0))))
    return false;
  // ggml's blocks of 32: an fp16 d, then 32 int8 (Q8_0), or 16 bytes whose
  // low nibbles are elements 0..15 and high nibbles 16..31 (Q4_0), or (Q5_0)
  // a 32-bit qh whose bit j is element j's fifth bit, then those 16 bytes.
  const bool q4 = v->dtype == io::DType::Q4_0, q5 = v->dtype == io::DType::Q5_0;
  const int64_t blocks = v->shape[0] * v->shape[1] / 32;
  const size_t blockBytes = q4 ? 18 : q5 ? 22 : 34;
  if (v->nbytes != size_t(blocks) * blockBytes)
    return false;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t *p = v->data + size_t(b) * blockBytes;
    std::memcpy(scales + b, p, 2);
    uint8_t *c = codes + b * 32;
    if (q5) { // element q (0..31) is q - 16: code q - 16 + 128
      uint32_t qh;
      std::memcpy(&qh, p + 2, 4);
      for (int j = 0; j < 16; ++j) {
        c[j] = uint8_t((p[6 + j] & 15) + (((qh >> j) & 1) << 4) + 112);
        c[j + 16] = uint8_t((p[6 + j] >> 4) + (((qh >> (j + 16)) & 1) << 4) + 112);
      }
      continue;
    }
    // Stored code and zero point: Q4_0 nibble n is n - 8, Q8_0 byte b is b.
    const int shift = bits == 4 ? 0 : 120; // Q4_0 as 8-bit codes: n - 8 + 128
    for (int j = 0; j < 16 && q4; ++j) {
      c[j] = uint8_t((p[2 + j] & 15) + shift);
      c[j + 16] = uint8_t((p[2 + j] >> 4) + shift);
    }
    for (int j = 0; j < 32 && !q4; ++j)
      c[j] = uint8_t(int(int8_t(p[2 + j])) + 128);
  }
  release(*v);
  return true;
}

std::string ViewWeightSource::stored_codes_format(const std::string &name) const {
  const WeightInfo *info = find(name);
  if (!info || info->shape.size() != 2)
    return "";
  const std::string *stored = nullptr;
  Expected<io::TensorView> v = viewOf(name, &stored);
  return v ? gguf_codes_format(v->dtype) : "";
}

bool ViewWeightSource::read_stored_codes(const std::string &name, StoredCodes &out) const {
  const std::string *stored = nullptr;
  Expected<io::TensorView> v = viewOf(name, &stored);
  if (!v)
    return false;
  const bool ok = gguf_codes(*v, out);
  release(*v);
  return ok;
}

Status ViewWeightSource::check_readable(const std::string &name) const {
  const std::string *stored = nullptr;
  Expected<io::TensorView> v = viewOf(name, &stored);
  if (!v)
    return v.take_error();
  if (packed(*stored))
    return Status();
  // A weight holds real numbers: integer storage is read only where it
  // carries its scales (channel-INT8); I32 is never a weight, and reading
  // its integers as values would run a model on garbage.
  const io::DType t = v->dtype;
  const bool floating = t == io::DType::F32 || t == io::DType::F16 ||
                        t == io::DType::BF16 || io::quant_block(t) ||
                        t == io::DType::F8_E4M3 || t == io::DType::Q8_GROUPED;
  std::vector<float> scales;
  if (!floating &&
      !(t == io::DType::I8 && v->shape.size() == 2 &&
        channel_scales(*stored, v->shape[0], scales)))
    return Error(origin() + ": weight '" + name + "'" +
                 (*stored != name ? " (stored as '" + *stored + "')" : "") +
                 " has dtype " + io::dtype_name(t) +
                 ", expected a floating-point type (F32, F16, BF16, F8_E4M3, "
                 "a GGUF block type such as Q8_0 or Q4_K) or I8 with "
                 "per-channel '" + *stored + "_scale'");
  Expected<int64_t> numel = io::shape_numel(v->shape);
  if (!numel)
    return Error(origin() + ": weight '" + name + "': " + numel.error());
  Expected<size_t> bytes = io::dtype_data_bytes(v->dtype, *numel);
  if (!bytes)
    return Error(origin() + ": weight '" + name + "': " + bytes.error());
  if (*bytes != v->nbytes)
    return Error(
        origin() + ": weight '" + name + "': " + io::dtype_name(v->dtype) +
        " " + io::shape_to_string(v->shape) + " needs " +
        std::to_string(*bytes) + " bytes, found " + std::to_string(v->nbytes));
  return Status();
}

namespace {

TokenizerSpec llama2cTokenizerSpec(io::Llama2cTokenizer tok) {
  TokenizerSpec t;
  t.kind = "llama2c";
  t.tokens = std::move(tok.pieces);
  t.scores = std::move(tok.scores);
  t.bos_id = 1;
  t.eos_id = 2;
  t.unk_id = 0;
  return t;
}

} // namespace

Status attach_llama2c_tokenizer(Checkpoint &checkpoint,
                                const LoadOptions &options,
                                const std::vector<std::string> &implicit) {
  const int32_t vocab = static_cast<int32_t>(checkpoint.spec.vocab_size);
  if (!options.tokenizer_path.empty()) {
    Expected<io::Llama2cTokenizer> tok =
        io::read_llama2c_tokenizer(options.tokenizer_path, vocab);
    if (!tok)
      return Error("tokenizer for " + checkpoint.source + ": " + tok.error());
    checkpoint.tokenizer = llama2cTokenizerSpec(std::move(*tok));
    return Status();
  }
  for (const std::string &path : implicit) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      continue;
    Expected<io::Llama2cTokenizer> tok =
        io::read_llama2c_tokenizer(path, vocab);
    if (!tok) {
      checkpoint.warnings.push_back("skipped tokenizer candidate: " +
                                    tok.error());
      continue;
    }
    checkpoint.tokenizer = llama2cTokenizerSpec(std::move(*tok));
    return Status();
  }
  return Status();
}

} // namespace hyc::models::detail
