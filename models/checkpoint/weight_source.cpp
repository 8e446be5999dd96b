// ViewWeightSource (lookup and fp32 conversion), weight validation against
// a spec, and llama2.c tokenizer discovery, shared by the format loaders.
#include "models/checkpoint/weight_source.h"

#include <cstring>

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

Status ViewWeightSource::check_readable(const std::string &name) const {
  const std::string *stored = nullptr;
  Expected<io::TensorView> v = viewOf(name, &stored);
  if (!v)
    return v.take_error();
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

Status validate_weights(const ModelSpec &spec, const ViewWeightSource &source) {
  // Every layer and every expert has tensors of its own, so counts beyond
  // the checkpoint's tensor count cannot be satisfied; refuse them before
  // required_weights() lists a name for each (2^31 layers: gigabytes).
  const int64_t have = static_cast<int64_t>(source.weights().size());
  if (spec.num_layers > have)
    return Error(source.origin() + ": the config has " +
                 std::to_string(spec.num_layers) +
                 " layers, but the checkpoint holds only " +
                 std::to_string(have) + " tensors");
  if (spec.moe && spec.moe->num_experts > have)
    return Error(source.origin() + ": the config has " +
                 std::to_string(spec.moe->num_experts) +
                 " experts per layer, but the checkpoint holds only " +
                 std::to_string(have) + " tensors");
  constexpr size_t kMaxListed = 8;
  std::vector<std::string> problems;
  size_t count = 0;
  for (const WeightInfo &want : required_weights(spec)) {
    std::string problem;
    const WeightInfo *have = source.find(want.name);
    if (!have) {
      problem = "missing weight '" + want.name + "' (expected shape " +
                io::shape_to_string(want.shape) + ")";
    } else if (have->shape != want.shape) {
      problem = "weight '" + want.name + "' has shape " +
                io::shape_to_string(have->shape) + ", expected " +
                io::shape_to_string(want.shape);
    } else {
      Status readable = source.check_readable(want.name);
      if (!readable)
        return readable;
    }
    if (problem.empty())
      continue;
    if (++count <= kMaxListed)
      problems.push_back(problem);
  }
  if (count == 0)
    return Status();
  std::string msg = source.origin() + ": ";
  if (count > 1)
    msg += std::to_string(count) + " weights do not match the " + spec.arch +
           " spec: ";
  for (size_t i = 0; i < problems.size(); ++i)
    msg += (i ? "; " : "") + problems[i];
  if (count > problems.size())
    msg += "; and " + std::to_string(count - problems.size()) + " more";
  return Error(msg);
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
