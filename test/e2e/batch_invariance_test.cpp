// Batch invariance: a sequence's logits do not depend on which other
// sequences share its step. The scheduler batches requests freely, so a
// greedy request must give the same tokens alone or batched (issue 12);
// that holds only if every kernel computes a row the same way whatever
// rows surround it. For every variant this host executes, on a dense, a
// MoE (rows reach an expert in groups that change with the batch) and an
// MLA family, in every weight precision: the same prompt and decode steps
// alone and inside batches of other sequences must give bit-identical
// logits.
#include "test/e2e/e2e_util.h"
#include "test/e2e/engine_util.h"

#include <gtest/gtest.h>

#include <cstring>
#include <sys/stat.h>

namespace hyc::e2e {
namespace {

struct Case {
  std::string family;
  std::string quant;
};

std::string caseLabel(const ::testing::TestParamInfo<Case> &info) {
  std::string n = info.param.family + "_" + info.param.quant;
  for (char &c : n)
    if (c == '-')
      c = '_';
  return n;
}

/// The logits of `tokens[0..prefix)` as one extend and then one decode step
/// per remaining token, alone on the engine (extend: the last row only).
std::vector<float> aloneLogits(hyrt::Engine &engine, const std::vector<int32_t> &tokens,
                               size_t prefix) {
  return incrementalLogits(engine, tokens, prefix);
}

/// The same as aloneLogits, but each step also carries `others` (fresh
/// sequences: their prompts in the extend, then one token each per decode,
/// placed before and after ours so our rows land mid-batch). Returns only
/// our rows.
std::vector<float> batchedLogits(hyrt::Engine &engine, const std::vector<int32_t> &tokens,
                                 size_t prefix, const std::vector<std::vector<int32_t>> &others,
                                 int64_t vocab) {
  std::vector<int64_t> seqs;
  std::vector<hyrt::SeqChunk> chunks;
  size_t ours = 0, rowsBefore = 0;
  for (size_t i = 0; i <= others.size(); ++i) {
    hyrt::SeqChunk c;
    c.seq_id = engine.add_sequence();
    seqs.push_back(c.seq_id);
    if (i == 1) { // ours second
      ours = chunks.size();
      c.tokens.assign(tokens.begin(), tokens.begin() + prefix);
    } else {
      c.tokens = others[i < 1 ? i : i - 1];
    }
    if (i < 1)
      rowsBefore += c.tokens.size();
    chunks.push_back(c);
  }
  std::vector<float> all, step;
  hyrt::Status st = engine.extend_batch(chunks, &step);
  EXPECT_TRUE(st.ok()) << st.message();
  if (!st.ok())
    return {};
  all.assign(step.begin() + rowsBefore * vocab,
             step.begin() + (rowsBefore + prefix) * vocab);
  for (size_t t = prefix; t < tokens.size(); ++t) {
    std::vector<int32_t> fed;
    for (size_t i = 0; i < seqs.size(); ++i)
      fed.push_back(i == ours ? tokens[t] : int32_t((t * 7 + i * 13) % 97 + 3));
    st = engine.decode(seqs, fed, &step);
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok())
      return {};
    all.insert(all.end(), step.begin() + ours * vocab, step.begin() + (ours + 1) * vocab);
  }
  for (int64_t s : seqs)
    EXPECT_TRUE(engine.release(s).ok());
  return all;
}

class BatchInvariance : public ::testing::TestWithParam<Case> {};

// 24 prompt tokens in one extend, then 10 decode steps: alone, then with
// two other sequences (7 and 13 prompt tokens: 44 extend rows, 3 decode
// rows), then with three (1, 5 and 30 tokens: 60 extend rows, 4 decode
// rows). Row counts chosen so that our rows fall in different row blocks
// and remainders of the generated kernels each time. The comparison is
// bitwise: greedy decoding must not depend on the batch, and any
// batch-dependent summation order shows as a last-bit difference long
// before it flips an argmax.
TEST_P(BatchInvariance, LogitsDoNotDependOnTheBatch) {
  const Case c = GetParam();
  const std::string dir = sharedDir() + "/golden/" + c.family;
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    GTEST_SKIP() << "golden data absent at " << dir;
  const std::string art =
      compileOnce(dir, {"--target", "portable", "--quant", c.quant, "--max-seq-len", "128",
                        "--max-batch-tokens", "64", "--max-seqs", "4"});
  const VariantSplit variants = variantsOf(art);
  for (const std::string &why : variants.skipped)
    std::printf("[ SKIPPED  ] variant %s\n", why.c_str());
  ASSERT_FALSE(variants.run.empty());
  const std::vector<int32_t> tokens = goldenTokens(dir, "64");
  std::vector<int32_t> ours(tokens.begin(), tokens.begin() + 34);
  const std::vector<std::vector<int32_t>> two = {
      {tokens.begin() + 40, tokens.begin() + 47}, {tokens.begin() + 3, tokens.begin() + 16}};
  const std::vector<std::vector<int32_t>> three = {
      {tokens.begin() + 50, tokens.begin() + 51},
      {tokens.begin() + 9, tokens.begin() + 14},
      {tokens.begin() + 30, tokens.begin() + 60}};
  for (const std::string &isa : variants.run) {
    SCOPED_TRACE("variant " + isa);
    LoadedModel m = loadModel(art, 16, isa);
    ASSERT_TRUE(m.engine);
    const int64_t vocab = m.artifact->manifest().model.vocab_size;
    const std::vector<float> alone = aloneLogits(*m.engine, ours, 24);
    ASSERT_EQ(alone.size(), size_t(34 * vocab));
    for (const auto *others : {&two, &three}) {
      const std::vector<float> batched = batchedLogits(*m.engine, ours, 24, *others, vocab);
      ASSERT_EQ(batched.size(), alone.size());
      size_t firstDiff = alone.size();
      for (size_t i = 0; i < alone.size() && firstDiff == alone.size(); ++i)
        if (std::memcmp(&alone[i], &batched[i], sizeof(float)) != 0)
          firstDiff = i;
      EXPECT_EQ(firstDiff, alone.size())
          << "with " << others->size() << " other sequences: row " << firstDiff / vocab
          << " (" << (firstDiff / vocab < 24 ? "extend" : "decode") << ") column "
          << firstDiff % vocab << ": alone " << alone[firstDiff] << ", batched "
          << batched[firstDiff];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Families, BatchInvariance,
    ::testing::Values(Case{"llama3-tiny", "f32"}, Case{"llama3-tiny", "bf16"},
                      Case{"llama3-tiny", "w8a8"}, Case{"llama3-tiny", "fp8"},
                      Case{"qwen3moe-tiny", "bf16"}, Case{"qwen3moe-tiny", "w8a8"},
                      Case{"deepseekv3-tiny", "bf16"}),
    caseLabel);

} // namespace
} // namespace hyc::e2e
