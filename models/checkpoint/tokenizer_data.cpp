#include "models/checkpoint/tokenizer_data.h"

namespace hyc::models {

hyrt::Status to_tokenizer_data(const TokenizerSpec &t, hyrt::TokenizerData *out) {
  if (t.kind == "hf")
    return hyrt::read_hf_tokenizer(t.hf_dir, out);
  hyrt::TokenizerData data;
  if (t.kind == "llama2c")
    data.kind = hyrt::TokenizerKind::kLlama2c;
  else if (t.kind == "sentencepiece")
    data.kind = hyrt::TokenizerKind::kSentencePiece;
  else if (t.kind == "gpt2")
    data.kind = hyrt::TokenizerKind::kGpt2;
  else
    return hyrt::Status::Error("unknown tokenizer kind '" + t.kind + "'");
  data.tokens = t.tokens;
  data.scores = t.scores;
  data.types = t.types;
  data.merges = t.merges;
  data.bos_id = t.bos_id;
  data.eos_id = t.eos_id;
  data.unk_id = t.unk_id;
  *out = std::move(data);
  return hyrt::Status::Ok();
}

} // namespace hyc::models
