// reasoning_test.cpp - <think> splitting, streamed in every split, for
// Qwen3 (the output opens the block) and DeepSeek-R1 (the prompt does).
#include "hyrt/structured/reasoning.h"

#include <gtest/gtest.h>

namespace {

using hyrt::structured::ReasoningDelta;
using hyrt::structured::ReasoningSplitter;

ReasoningDelta run(bool in_reasoning, const std::vector<std::string> &pieces) {
  ReasoningSplitter s(in_reasoning);
  ReasoningDelta all;
  for (const std::string &p : pieces) {
    ReasoningDelta d = s.feed(p);
    all.reasoning += d.reasoning;
    all.content += d.content;
  }
  ReasoningDelta d = s.finish();
  all.reasoning += d.reasoning;
  all.content += d.content;
  return all;
}

void expectEverySplit(bool in_reasoning, const std::string &text,
                      const std::string &reasoning,
                      const std::string &content) {
  for (size_t a = 0; a <= text.size(); ++a)
    for (size_t b = a; b <= text.size(); b += 3) {
      ReasoningDelta d = run(in_reasoning, {text.substr(0, a),
                                            text.substr(a, b - a),
                                            text.substr(b)});
      EXPECT_EQ(d.reasoning, reasoning) << "cuts " << a << ", " << b;
      EXPECT_EQ(d.content, content) << "cuts " << a << ", " << b;
    }
  std::vector<std::string> bytes;
  for (char c : text)
    bytes.push_back(std::string(1, c));
  ReasoningDelta d = run(in_reasoning, bytes);
  EXPECT_EQ(d.reasoning, reasoning);
  EXPECT_EQ(d.content, content);
}

TEST(Reasoning, Qwen3OpensTheBlockItself) {
  expectEverySplit(false, "<think>\nWeigh <b> vs </thin.\n</think>\n\nAnswer: 4",
                   "\nWeigh <b> vs </thin.\n", "Answer: 4");
}

TEST(Reasoning, ThinkingOffIsAllContent) {
  expectEverySplit(false, "Plain <thinking> answer", "",
                   "Plain <thinking> answer");
  expectEverySplit(false, "<thin", "", "<thin");
}

TEST(Reasoning, DeepSeekR1StartsInsideTheBlock) {
  expectEverySplit(true, "2+2 is 4.\n</think>\n\nIt is 4.", "2+2 is 4.\n",
                   "It is 4.");
  // R1 sometimes writes the opening tag again.
  expectEverySplit(true, "<think>\nhm</think>ok", "\nhm", "ok");
}

TEST(Reasoning, UnclosedBlockStaysReasoning) {
  expectEverySplit(false, "<think>still going </thi", "still going </thi", "");
}

TEST(Reasoning, PromptOpensReasoning) {
  using hyrt::structured::prompt_opens_reasoning;
  EXPECT_TRUE(prompt_opens_reasoning("<｜User｜>hi<｜Assistant｜><think>\n"));
  EXPECT_FALSE(prompt_opens_reasoning(
      "<|im_start|>assistant\n<think>\n\n</think>\n\n")); // Qwen3, no think
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n"));
  EXPECT_FALSE(prompt_opens_reasoning("<think> earlier </think> x <think> y"));
}

} // namespace
