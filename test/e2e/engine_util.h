// Loading a compiled artifact into an Engine for logits-level e2e checks.
#ifndef HYC_TEST_E2E_ENGINE_UTIL_H
#define HYC_TEST_E2E_ENGINE_UTIL_H

#include "hyrt/artifact/artifact.h"
#include "hyrt/engine/engine.h"
#include "test/common/compare.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

namespace hyc::e2e {

struct LoadedModel {
  std::unique_ptr<hyrt::Artifact> artifact;
  std::unique_ptr<hyrt::Engine> engine;
};

/// Opens artifact `dir` on an engine; `isa` forces a variant (as HYC_ISA;
/// empty: the best one the host runs).
inline LoadedModel loadModel(const std::string &dir, int64_t pageSize = 16,
                             const std::string &isa = "") {
  LoadedModel m;
  hyrt::ArtifactOptions artifactOptions;
  artifactOptions.isa = isa;
  hyrt::Status st = hyrt::Artifact::open(dir, artifactOptions, &m.artifact);
  EXPECT_TRUE(st.ok()) << st.message();
  if (!st.ok())
    return m;
  if (!isa.empty())
    EXPECT_EQ(m.artifact->variant().name, isa);
  hyrt::EngineOptions options;
  options.page_size = pageSize;
  st = hyrt::Engine::create(m.artifact.get(), options, &m.engine);
  EXPECT_TRUE(st.ok()) << st.message();
  return m;
}

/// Logits of every position of `tokens` from one extend of a new sequence.
inline std::vector<float> wholeSequenceLogits(hyrt::Engine &engine,
                                              const std::vector<int32_t> &tokens) {
  int64_t seq = engine.add_sequence();
  std::vector<float> logits;
  hyrt::Status st = engine.extend(seq, tokens, &logits);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(engine.release(seq).ok());
  return logits;
}

/// The first `prefix` tokens in one extend, then one decode step per token.
inline std::vector<float> incrementalLogits(hyrt::Engine &engine,
                                            const std::vector<int32_t> &tokens,
                                            size_t prefix) {
  int64_t seq = engine.add_sequence();
  std::vector<float> all, step;
  std::vector<int32_t> head(tokens.begin(), tokens.begin() + prefix);
  hyrt::Status st = engine.extend(seq, head, &all);
  EXPECT_TRUE(st.ok()) << st.message();
  for (size_t i = prefix; i < tokens.size(); ++i) {
    st = engine.decode({seq}, {tokens[i]}, &step);
    EXPECT_TRUE(st.ok()) << st.message();
    all.insert(all.end(), step.begin(), step.end());
  }
  EXPECT_TRUE(engine.release(seq).ok());
  return all;
}

/// Whole-sequence then incremental logits of `t` on variant `isa`.
inline std::vector<float> teacherForced(const std::string &artifact, const std::string &isa,
                                 const std::vector<int32_t> &t) {
  LoadedModel m = loadModel(artifact, 16, isa);
  if (!m.engine)
    return {};
  std::vector<float> all = wholeSequenceLogits(*m.engine, t);
  std::vector<float> inc = incrementalLogits(*m.engine, t, 8);
  all.insert(all.end(), inc.begin(), inc.end());
  return all;
}

using hyc::test::maxAbsDiff;

inline int32_t argmaxRow(const float *row, int64_t n) {
  return int32_t(std::max_element(row, row + n) - row);
}

} // namespace hyc::e2e

#endif // HYC_TEST_E2E_ENGINE_UTIL_H
