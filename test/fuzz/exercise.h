// What every checkpoint fuzz target does with a checkpoint that loaded: read
// each weight as the compiler would and run its tokenizer, so that values the
// loader accepted are also used, not only parsed.
#ifndef HYC_TEST_FUZZ_EXERCISE_H
#define HYC_TEST_FUZZ_EXERCISE_H

#include "hyrt/tokenizer.h"
#include "models/checkpoint/model_spec.h"
#include "test/fuzz/fuzz_files.h"

#include <cstdint>
#include <vector>

namespace hyc::fuzz {

inline void exerciseTokenizer(const models::TokenizerSpec &t) {
  hyrt::TokenizerData data;
  if (t.kind == "llama2c")
    data.kind = hyrt::TokenizerKind::kLlama2c;
  else if (t.kind == "sentencepiece")
    data.kind = hyrt::TokenizerKind::kSentencePiece;
  else if (t.kind == "gpt2")
    data.kind = hyrt::TokenizerKind::kGpt2;
  else
    return; // "hf": read by the tokenizer.json target
  data.tokens = t.tokens;
  data.scores = t.scores;
  data.types = t.types;
  data.merges = t.merges;
  data.bos_id = t.bos_id;
  data.eos_id = t.eos_id;
  data.unk_id = t.unk_id;
  hyrt::Tokenizer tok;
  if (hyrt::Status st = tok.init(std::move(data)); !st.ok()) {
    explain("Tokenizer::init", st.message());
    return;
  }
  std::vector<int32_t> ids = tok.encode("Hello, world! \xc3\xa9 12 <s>", true);
  (void)tok.decode_text(ids, false);
  (void)tok.decode_all(ids);
}

inline void exerciseCheckpoint(const models::Checkpoint &ckpt) {
  (void)models::to_string(ckpt.spec);
  if (ckpt.weights) {
    std::vector<float> buf;
    for (const models::WeightInfo &w : ckpt.weights->weights()) {
      int64_t n = 1;
      for (int64_t d : w.shape)
        n = d > 0 && n <= kMaxFuzzElements / d ? n * d : kMaxFuzzElements + 1;
      if (n > kMaxFuzzElements)
        continue;
      buf.resize(size_t(n));
      (void)ckpt.weights->read_f32(w.name, buf.data());
    }
  }
  if (ckpt.tokenizer)
    exerciseTokenizer(*ckpt.tokenizer);
}

} // namespace hyc::fuzz

#endif // HYC_TEST_FUZZ_EXERCISE_H
