// GGUF loader: spec from `<arch>.*` metadata (via the family), tensors
// renamed from llama.cpp names to canonical Hugging Face names (stacked
// experts sliced per expert, deepseek2's split kv_b_proj rebuilt), tokenizer
// from `tokenizer.ggml.*`.
#include "models/checkpoint/family.h"
#include "models/checkpoint/gguf_names.h"
#include "models/checkpoint/weight_source.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <memory>
#include <unordered_map>

namespace hyc::models::detail {

namespace {

/// A shape holding no elements.
bool hasZeroDim(const std::vector<int64_t> &shape) {
  return std::find(shape.begin(), shape.end(), 0) != shape.end();
}

/// Canonical per-expert projection for a stacked-experts stem, or nullptr.
const char *expertProjection(const std::string &stem) {
  if (stem == "ffn_gate_exps")
    return "gate_proj";
  if (stem == "ffn_up_exps")
    return "up_proj";
  if (stem == "ffn_down_exps")
    return "down_proj";
  return nullptr;
}

/// The weights of a GGUF file under canonical names. Besides the one-to-one
/// renames (gguf_names.h) it presents
///  * stacked experts `blk.N.ffn_{gate,up,down}_exps.weight` [E, rows, cols]
///    as E zero-copy slices `model.layers.N.mlp.experts.e.*_proj.weight`
///    (stored name `<tensor>[e]`);
///  * deepseek2's `blk.N.attn_k_b.weight` [H, kv_lora, nope] and
///    `blk.N.attn_v_b.weight` [H, v, kv_lora] as the original
///    `self_attn.kv_b_proj.weight` [H * (nope + v), kv_lora] (rows of head h:
///    nope rows of k_b[h] transposed, then v rows of v_b[h]), rebuilt exactly
///    on read (stored name `<k_b>+<v_b>`);
///  * `blk.N.exp_probs_b.bias` (or `blk.N.exp_probs_b`) as
///    `mlp.gate.e_score_correction_bias`.
class GgufWeightSource : public ViewWeightSource {
public:
  static Expected<std::unique_ptr<GgufWeightSource>> create(io::GgufFile file) {
    std::unique_ptr<GgufWeightSource> source(
        new GgufWeightSource(std::move(file)));
    HYC_CKPT_TRY(source->index());
    return source;
  }
  const std::string &origin() const override { return file_.path(); }

protected:
  Expected<io::TensorView> view(const std::string &stored) const override {
    if (auto it = slices_.find(stored); it != slices_.end())
      return slice(it->second.first, it->second.second);
    if (auto it = kv_b_.find(stored); it != kv_b_.end())
      return file_.tensor(it->second.first);
    return file_.tensor(stored);
  }

  // Every tensor but MLA's kv_b (reassembled from two) converts element by
  // element.
  bool plain_rows(const std::string &stored) const override {
    return kv_b_.find(stored) == kv_b_.end();
  }

  Status convert(const std::string &stored, const io::TensorView &v,
                 float *out) const override {
    auto it = kv_b_.find(stored);
    if (it == kv_b_.end())
      return io::to_f32(v, out);
    const io::GgufTensorInfo *ki = file_.find_tensor(it->second.first);
    const io::GgufTensorInfo *vi = file_.find_tensor(it->second.second);
    Expected<std::vector<float>> k = file_.read_f32(it->second.first);
    if (!k)
      return k.take_error();
    Expected<std::vector<float>> vb = file_.read_f32(it->second.second);
    if (!vb)
      return vb.take_error();
    const int64_t heads = ki->shape[0], rank = ki->shape[1],
                  nope = ki->shape[2], vdim = vi->shape[1];
    for (int64_t h = 0; h < heads; ++h) {
      float *rows = out + h * (nope + vdim) * rank;
      for (int64_t i = 0; i < nope; ++i)
        for (int64_t j = 0; j < rank; ++j)
          rows[i * rank + j] = (*k)[(h * rank + j) * nope + i];
      std::copy(vb->begin() + h * vdim * rank,
                vb->begin() + (h + 1) * vdim * rank, rows + nope * rank);
    }
    return Status();
  }

private:
  explicit GgufWeightSource(io::GgufFile file) : file_(std::move(file)) {}

  Status index() {
    for (const io::GgufTensorInfo &t : file_.tensor_infos()) {
      const std::string type = io::ggml_type_name(t.ggml_type);
      int64_t layer = 0;
      std::string stem, suffix;
      bool block = split_gguf_block_name(t.name, &layer, &stem, &suffix);
      if (!block) // older files: `blk.N.exp_probs_b` without `.bias`
        block =
            split_gguf_block_name(t.name + ".bias", &layer, &stem, &suffix) &&
            stem == "exp_probs_b";
      if (!block) {
        add(WeightInfo{gguf_to_hf_name(t.name), t.shape, type}, t.name);
        continue;
      }
      const std::string blk = "blk." + std::to_string(layer) + ".";
      const std::string hf = "model.layers." + std::to_string(layer) + ".";
      if (const char *proj = expertProjection(stem)) {
        // The loop below runs once per expert, so the count must be backed
        // by data the reader checked against the file size: a zero
        // dimension or an unsupported type (size unknown) would let any
        // count through.
        if (t.shape.size() != 3 || hasZeroDim(t.shape))
          return Error(file_.path() + ": tensor '" + t.name + "' has shape " +
                       io::shape_to_string(t.shape) +
                       ", expected [experts, rows, cols], none of them 0");
        if (t.nbytes == 0)
          return unsupportedType(t);
        if (t.shape[0] > kMaxExperts)
          return Error(file_.path() + ": tensor '" + t.name + "' has shape " +
                       io::shape_to_string(t.shape) + ", expected at most " +
                       std::to_string(kMaxExperts) + " experts");
        for (int64_t e = 0; e < t.shape[0]; ++e) {
          const std::string stored = t.name + "[" + std::to_string(e) + "]";
          slices_[stored] = {t.name, e};
          add(WeightInfo{hf + "mlp.experts." + std::to_string(e) + "." + proj +
                             "." + suffix,
                         {t.shape[1], t.shape[2]},
                         type},
              stored);
        }
      } else if (stem == "exp_probs_b") {
        add(WeightInfo{hf + "mlp.gate.e_score_correction_bias", t.shape, type},
            t.name);
      } else if (stem == "attn_k_b" || stem == "attn_v_b") {
        const std::string k_name = blk + "attn_k_b." + suffix;
        const std::string v_name = blk + "attn_v_b." + suffix;
        const io::GgufTensorInfo *k = file_.find_tensor(k_name);
        const io::GgufTensorInfo *v = file_.find_tensor(v_name);
        if (!k || !v)
          return Error(file_.path() + ": tensor '" + (k ? v_name : k_name) +
                       "' is missing (deepseek2 stores kv_b_proj split into '" +
                       k_name + "' and '" + v_name + "'; found only '" +
                       t.name + "')");
        if (stem == "attn_v_b")
          continue; // listed with attn_k_b
        // Zero dimensions or unsupported types, as above, would leave the
        // head count unbounded (and heads * (nope + v) free to overflow).
        if (k->nbytes == 0 && !hasZeroDim(k->shape))
          return unsupportedType(*k);
        if (v->nbytes == 0 && !hasZeroDim(v->shape))
          return unsupportedType(*v);
        if (k->shape.size() != 3 || v->shape.size() != 3 ||
            hasZeroDim(k->shape) || hasZeroDim(v->shape) ||
            k->shape[0] != v->shape[0] || k->shape[1] != v->shape[2])
          return Error(file_.path() + ": '" + k_name + "' " +
                       io::shape_to_string(k->shape) + " and '" + v_name +
                       "' " + io::shape_to_string(v->shape) +
                       " do not fit together; expected [heads, kv_lora_rank, "
                       "qk_nope_head_dim] and [heads, v_head_dim, "
                       "kv_lora_rank], no dimension 0");
        const std::string stored = k_name + "+" + v_name;
        kv_b_[stored] = {k_name, v_name};
        add(WeightInfo{hf + "self_attn.kv_b_proj." + suffix,
                       {k->shape[0] * (k->shape[2] + v->shape[1]), k->shape[1]},
                       type},
            stored);
      } else {
        add(WeightInfo{gguf_to_hf_name(t.name), t.shape, type}, t.name);
      }
    }
    return Status();
  }

  Error unsupportedType(const io::GgufTensorInfo &t) const {
    return Error(file_.path() + ": tensor '" + t.name + "' has ggml type " +
                 std::to_string(t.ggml_type) + " (" +
                 io::ggml_type_name(t.ggml_type) +
                 "), which hyc does not read (supported: " +
                 io::ggml_supported_types() + ")");
  }

  Expected<io::TensorView> slice(const std::string &parent, int64_t e) const {
    Expected<io::TensorView> pv = file_.tensor(parent);
    if (!pv)
      return pv.take_error();
    const int64_t rows = pv->shape[1], cols = pv->shape[2];
    Expected<size_t> bytes = io::dtype_data_bytes(pv->dtype, rows * cols);
    if (!bytes)
      return Error(file_.path() + ": tensor '" + parent +
                   "': " + bytes.error());
    io::TensorView v = *pv;
    v.name = parent + "[" + std::to_string(e) + "]";
    v.shape = {rows, cols};
    v.data = pv->data + static_cast<size_t>(e) * *bytes;
    v.nbytes = *bytes;
    return v;
  }

  io::GgufFile file_;
  /// `<k_b>+<v_b>` -> (k_b, v_b).
  std::unordered_map<std::string, std::pair<std::string, std::string>> kv_b_;
  /// `<stacked>[e]` -> (stacked, e).
  std::unordered_map<std::string, std::pair<std::string, int64_t>> slices_;
};

int32_t tokenId(const io::GgufFile &file, const std::string &key) {
  Expected<int64_t> v = gguf_int_or(file, key, -1);
  // uint32 0xFFFFFFFF ("none") and anything else out of range mean absent.
  return v && *v >= 0 && *v <= INT32_MAX ? static_cast<int32_t>(*v) : -1;
}

/// The embedded tokenizer, or nullopt (with a warning) when the file has
/// none that hyc can run.
Expected<std::optional<TokenizerSpec>>
ggufTokenizer(const io::GgufFile &file, int64_t vocab,
              std::vector<std::string> &warnings) {
  if (!file.has("tokenizer.ggml.model")) {
    warnings.push_back(file.path() + ": no embedded tokenizer");
    return std::optional<TokenizerSpec>();
  }
  std::string model;
  HYC_CKPT_ASSIGN(model, file.get_string("tokenizer.ggml.model"));
  TokenizerSpec t;
  if (model == "llama") {
    t.kind = "sentencepiece";
  } else if (model == "gpt2") {
    t.kind = "gpt2";
  } else {
    warnings.push_back(file.path() + ": tokenizer.ggml.model '" + model +
                       "' is not supported (supported: llama, gpt2); "
                       "no tokenizer loaded");
    return std::optional<TokenizerSpec>();
  }
  HYC_CKPT_ASSIGN(t.tokens, file.get_string_array("tokenizer.ggml.tokens"));
  if (file.has("tokenizer.ggml.scores"))
    HYC_CKPT_ASSIGN(t.scores, file.get_f32_array("tokenizer.ggml.scores"));
  if (file.has("tokenizer.ggml.token_type"))
    HYC_CKPT_ASSIGN(t.types, file.get_i32_array("tokenizer.ggml.token_type"));
  if (t.kind == "gpt2") {
    if (!file.has("tokenizer.ggml.merges"))
      return Error(file.path() +
                   ": gpt2 tokenizer without tokenizer.ggml.merges");
    HYC_CKPT_ASSIGN(t.merges, file.get_string_array("tokenizer.ggml.merges"));
  }
  const size_t n = t.tokens.size();
  if ((!t.scores.empty() && t.scores.size() != n) ||
      (!t.types.empty() && t.types.size() != n))
    return Error(file.path() + ": tokenizer has " + std::to_string(n) +
                 " tokens but " + std::to_string(t.scores.size()) +
                 " scores and " + std::to_string(t.types.size()) + " types");
  if (static_cast<int64_t>(n) > vocab)
    return Error(file.path() + ": tokenizer has " + std::to_string(n) +
                 " tokens, more than the vocabulary size " +
                 std::to_string(vocab));
  if (static_cast<int64_t>(n) < vocab)
    warnings.push_back(file.path() + ": tokenizer has " + std::to_string(n) +
                       " tokens for a vocabulary of " + std::to_string(vocab));
  t.bos_id = tokenId(file, "tokenizer.ggml.bos_token_id");
  t.eos_id = tokenId(file, "tokenizer.ggml.eos_token_id");
  t.unk_id = tokenId(file, "tokenizer.ggml.unknown_token_id");
  return std::optional<TokenizerSpec>(std::move(t));
}

} // namespace

Expected<Checkpoint> load_gguf(const std::string &path,
                               const LoadOptions &options) {
  Expected<io::GgufFile> opened = io::GgufFile::open(path);
  if (!opened)
    return opened.take_error();
  std::string arch;
  HYC_CKPT_ASSIGN(arch, opened->get_string("general.architecture"));
  const Family *family = family_for_gguf(arch);
  if (!family) {
    std::string supported;
    for (const Family *f : families())
      for (const std::string &g : f->gguf_architectures)
        supported += (supported.empty() ? "" : ", ") + g;
    return Error(path + ": unsupported GGUF architecture '" + arch +
                 "' (general.architecture); supported: " + supported);
  }

  Checkpoint ckpt;
  ckpt.source = path;
  ckpt.format = "gguf";
  HYC_CKPT_ASSIGN(ckpt.spec, family->from_gguf(*opened, ckpt.warnings));
  HYC_CKPT_ASSIGN(ckpt.tokenizer,
                  ggufTokenizer(*opened, ckpt.spec.vocab_size, ckpt.warnings));
  std::unique_ptr<GgufWeightSource> source;
  HYC_CKPT_ASSIGN(source, GgufWeightSource::create(std::move(*opened)));
  SpecFields fields;
  fields.layers = arch + ".block_count";
  fields.experts = arch + ".expert_count";
  HYC_CKPT_TRY(validate_weights(ckpt.spec, *source, fields, ckpt.warnings));
  ckpt.weights = std::move(source);
  if (!options.tokenizer_path.empty())
    HYC_CKPT_TRY(attach_llama2c_tokenizer(ckpt, options, {}));
  return ckpt;
}

} // namespace hyc::models::detail
