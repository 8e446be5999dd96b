// Engine over the stories260K fixture artifact: incremental decode and
// chunked / batched prefill agree with one whole-sequence extend, limits are
// refused before the artifact runs, and generate() stops where it should.
#include "stories_engine.h"

#include "hyrt/engine/engine.h"
#include "test/common/compare.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace {

using hyrt_test::StoriesArtifactOptions;
using hyrt_test::TempDir;

using hyrt_test::Loaded;

void load(Loaded *out, const StoriesArtifactOptions &ao = {},
          const hyrt::EngineOptions &eo = {}) {
  hyrt_test::load_stories(out, ao, eo);
}

/// The first n tokens (BOS first) of the published greedy sample.
std::vector<int32_t> story_tokens(const hyrt::Artifact &art, size_t n) {
  const std::string text = hyrt_test::read_file(
      hyrt_test::stories_dir() + "/expected-greedy-256.txt");
  std::vector<int32_t> ids = art.tokenizer()->encode(text, true);
  EXPECT_GE(ids.size(), n);
  ids.resize(std::min(ids.size(), n));
  return ids;
}

using hyc::test::maxAbsDiff;

/// Logits of every position of `tokens`, fed as one extend call sequence.
std::vector<float> whole_extend(hyrt::Engine &engine,
                                const std::vector<int32_t> &tokens) {
  const int64_t seq = engine.add_sequence();
  std::vector<float> logits;
  hyrt::Status s = engine.extend(seq, tokens, &logits);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(engine.release(seq).ok());
  return logits;
}

TEST(Engine, ExtendThenDecodeMatchesWholeExtend) {
  REQUIRE_STORIES();
  for (int64_t page_size : {1, 3, 16, 64}) {
    hyrt::EngineOptions eo;
    eo.page_size = page_size;
    Loaded l;
    load(&l, {}, eo);
    hyrt::Engine &e = *l.engine;
    const std::vector<int32_t> tokens = story_tokens(*l.artifact, 100);
    const std::vector<float> whole = whole_extend(e, tokens);
    ASSERT_EQ(whole.size(), tokens.size() * 512);
    for (size_t split : {1, 7, 16, 33, 64, 99}) {
      const int64_t seq = e.add_sequence();
      std::vector<float> got, row;
      ASSERT_TRUE(e.extend(seq, {tokens.begin(), tokens.begin() + split}, &got)
                      .ok());
      for (size_t t = split; t < tokens.size(); ++t) {
        hyrt::Status s = e.decode({seq}, {tokens[t]}, &row);
        ASSERT_TRUE(s.ok()) << s.message();
        got.insert(got.end(), row.begin(), row.end());
      }
      EXPECT_EQ(e.seq_length(seq), int64_t(tokens.size()));
      EXPECT_LT(maxAbsDiff(got, whole), 1e-4f)
          << "page_size " << page_size << " split " << split;
      ASSERT_TRUE(e.release(seq).ok());
    }
    EXPECT_EQ(e.kv_cache().free_pages(), e.kv_cache().config().num_pages);
  }
}

TEST(Engine, ChunkedPrefillMatchesSingleExtend) {
  REQUIRE_STORIES();
  // The fixture plans its arena for 64-token steps and fails larger ones,
  // so 150 tokens only go through when the engine chunks them.
  Loaded wide, narrow;
  load(&wide);
  StoriesArtifactOptions o;
  o.max_batch_tokens = 16;
  load(&narrow, o);
  const std::vector<int32_t> tokens = story_tokens(*wide.artifact, 150);
  const std::vector<float> a = whole_extend(*wide.engine, tokens);
  const std::vector<float> b = whole_extend(*narrow.engine, tokens);
  ASSERT_EQ(a.size(), 150u * 512);
  EXPECT_LT(maxAbsDiff(a, b), 1e-4f);
  // Reference: 40 tokens in one step.
  const std::vector<int32_t> head(tokens.begin(), tokens.begin() + 40);
  EXPECT_LT(maxAbsDiff(whole_extend(*narrow.engine, head),
                         std::vector<float>(a.begin(), a.begin() + 40 * 512)),
            1e-4f);
  // Only the last row.
  const int64_t seq = wide.engine->add_sequence();
  std::vector<float> last;
  ASSERT_TRUE(wide.engine->extend(seq, tokens, &last, false).ok());
  EXPECT_EQ(last, std::vector<float>(a.end() - 512, a.end()));
}

TEST(Engine, BatchedStepsMatchSingleSequences) {
  REQUIRE_STORIES();
  Loaded l;
  load(&l);
  hyrt::Engine &e = *l.engine;
  const std::vector<int32_t> story = story_tokens(*l.artifact, 60);
  const std::vector<std::vector<int32_t>> prompts = {
      {story.begin(), story.begin() + 20},
      {story.begin(), story.begin() + 5},
      {story.begin() + 30, story.begin() + 60}};
  std::vector<std::vector<float>> single;
  for (const auto &p : prompts)
    single.push_back(whole_extend(e, p));

  std::vector<hyrt::SeqChunk> chunks;
  for (const auto &p : prompts)
    chunks.push_back({e.add_sequence(), p});
  std::vector<float> packed;
  hyrt::Status s = e.extend_batch(chunks, &packed);
  ASSERT_TRUE(s.ok()) << s.message();
  size_t row = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::vector<float> part(packed.begin() + row * 512,
                                  packed.begin() +
                                      (row + prompts[i].size()) * 512);
    EXPECT_LT(maxAbsDiff(part, single[i]), 1e-4f) << "sequence " << i;
    row += prompts[i].size();
  }

  // One batched decode step == three single-sequence decodes.
  const std::vector<int32_t> next = {story[20], story[5], story[1]};
  std::vector<float> batched;
  ASSERT_TRUE(e.decode({chunks[0].seq_id, chunks[1].seq_id, chunks[2].seq_id},
                       next, &batched)
                  .ok());
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::vector<int32_t> longer = prompts[i];
    longer.push_back(next[i]);
    const std::vector<float> ref = whole_extend(e, longer);
    EXPECT_LT(maxAbsDiff({batched.begin() + i * 512,
                            batched.begin() + (i + 1) * 512},
                           {ref.end() - 512, ref.end()}),
              1e-4f)
        << "sequence " << i;
  }
}

TEST(Engine, LimitsAreRefusedBeforeTheArtifactRuns) {
  REQUIRE_STORIES();
  StoriesArtifactOptions o;
  o.max_seq_len = 256;
  Loaded l;
  load(&l, o);
  hyrt::Engine &e = *l.engine;
  const int64_t seq = e.add_sequence();
  std::vector<float> logits;
  hyrt::Status s = e.extend(seq, std::vector<int32_t>(300, 5), &logits);
  EXPECT_EQ(s.message(), "300 tokens at position 0 of sequence 0 exceed "
                         "max_seq_len 256 of this artifact");
  EXPECT_EQ(e.seq_length(seq), 0);
  ASSERT_TRUE(e.extend(seq, std::vector<int32_t>(250, 5), &logits).ok());
  s = e.extend(seq, std::vector<int32_t>(7, 5), &logits);
  EXPECT_EQ(s.message(), "7 tokens at position 250 of sequence 0 exceed "
                         "max_seq_len 256 of this artifact");

  std::vector<int64_t> seqs;
  for (int i = 0; i < 9; ++i)
    seqs.push_back(e.add_sequence());
  s = e.decode(seqs, std::vector<int32_t>(9, 1), &logits);
  EXPECT_EQ(s.message(), "decode batch of 9 exceeds max_seqs 8 of this "
                         "artifact");
  s = e.decode({seqs[0]}, {1, 2}, &logits);
  EXPECT_NE(s.message().find("1 sequences but 2 tokens"), std::string::npos);
  s = e.extend_batch({{seqs[0], std::vector<int32_t>(40, 1)},
                      {seqs[1], std::vector<int32_t>(30, 1)}},
                     &logits);
  EXPECT_EQ(s.message(), "extend step of 70 tokens exceeds max_batch_tokens "
                         "64 of this artifact");
  s = e.extend(999, {1}, &logits);
  EXPECT_EQ(s.message(), "unknown sequence 999 (not added or already "
                         "released)");
  s = e.extend(seqs[0], {1, 512}, &logits);
  EXPECT_NE(s.message().find("token id 512 outside [0, 512)"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(e.release(999).ok());

  hyrt::GenerateOptions go;
  go.max_new_tokens = 10;
  hyrt::GenerateResult r;
  s = e.generate(std::vector<int32_t>(300, 1), go, nullptr, &r);
  EXPECT_EQ(s.message(), "prompt of 300 tokens + 10 new exceeds max_seq_len "
                         "256 of this artifact");
}

TEST(Engine, NonZeroEntryPointReturnIsAnError) {
  REQUIRE_STORIES();
  // The manifest (and the description) promise 100-token steps; the
  // fixture's step check refuses > 64, as generated entry points refuse a
  // step past their compiled bounds.
  StoriesArtifactOptions o;
  o.max_batch_tokens = 100;
  Loaded l;
  load(&l, o);
  const int64_t seq = l.engine->add_sequence();
  std::vector<float> logits;
  hyrt::Status s = l.engine->extend(seq, std::vector<int32_t>(80, 1), &logits);
  EXPECT_EQ(s.message(), "hyc_extend_v0 refused a step of 80 tokens over 1 "
                         "sequences: the step's token count is outside the "
                         "compiled bound (code 2)");
  EXPECT_EQ(l.engine->seq_length(seq), 0);
  // The engine stays usable.
  EXPECT_TRUE(l.engine->extend(seq, std::vector<int32_t>(60, 1), &logits).ok());
}

TEST(Engine, KvPoolExhaustionIsReportedAndRecoverable) {
  REQUIRE_STORIES();
  hyrt::EngineOptions eo;
  eo.num_pages = 4; // 64 positions
  Loaded l;
  load(&l, {}, eo);
  hyrt::Engine &e = *l.engine;
  const int64_t a = e.add_sequence(), b = e.add_sequence();
  std::vector<float> logits;
  ASSERT_TRUE(e.extend(a, std::vector<int32_t>(40, 1), &logits).ok());
  hyrt::Status s = e.extend(b, std::vector<int32_t>(40, 1), &logits);
  EXPECT_NE(s.message().find("KV cache pool exhausted"), std::string::npos)
      << s.message();
  ASSERT_TRUE(e.release(a).ok());
  s = e.extend(b, std::vector<int32_t>(40, 1), &logits);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(Engine, GenerateStopsAtMaxSeqLenAndRecordsLogits) {
  REQUIRE_STORIES();
  StoriesArtifactOptions o;
  o.max_seq_len = 20;
  Loaded l;
  load(&l, o);
  hyrt::GenerateOptions go;
  go.max_new_tokens = 100;
  go.record_logits = true;
  std::vector<int32_t> streamed;
  hyrt::GenerateResult r;
  hyrt::Status s = l.engine->generate(
      {1, 403}, go,
      [&](int32_t id) {
        streamed.push_back(id);
        return true;
      },
      &r);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(r.stop_reason, "max_seq_len");
  // Positions 0..19 are fed; the token sampled from position 19 is the
  // last one: 20 - 2 + 1 generated.
  EXPECT_EQ(r.tokens.size(), 19u);
  EXPECT_EQ(streamed, r.tokens);
  EXPECT_EQ(r.logits_rows, 20);
  EXPECT_EQ(r.decode_steps, 18);
  // Greedy: each generated token is the argmax of the row before it, and
  // the recorded rows equal one extend over everything fed.
  std::vector<int32_t> fed = {1, 403};
  fed.insert(fed.end(), r.tokens.begin(), r.tokens.end() - 1);
  EXPECT_LT(maxAbsDiff(r.logits, whole_extend(*l.engine, fed)), 1e-4f);
  for (size_t i = 0; i < r.tokens.size(); ++i)
    EXPECT_EQ(r.tokens[i],
              hyrt::argmax(r.logits.data() + (i + 1) * 512, 512));
  EXPECT_EQ(l.engine->kv_cache().num_sequences(), 0);
}

TEST(Engine, GenerateStopTokensLengthAndCallback) {
  REQUIRE_STORIES();
  Loaded l;
  load(&l);
  hyrt::Engine &e = *l.engine;
  hyrt::GenerateOptions go;
  go.max_new_tokens = 12;
  hyrt::GenerateResult r;
  ASSERT_TRUE(e.generate({1}, go, nullptr, &r).ok());
  EXPECT_EQ(r.stop_reason, "length");
  ASSERT_EQ(r.tokens.size(), 12u);
  const std::vector<int32_t> greedy = r.tokens;

  go.stop_tokens = {greedy[4]};
  ASSERT_TRUE(e.generate({1}, go, nullptr, &r).ok());
  EXPECT_EQ(r.stop_reason, "stop_token");
  const size_t first =
      std::find(greedy.begin(), greedy.end(), greedy[4]) - greedy.begin();
  EXPECT_EQ(r.tokens, std::vector<int32_t>(greedy.begin(),
                                           greedy.begin() + first));

  go.stop_tokens.clear();
  int calls = 0;
  ASSERT_TRUE(
      e.generate({1}, go, [&](int32_t) { return ++calls < 3; }, &r).ok());
  EXPECT_EQ(r.stop_reason, "callback");
  EXPECT_EQ(r.tokens.size(), 3u);

  go.max_new_tokens = 0;
  ASSERT_TRUE(e.generate({1}, go, nullptr, &r).ok());
  EXPECT_TRUE(r.tokens.empty());
  EXPECT_FALSE(e.generate({}, go, nullptr, &r).ok());
  go.sampler.top_p = 0;
  go.max_new_tokens = 3;
  EXPECT_FALSE(e.generate({1}, go, nullptr, &r).ok());
}

TEST(Engine, BadEngineOptions) {
  REQUIRE_STORIES();
  Loaded l;
  load(&l);
  hyrt::EngineOptions eo;
  eo.page_size = 0;
  std::unique_ptr<hyrt::Engine> e;
  EXPECT_EQ(hyrt::Engine::create(l.artifact.get(), eo, &e).message(),
            "KV cache page_size: expected > 0, found 0");
}

} // namespace
