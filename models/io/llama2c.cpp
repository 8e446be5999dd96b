// llama2.c .bin reader: decodes the header, lays out every tensor for the
// file's version, checks the exact file size, and reads tokenizer.bin.
#include "models/io/llama2c.h"

#include "models/io/byte_reader.h"

#include <algorithm>
#include <cstring>

namespace hyc::io {

using detail::ByteReader;
using detail::ParseError;

namespace {

constexpr uint32_t kMagic = 0x616b3432; // "ak42"
constexpr uint64_t kLegacyHeaderBytes = 7 * 4;
constexpr uint64_t kVersionedHeaderBytes = 256;

std::string layerName(int layer, const char *suffix) {
  return "model.layers." + std::to_string(layer) + "." + suffix + ".weight";
}

// Rejects headers whose sizes cannot describe a real model, so that the
// size arithmetic below cannot overflow.
Status checkConfig(const Llama2cConfig &c) {
  struct Field {
    const char *name;
    int32_t value;
    int32_t max;
  };
  const Field fields[] = {{"dim", c.dim, 1 << 20},
                          {"hidden_dim", c.hidden_dim, 1 << 22},
                          {"n_layers", c.n_layers, 1 << 12},
                          {"n_heads", c.n_heads, 1 << 12},
                          {"n_kv_heads", c.n_kv_heads, 1 << 12},
                          {"vocab_size", c.vocab_size, 1 << 24},
                          {"seq_len", c.seq_len, 1 << 24}};
  for (const Field &f : fields)
    if (f.value <= 0 || f.value > f.max)
      return Error(std::string("header field ") + f.name + " = " +
                   std::to_string(f.value) + ", expected 1.." +
                   std::to_string(f.max) + " (" + c.to_string() + ")");
  if (c.dim % c.n_heads != 0)
    return Error("dim=" + std::to_string(c.dim) +
                 " is not a multiple of n_heads=" + std::to_string(c.n_heads));
  if (c.n_heads % c.n_kv_heads != 0)
    return Error(
        "n_heads=" + std::to_string(c.n_heads) +
        " is not a multiple of n_kv_heads=" + std::to_string(c.n_kv_heads));
  if (c.version == 2 && (c.group_size <= 0 || c.group_size > (1 << 20)))
    return Error("group_size = " + std::to_string(c.group_size) +
                 ", expected 1.." + std::to_string(1 << 20));
  return Status();
}

} // namespace

std::string Llama2cConfig::to_string() const {
  std::string s = "dim=" + std::to_string(dim) +
                  ", hidden_dim=" + std::to_string(hidden_dim) +
                  ", n_layers=" + std::to_string(n_layers) +
                  ", n_heads=" + std::to_string(n_heads) +
                  ", n_kv_heads=" + std::to_string(n_kv_heads) +
                  ", vocab_size=" + std::to_string(vocab_size) +
                  ", seq_len=" + std::to_string(seq_len) +
                  ", version=" + std::to_string(version) +
                  (shared_classifier ? ", shared" : ", unshared") +
                  " classifier";
  if (version == 2)
    s += ", group_size=" + std::to_string(group_size);
  return s;
}

/// Computes where every tensor lives for a decoded header.
class Llama2cLayout {
public:
  explicit Llama2cLayout(Llama2cModel &m) : m_(m), c_(m.config_) {}

  Status build() {
    const int64_t dim = c_.dim, hidden = c_.hidden_dim, kv = c_.kv_dim(),
                  vocab = c_.vocab_size;
    const bool quantized = c_.version == 2;
    auto matrices = [&] {
      add("model.embed_tokens.weight", {vocab, dim}, quantized);
      perLayer("self_attn.q_proj", {dim, dim}, quantized);
      perLayer("self_attn.k_proj", {kv, dim}, quantized);
      perLayer("self_attn.v_proj", {kv, dim}, quantized);
      perLayer("self_attn.o_proj", {dim, dim}, quantized);
      perLayer("mlp.gate_proj", {hidden, dim}, quantized);
      perLayer("mlp.down_proj", {dim, hidden}, quantized);
      perLayer("mlp.up_proj", {hidden, dim}, quantized);
    };
    if (c_.version == 0) {
      cursor_ = kLegacyHeaderBytes;
      add("model.embed_tokens.weight", {vocab, dim}, false);
      perLayer("input_layernorm", {dim}, false);
      perLayer("self_attn.q_proj", {dim, dim}, false);
      perLayer("self_attn.k_proj", {kv, dim}, false);
      perLayer("self_attn.v_proj", {kv, dim}, false);
      perLayer("self_attn.o_proj", {dim, dim}, false);
      perLayer("post_attention_layernorm", {dim}, false);
      perLayer("mlp.gate_proj", {hidden, dim}, false);
      perLayer("mlp.down_proj", {dim, hidden}, false);
      perLayer("mlp.up_proj", {hidden, dim}, false);
      add("model.norm.weight", {dim}, false);
      cursor_ += 2 * static_cast<uint64_t>(c_.seq_len) * (c_.head_size() / 2) *
                 4; // freq_cis_real + freq_cis_imag, unused
    } else {
      cursor_ = kVersionedHeaderBytes;
      perLayer("input_layernorm", {dim}, false);
      perLayer("post_attention_layernorm", {dim}, false);
      add("model.norm.weight", {dim}, false);
      matrices();
    }
    if (!c_.shared_classifier)
      add("lm_head.weight", {vocab, dim}, quantized);
    if (!error_.empty())
      return Error(error_);

    const uint64_t found = m_.file_.size();
    if (cursor_ != found)
      return Error("expected " + std::to_string(cursor_) + " bytes for " +
                   c_.to_string() + ", found " + std::to_string(found));
    for (Entry &e : entries_) {
      e.view.data = m_.file_.data() + e.offset;
      if (e.view.dtype == DType::Q8_GROUPED)
        e.view.group_scales = m_.file_.data() + e.scaleOffset;
      m_.index_.emplace(e.view.name, m_.tensors_.size());
      m_.tensors_.push_back(std::move(e.view));
    }
    return Status();
  }

private:
  struct Entry {
    TensorView view;
    uint64_t offset = 0;
    uint64_t scaleOffset = 0;
  };

  void perLayer(const char *suffix, std::vector<int64_t> shape, bool q8) {
    for (int i = 0; i < c_.n_layers; ++i)
      add(layerName(i, suffix), shape, q8);
  }

  void add(std::string name, std::vector<int64_t> shape, bool q8) {
    Entry e;
    uint64_t numel = 1;
    for (int64_t d : shape)
      numel *= static_cast<uint64_t>(d);
    e.view.name = std::move(name);
    e.view.shape = std::move(shape);
    e.offset = cursor_;
    if (!q8) {
      e.view.dtype = DType::F32;
      e.view.nbytes = numel * 4;
      cursor_ += numel * 4;
    } else {
      const uint64_t gs = static_cast<uint64_t>(c_.group_size);
      if (numel % gs != 0 && error_.empty())
        error_ =
            "tensor '" + e.view.name + "' " + shape_to_string(e.view.shape) +
            " has " + std::to_string(numel) +
            " elements, not a multiple of group_size=" + std::to_string(gs);
      e.view.dtype = DType::Q8_GROUPED;
      e.view.group_size = c_.group_size;
      e.view.nbytes = numel;
      e.scaleOffset = cursor_ + numel;
      cursor_ += numel + numel / gs * 4;
    }
    entries_.push_back(std::move(e));
  }

  Llama2cModel &m_;
  const Llama2cConfig &c_;
  uint64_t cursor_ = 0;
  std::vector<Entry> entries_;
  std::string error_;
};

Expected<Llama2cModel> Llama2cModel::open(const std::string &path) {
  Expected<MappedFile> mapped = MappedFile::open(path);
  if (!mapped)
    return mapped.take_error();
  Llama2cModel m;
  m.file_ = std::move(*mapped);
  Llama2cConfig &c = m.config_;
  try {
    ByteReader r(m.file_.data(), m.file_.size());
    uint32_t first = r.read<uint32_t>("llama2.c header");
    if (first == kMagic) {
      c.version = r.read<int32_t>("version");
      if (c.version != 1 && c.version != 2)
        throw ParseError("unsupported llama2.c version " +
                         std::to_string(c.version) + ", expected 1 or 2");
      if (m.file_.size() < kVersionedHeaderBytes)
        throw ParseError("truncated: " + std::to_string(m.file_.size()) +
                         " bytes, smaller than the 256-byte header");
      c.dim = r.read<int32_t>("dim");
    } else {
      std::memcpy(&c.dim, &first, 4);
    }
    c.hidden_dim = r.read<int32_t>("hidden_dim");
    c.n_layers = r.read<int32_t>("n_layers");
    c.n_heads = r.read<int32_t>("n_heads");
    c.n_kv_heads = r.read<int32_t>("n_kv_heads");
    c.vocab_size = r.read<int32_t>("vocab_size");
    c.seq_len = r.read<int32_t>("seq_len");
    if (c.version == 0) {
      c.shared_classifier = c.vocab_size > 0;
      // INT32_MIN has no positive counterpart; checkConfig refuses it as is.
      if (c.vocab_size < 0 && c.vocab_size != INT32_MIN)
        c.vocab_size = -c.vocab_size;
    } else {
      c.shared_classifier = r.read<uint8_t>("shared_classifier") != 0;
      if (c.version == 2)
        c.group_size = r.read<int32_t>("group_size");
    }
  } catch (const ParseError &e) {
    return Error(path + ": " + e.what());
  }
  Status s = checkConfig(c);
  if (s.ok())
    s = Llama2cLayout(m).build();
  if (!s)
    return Error(path + ": " + s.error());
  return m;
}

const TensorView *Llama2cModel::find(const std::string &name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Expected<TensorView> Llama2cModel::tensor(const std::string &name) const {
  if (const TensorView *v = find(name))
    return *v;
  return Error(path() + ": no tensor named '" + name + "'");
}

Expected<std::vector<float>>
Llama2cModel::read_f32(const std::string &name) const {
  const TensorView *v = find(name);
  if (!v)
    return Error(path() + ": no tensor named '" + name + "'");
  Expected<std::vector<float>> out = to_f32(*v);
  if (!out)
    return Error(path() + ": " + out.error());
  return out;
}

Expected<Llama2cTokenizer> read_llama2c_tokenizer(const std::string &path,
                                                  int32_t vocab_size) {
  if (vocab_size <= 0)
    return Error(path + ": vocab_size must be positive, got " +
                 std::to_string(vocab_size));
  Expected<MappedFile> mapped = MappedFile::open(path);
  if (!mapped)
    return mapped.take_error();
  Llama2cTokenizer tok;
  int32_t i = 0;
  try {
    ByteReader r(mapped->data(), mapped->size());
    tok.max_token_length = r.read<int32_t>("max_token_length");
    // Each entry takes at least 8 bytes; do not trust vocab_size blindly.
    size_t reserve = std::min<size_t>(vocab_size, r.remaining() / 8);
    tok.pieces.reserve(reserve);
    tok.scores.reserve(reserve);
    for (; i < vocab_size; ++i) {
      tok.scores.push_back(r.read<float>("score"));
      int32_t len = r.read<int32_t>("length");
      if (len < 0)
        throw ParseError("negative length " + std::to_string(len));
      tok.pieces.push_back(r.readString(static_cast<uint64_t>(len), "piece"));
    }
    if (r.remaining() != 0)
      throw ParseError(
          std::to_string(r.remaining()) + " bytes left after the last of " +
          std::to_string(vocab_size) + " tokens (wrong vocab_size?)");
  } catch (const ParseError &e) {
    std::string where = i < vocab_size ? "token " + std::to_string(i) + " of " +
                                             std::to_string(vocab_size) + ": "
                                       : "";
    return Error(path + ": " + where + e.what());
  }
  return tok;
}

} // namespace hyc::io
