// What every checkpoint fuzz target does with a checkpoint that loaded: read
// each weight as the compiler would and run its tokenizer, so that values the
// loader accepted are also used, not only parsed.
#ifndef HYC_TEST_FUZZ_EXERCISE_H
#define HYC_TEST_FUZZ_EXERCISE_H

#include "hyrt/text/tokenizer.h"
#include "models/checkpoint/model_spec.h"
#include "models/checkpoint/tokenizer_data.h"
#include "test/fuzz/fuzz_files.h"

#include <cstdint>
#include <vector>

namespace hyc::fuzz {

inline void exerciseTokenizer(const models::TokenizerSpec &t) {
  if (t.kind == "hf")
    return; // read by the tokenizer.json target
  hyrt::TokenizerData data;
  if (hyrt::Status st = models::to_tokenizer_data(t, &data); !st.ok()) {
    explain("to_tokenizer_data", st.message());
    return;
  }
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
