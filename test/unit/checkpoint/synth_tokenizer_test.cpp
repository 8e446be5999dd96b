// The tokenizer.bin that synthesize() writes runs text through hyrt's
// llama2.c tokenizer: encode then decode gives the text back, with byte
// fallback for anything outside the printable pieces.
#include "checkpoint_test_util.h"

#include "models/checkpoint/synth.h"

#include "hyrt/text/tokenizer.h"

namespace hyc::models::test {
namespace {

hyrt::TokenizerData toRuntime(const TokenizerSpec &t) {
  hyrt::TokenizerData d;
  d.kind = hyrt::TokenizerKind::kLlama2c;
  d.tokens = t.tokens;
  d.scores = t.scores;
  d.types = t.types;
  d.bos_id = t.bos_id;
  d.eos_id = t.eos_id;
  d.unk_id = t.unk_id;
  return d;
}

TEST(CheckpointSynthTokenizer, EncodeDecodeRoundTrip) {
  for (const char *preset : {"tiny", "small"}) {
    TempDir dir;
    SynthOptions o;
    o.preset = preset;
    o.output_dir = dir.str();
    ASSERT_TRUE(synthesize(o).ok());
    HYC_CKPT_LOAD(ckpt, dir.str());
    ASSERT_TRUE(ckpt.tokenizer.has_value());
    hyrt::Tokenizer tok;
    auto st = tok.init(toRuntime(*ckpt.tokenizer));
    ASSERT_TRUE(st.ok()) << st.message();

    for (const std::string text :
         {"Once upon a time, Tom saw 3 cats!", "tab\tnew\nline",
          "caf\xC3\xA9 \xE2\x98\x83"}) {
      std::vector<int32_t> ids = tok.encode(text, /*add_bos=*/true);
      ASSERT_FALSE(ids.empty());
      EXPECT_EQ(ids.front(), 1);
      for (int32_t id : ids) {
        EXPECT_GE(id, 0);
        EXPECT_LT(id, ckpt.spec.vocab_size);
      }
      EXPECT_EQ(tok.decode_all(ids), text) << preset;
      // Merges make the sequence shorter than one token per byte.
      if (text[0] == 'O')
        EXPECT_LT(ids.size(), text.size()) << preset;
    }
  }
}

} // namespace
} // namespace hyc::models::test

namespace hyc::models::test {
namespace {

// A copied Hugging Face tokenizer must fit the embedding, or the compile
// would drop it: without --vocab-size the preset's vocabulary grows to the
// tokenizer's ids (Qwen3: 151,669 ids -> 151,680 rows), a --vocab-size
// below them is refused naming both numbers, one at or above them is kept.
TEST(CheckpointSynthTokenizer, AHuggingFaceTokenizerFitsTheVocabulary) {
  HYC_CKPT_REQUIRE_SHARED(qwen3, "tokenizers/qwen3");
  {
    TempDir dir;
    SynthOptions o;
    o.arch = "qwen3";
    o.preset = "tiny";
    o.hf_tokenizer_dir = qwen3;
    o.output_dir = dir.str();
    auto st = synthesize(o);
    ASSERT_TRUE(st.ok()) << st.error();
    HYC_CKPT_LOAD(ckpt, dir.str());
    EXPECT_EQ(ckpt.spec.vocab_size, 151680);
  }
  {
    TempDir dir;
    SynthOptions o;
    o.arch = "qwen3";
    o.preset = "tiny";
    o.hf_tokenizer_dir = qwen3;
    o.vocab_size = 151668;
    o.output_dir = dir.str();
    auto st = synthesize(o);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().find("--vocab-size 151668 is smaller than the ids"), std::string::npos)
        << st.error();
    EXPECT_NE(st.error().find("expected at least 151669"), std::string::npos) << st.error();
    o.vocab_size = 151669;
    st = synthesize(o);
    ASSERT_TRUE(st.ok()) << st.error();
    HYC_CKPT_LOAD(ckpt, dir.str());
    EXPECT_EQ(ckpt.spec.vocab_size, 151669);
  }
}

} // namespace
} // namespace hyc::models::test
