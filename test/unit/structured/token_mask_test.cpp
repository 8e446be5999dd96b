// token_mask_test.cpp - masks over the real Qwen3 vocabulary: what they
// forbid, tokens spanning several automaton steps, UTF-8 split across
// tokens, returns below the cached stack frames, and the cache itself.
#include "hyrt/structured/grammar_matcher.h"
#include "structured_test_util.h"

#include <cmath>

namespace {

using hyrt::structured::CompiledConstraint;
using hyrt::structured::GrammarConstraint;
using hyrt::structured::TokenVocabulary;

int32_t idOf(const TokenVocabulary &v, const std::string &bytes) {
  for (int32_t id = 0; id < v.size(); ++id)
    if (v.bytes(id) == bytes)
      return id;
  return -1;
}

std::vector<int32_t> allowedIds(GrammarConstraint &c) {
  std::vector<uint64_t> bits;
  c.allowed(&bits);
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < int32_t(bits.size() * 64); ++id)
    if ((bits[id >> 6] >> (id & 63)) & 1)
      ids.push_back(id);
  return ids;
}

class TokenMask : public ::testing::Test {
protected:
  void SetUp() override {
    lt_ = hyc::test::sharedTokenizer("qwen3");
    ASSERT_NE(lt_, nullptr);
  }
  std::unique_ptr<GrammarConstraint> constraint(const std::string &schema) {
    auto g = hyc::test::compileOrFail(schema);
    compiled_ = std::make_shared<CompiledConstraint>(g, lt_->vocab);
    return std::make_unique<GrammarConstraint>(compiled_);
  }
  const TokenVocabulary &v() const { return *lt_->vocab; }
  const hyc::test::LoadedTokenizer *lt_ = nullptr;
  std::shared_ptr<CompiledConstraint> compiled_;
};

TEST_F(TokenMask, IntegerStartsWithDigitOrMinusOnly) {
  auto c = constraint(R"({"type":"integer"})");
  const std::vector<int32_t> ids = allowedIds(*c);
  ASSERT_FALSE(ids.empty());
  for (int32_t id : ids) {
    const std::string &b = v().bytes(id);
    ASSERT_FALSE(b.empty());
    EXPECT_TRUE(b[0] == '-' || (b[0] >= '0' && b[0] <= '9')) << b;
  }
  EXPECT_FALSE(c->allows(idOf(v(), " 1")));
  EXPECT_FALSE(c->allows(idOf(v(), "\"")));
  EXPECT_FALSE(c->allows(v().stop_ids()[0])); // nothing written yet
  ASSERT_TRUE(c->accept(idOf(v(), "7")));
  EXPECT_TRUE(c->complete());
  EXPECT_TRUE(c->allows(v().stop_ids()[0]));
  EXPECT_FALSE(c->accept(idOf(v(), "a")));
}

TEST_F(TokenMask, BoundedStringAllowsOnlyTheClosingQuoteAtItsEnd) {
  auto c = constraint(R"({"type":"string","maxLength":3})");
  ASSERT_TRUE(c->accept(idOf(v(), "\"")));
  ASSERT_TRUE(c->accept(idOf(v(), "abc")));
  const std::vector<int32_t> ids = allowedIds(*c);
  ASSERT_FALSE(ids.empty());
  for (int32_t id : ids)
    EXPECT_EQ(v().bytes(id), "\"") << "only the closing quote may follow";
  EXPECT_FALSE(c->complete());
  EXPECT_TRUE(c->accept(idOf(v(), "\"")));
  EXPECT_TRUE(c->complete());
  EXPECT_FALSE(c->can_continue());
}

TEST_F(TokenMask, Utf8SplitAcrossTokensMustBeFinished) {
  auto c = constraint(R"({"type":"string"})");
  ASSERT_TRUE(c->accept(idOf(v(), "\"")));
  const int32_t lead = idOf(v(), "\xE4"); // lead byte of U+4F60 and more
  ASSERT_GE(lead, 0);
  ASSERT_TRUE(c->accept(lead));
  const std::vector<int32_t> ids = allowedIds(*c);
  ASSERT_FALSE(ids.empty());
  for (int32_t id : ids) {
    const unsigned char b = v().bytes(id)[0];
    EXPECT_TRUE(b >= 0x80 && b <= 0xBF) << "token " << id;
  }
  ASSERT_TRUE(c->accept(idOf(v(), "\xBD")));
  ASSERT_TRUE(c->accept(idOf(v(), "\xA0"))); // "你" complete
  EXPECT_TRUE(c->allows(idOf(v(), "\"")));
}

TEST_F(TokenMask, TokensSpanningSeveralStepsAndNestedReturns) {
  auto c = constraint(R"({"type":"object","properties":{"a":{"type":"array",
      "items":{"type":"array","items":{"type":"array","items":{
      "type":"integer"}}}}},"required":["a"]})");
  const int32_t open = idOf(v(), "{\"");
  ASSERT_GE(open, 0);
  EXPECT_TRUE(c->allows(open)); // two automaton steps in one token
  ASSERT_TRUE(c->accept(open));
  for (const char *piece : {"a", "\":", " [[", "[", "1"})
    ASSERT_TRUE(c->accept(idOf(v(), piece))) << piece;
  // "]]," returns from three item rules, below the two frames a mask key
  // keeps, then reads on: the cached mask marks it uncertain and the full
  // stack decides. "}}}" is wrong at any depth here.
  const int32_t close_next = idOf(v(), "]],");
  ASSERT_GE(close_next, 0);
  EXPECT_TRUE(c->allows(close_next));
  EXPECT_FALSE(c->allows(idOf(v(), "}}}")));
  EXPECT_FALSE(c->allows(idOf(v(), "]}")));
  ASSERT_TRUE(c->accept(close_next));
  for (const char *piece : {"[", "[", "2", "]]"})
    ASSERT_TRUE(c->accept(idOf(v(), piece))) << piece;
  EXPECT_FALSE(c->complete());
  EXPECT_FALSE(c->allows(idOf(v(), "]]"))); // one array is left open
  ASSERT_TRUE(c->accept(idOf(v(), "]}")));
  EXPECT_TRUE(c->complete());
}

TEST_F(TokenMask, DeepGenericNestingKeepsMasksExact) {
  auto c = constraint(R"({"type":"object","properties":{"x":{}},
      "required":["x"]})");
  hyrt::structured::GrammarMatcher check(compiled_->grammar());
  std::string text = "{\"x\":";
  for (int i = 0; i < 12; ++i)
    text += "[";
  ASSERT_TRUE(check.advance(text));
  for (char ch : text)
    ASSERT_TRUE(c->accept(idOf(v(), std::string(1, ch))));
  // Every token, allowed or not, agrees with a matcher on the full stack.
  std::vector<uint64_t> bits;
  c->allowed(&bits);
  for (int32_t id = 0; id < v().size(); ++id) {
    if (v().bytes(id).empty())
      continue;
    const bool allowed = (bits[id >> 6] >> (id & 63)) & 1;
    ASSERT_EQ(allowed, check.can_advance(v().bytes(id)))
        << "token " << id << " '" << v().bytes(id) << "'";
  }
}

TEST_F(TokenMask, MaskSetsMinusInfinityAndCoversPaddedVocabularies) {
  auto c = constraint(R"({"type":"boolean"})");
  const int64_t n = v().size() + 100; // model vocabularies are padded
  std::vector<float> logits(n, 1.0f);
  c->mask(logits.data(), n);
  int64_t finite = 0;
  for (int64_t id = 0; id < n; ++id) {
    if (std::isfinite(logits[id])) {
      ++finite;
      const std::string &b = v().bytes(int32_t(id));
      EXPECT_TRUE(std::string("true").rfind(b, 0) == 0 ||
                  std::string("false").rfind(b, 0) == 0)
          << b;
    }
  }
  EXPECT_GT(finite, 2);
  for (int64_t id = v().size(); id < n; ++id)
    EXPECT_TRUE(std::isinf(logits[id]));
}

TEST_F(TokenMask, SecondRequestHitsTheCache) {
  auto g = hyc::test::compileOrFail(
      R"({"type":"object","properties":{"k":{"enum":["x","y"]}},
      "required":["k"]})");
  auto compiled = std::make_shared<CompiledConstraint>(g, lt_->vocab);
  auto run = [&] {
    GrammarConstraint c(compiled);
    for (const char *piece : {"{\"", "k", "\":", "\"", "x", "\"}"}) {
      std::vector<uint64_t> bits;
      c.allowed(&bits);
      ASSERT_TRUE(c.accept(idOf(v(), piece))) << piece;
    }
    EXPECT_TRUE(c.complete());
  };
  run();
  const auto first = compiled->stats();
  EXPECT_GT(first.misses, 0);
  run();
  const auto second = compiled->stats();
  EXPECT_EQ(second.misses, first.misses);
  EXPECT_GE(second.hits, first.hits + 6);
}

} // namespace
