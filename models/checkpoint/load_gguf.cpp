// GGUF loader: spec from `<arch>.*` metadata (via the family), tensors
// renamed from llama.cpp names to canonical Hugging Face names, tokenizer
// from `tokenizer.ggml.*`.
#include "models/checkpoint/family.h"
#include "models/checkpoint/weight_source.h"

#include <climits>
#include <cstdlib>

namespace hyc::models::detail {

namespace {

/// llama.cpp block tensor stems -> Hugging Face module paths.
struct BlockName {
  const char *gguf;
  const char *hf;
};
constexpr BlockName kBlockNames[] = {
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"},
    {"attn_norm", "input_layernorm"},
    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
};

/// Canonical name of a GGUF tensor; names without a mapping are kept.
std::string canonicalName(const std::string &gguf) {
  if (gguf == "token_embd.weight")
    return "model.embed_tokens.weight";
  if (gguf == "output_norm.weight")
    return "model.norm.weight";
  if (gguf == "output.weight")
    return "lm_head.weight";
  // blk.<N>.<stem>.<weight|bias>
  if (gguf.rfind("blk.", 0) != 0)
    return gguf;
  const size_t layer_end = gguf.find('.', 4);
  const size_t stem_end = gguf.rfind('.');
  if (layer_end == std::string::npos || stem_end <= layer_end)
    return gguf;
  const std::string layer = gguf.substr(4, layer_end - 4);
  if (layer.empty() ||
      layer.find_first_not_of("0123456789") != std::string::npos)
    return gguf;
  const std::string stem = gguf.substr(layer_end + 1, stem_end - layer_end - 1);
  const std::string suffix = gguf.substr(stem_end + 1);
  for (const BlockName &b : kBlockNames)
    if (stem == b.gguf)
      return "model.layers." + layer + "." + b.hf + "." + suffix;
  return gguf;
}

class GgufWeightSource : public ViewWeightSource {
public:
  explicit GgufWeightSource(io::GgufFile file) : file_(std::move(file)) {
    for (const io::GgufTensorInfo &t : file_.tensor_infos())
      add(WeightInfo{canonicalName(t.name), t.shape,
                     io::ggml_type_name(t.ggml_type)},
          t.name);
  }
  const std::string &origin() const override { return file_.path(); }
  const io::GgufFile &file() const { return file_; }

protected:
  Expected<io::TensorView> view(const std::string &stored) const override {
    return file_.tensor(stored);
  }

private:
  io::GgufFile file_;
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
  auto source = std::make_unique<GgufWeightSource>(std::move(*opened));
  HYC_CKPT_TRY(validate_weights(ckpt.spec, *source));
  ckpt.weights = std::move(source);
  if (!options.tokenizer_path.empty())
    HYC_CKPT_TRY(attach_llama2c_tokenizer(ckpt, options, {}));
  return ckpt;
}

} // namespace hyc::models::detail
