// hyc serve's request parsing: unknown fields refused (or ignored
// --lenient), the sampling fields and their bounds, /tokenize and
// /detokenize; with a checkpoint's chat template: messages
// rendered by the template (with the request's chat_template_kwargs) and
// tokenized without a second BOS; without a template, the plain format.
#include "hyrt/text/chat_template.h"
#include "hyrt/text/tokenizer.h"

#include "hyrt/support/json.h"
#include "runtime/serving/openai_api.h"
#include "runtime/serving/tokenize_api.h"
#include "runtime/text/tokenizer/util.h"
#include "test/unit/common/test_files.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

/// Byte-level BPE over the 256 bytes (ids in byte order), merge "a b" ->
/// 256, special "<|x|>" = 300 which tokenizer_config.json makes the BOS.
hyrt::Tokenizer tinyTokenizer() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b)
    vocab[hyrt::detail::utf8_encode(
        hyrt::detail::gpt2_byte_to_codepoint(static_cast<unsigned char>(b)))] = b;
  vocab["ab"] = 256;
  const json tok = {{"added_tokens", {{{"id", 300}, {"content", "<|x|>"}, {"special", true}}}},
                    {"normalizer", nullptr},
                    {"pre_tokenizer", {{"type", "ByteLevel"}, {"use_regex", true}}},
                    {"post_processor", nullptr},
                    {"decoder", {{"type", "ByteLevel"}}},
                    {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b"}}}}};
  // A directory of this call's own: CTest runs these tests as parallel
  // processes, and one fixed directory let one rewrite tokenizer.json while
  // another read it (a failed read, then a crash on the empty tokenizer).
  const hyc::test::TempDir tmp("serve_api_tok-");
  const fs::path dir = tmp.path();
  std::ofstream(dir / "tokenizer.json") << tok.dump();
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"add_bos_token": true, "bos_token": "<|x|>"})";
  hyrt::TokenizerData data;
  EXPECT_TRUE(hyrt::read_hf_tokenizer(dir.string(), &data).ok());
  hyrt::Tokenizer t;
  EXPECT_TRUE(t.init(std::move(data)).ok());
  return t;
}

hyrt::serve::ServeLimits limitsFor(const hyrt::Tokenizer &tok, const std::string &tmpl) {
  hyrt::serve::ServeLimits l;
  l.model_name = "m";
  l.max_seq_len = 64;
  l.vocab_size = tok.vocab_size();
  l.tokenizer = &tok;
  l.bos_id = tok.bos_id();
  l.eos_id = tok.eos_id();
  if (!tmpl.empty()) {
    auto t = std::make_shared<hyrt::ChatTemplate>();
    EXPECT_TRUE(t->compile(tmpl).ok());
    l.chat_template = t;
  }
  return l;
}

const char *kChat = R"({"model": "m", "messages": [{"role": "user", "content": "hi"},
                                                   {"role": "assistant", "content": "ab"}]})";

TEST(ServeChat, TemplateRendersAndBosIsNotAddedTwice) {
  const hyrt::Tokenizer tok = tinyTokenizer();
  ASSERT_EQ(tok.bos_id(), 300);
  const auto limits = limitsFor(
      tok, "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
           "{% if add_generation_prompt %}[assistant]{% endif %}{{ extra | default('') }}");
  hyrt::serve::ParsedRequest pr;
  ASSERT_FALSE(hyrt::serve::parse_request(kChat, true, limits, 1, &pr));
  // "<|x|>[user]hi[assistant]ab[assistant]": the template's own BOS once.
  EXPECT_EQ(pr.request.prompt, tok.encode("<|x|>[user]hi[assistant]ab[assistant]", false));
  EXPECT_EQ(std::count(pr.request.prompt.begin(), pr.request.prompt.end(), 300), 1);
  // chat_template_kwargs reach the template; a wrong type is a 400 naming it.
  json body = json::parse(kChat);
  body["chat_template_kwargs"] = {{"extra", "ab"}};
  ASSERT_FALSE(hyrt::serve::parse_request(body.dump(), true, limits, 1, &pr));
  EXPECT_EQ(pr.request.prompt,
            tok.encode("<|x|>[user]hi[assistant]ab[assistant]ab", false));
  body["chat_template_kwargs"] = "yes";
  auto err = hyrt::serve::parse_request(body.dump(), true, limits, 1, &pr);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->status, 400);
  EXPECT_EQ(err->param, "chat_template_kwargs");
}

TEST(ServeChat, WithoutTemplateThePlainFormatWithBos) {
  const hyrt::Tokenizer tok = tinyTokenizer();
  const auto limits = limitsFor(tok, "");
  hyrt::serve::ParsedRequest pr;
  ASSERT_FALSE(hyrt::serve::parse_request(kChat, true, limits, 1, &pr));
  EXPECT_EQ(pr.request.prompt, tok.encode("user: hi\nassistant: ab\nassistant:", true));
  EXPECT_EQ(pr.request.prompt.front(), 300);
}

} // namespace

// A request nested a few hundred thousand levels deep used to overflow the
// stack when its value was copied or dumped into an error message (a
// SIGSEGV of the whole server); now it is a 400 naming the limit, before
// the parser builds anything.
TEST(ServeRequest, DeepNestingIsA400NotACrash) {
  const hyrt::Tokenizer tok = tinyTokenizer();
  const auto limits = limitsFor(tok, "");
  const std::string deep = std::string(300000, '[') + std::string(300000, ']');
  const std::string body = R"({"model": "m", "prompt": "hi", "user": )" + deep + "}";
  hyrt::serve::ParsedRequest pr;
  auto err = hyrt::serve::parse_request(body, false, limits, 1, &pr);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->status, 400);
  EXPECT_NE(err->message.find("deeper than 64 levels"), std::string::npos) << err->message;
}

TEST(BoundedJson, DepthCountsArraysAndObjectsNotStrings) {
  // 64 levels pass, 65 do not; brackets inside strings (escaped quotes too)
  // are text, and the offset named is the bracket that passed the limit.
  const std::string at64 = std::string(63, '[') + "{\"a\": 1}" + std::string(63, ']');
  EXPECT_EQ(hyrt::json_depth_error(at64), "");
  const std::string at65 = "[" + at64 + "]";
  EXPECT_EQ(hyrt::json_depth_error(at65), "JSON nests deeper than 64 levels (at byte 64)");
  const std::string in_string = "[\"" + std::string(100, '[') + "\\\"" + std::string(100, '{') + "\"]";
  EXPECT_EQ(hyrt::json_depth_error(in_string), "");
  json parsed;
  EXPECT_EQ(hyrt::parse_json(in_string, &parsed), "");
  EXPECT_EQ(parsed[0].get<std::string>().size(), 201u);
  EXPECT_NE(hyrt::parse_json(std::string("{\"a\": [1, 2"), &parsed).find("invalid JSON"),
            std::string::npos);
}

// Token ids were narrowed to int32 before the vocabulary check: 2^32 + 5
// was served as token 5 (found by bench/serve/soak.py). Now an id outside
// [0, 2^31) is a 400 naming the prompt.
TEST(ServeRequest, TokenIdsOutsideTheVocabularyAreRefusedNotNarrowed) {
  const hyrt::Tokenizer tok = tinyTokenizer();
  const auto limits = limitsFor(tok, "");
  hyrt::serve::ParsedRequest pr;
  // 2^32 + 301 must not become token 301.
  for (const char *ids : {"[1, 4294967597]", "[-1]", "[2147483648]", "[2147483647]",
                          "[18446744073709551615]", "[-9223372036854775808]"}) {
    const std::string body = std::string(R"({"model": "m", "prompt": )") + ids + "}";
    auto err = hyrt::serve::parse_request(body, false, limits, 1, &pr);
    ASSERT_TRUE(err) << ids;
    EXPECT_EQ(err->status, 400) << ids;
    EXPECT_EQ(err->param, "prompt") << ids;
  }
  auto err = hyrt::serve::parse_request(R"({"model": "m", "prompt": [1, 301]})",
                                       false, limits, 1, &pr);
  ASSERT_TRUE(err);
  EXPECT_NE(err->message.find("token id 301 outside the vocabulary [0, 301)"),
            std::string::npos) << err->message;
  ASSERT_FALSE(hyrt::serve::parse_request(R"({"model": "m", "prompt": [1, 300]})",
                                          false, limits, 1, &pr));
  EXPECT_EQ(pr.request.prompt, (std::vector<int32_t>{1, 300}));
}

namespace {

/// The 400 of `body` (fails the test when it parses).
hyrt::serve::ApiError refusal(const std::string &body, bool chat,
                              const hyrt::serve::ServeLimits &limits) {
  hyrt::serve::ParsedRequest pr;
  auto err = hyrt::serve::parse_request(body, chat, limits, 1, &pr);
  EXPECT_TRUE(err) << body;
  return err ? *err : hyrt::serve::ApiError{};
}

} // namespace

TEST(ServeRequest, UnknownFieldsAreNamedUnlessLenient) {
  const hyrt::Tokenizer tok = tinyTokenizer();
  auto limits = limitsFor(tok, "");
  auto e = refusal(R"({"model": "m", "prompt": "ab", "max_tokns": 3})", false, limits);
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "max_tokns");
  EXPECT_NE(e.message.find("'max_tokns'"), std::string::npos);
  e = refusal(R"({"messages": [{"role": "user", "content": "a", "nmae": "x"}]})",
              true, limits);
  EXPECT_EQ(e.param, "messages[0].nmae");
  e = refusal(R"({"prompt": "a", "stream": true, "stream_options": {"usage": true}})",
              false, limits);
  EXPECT_EQ(e.param, "stream_options.usage");
  // Chat-only fields are unknown to completions.
  EXPECT_EQ(refusal(R"({"prompt": "a", "top_logprobs": 2})", false, limits).param,
            "top_logprobs");
  // Documented fields are accepted (some honoured, some ignored).
  hyrt::serve::ParsedRequest pr;
  EXPECT_FALSE(hyrt::serve::parse_request(
      R"({"messages": [{"role": "user", "content": "a", "name": "u"}], "user": "x",
          "metadata": {"k": "v"}, "store": false, "response_format": {"type": "text"},
          "tools": [], "parallel_tool_calls": true, "max_completion_tokens": 3,
          "stream_options": {"include_usage": true}, "stream": true})",
      true, limits, 1, &pr));
  EXPECT_EQ(pr.request.max_tokens, 3);
  EXPECT_FALSE(hyrt::serve::parse_request(
      R"({"prompt": "a", "echo": true, "best_of": 1, "user": "x", "stop_token_ids": [5]})",
      false, limits, 1, &pr));
  EXPECT_TRUE(pr.echo);
  EXPECT_EQ(pr.prompt_text, "a");
  // Documented but impossible here: refused even when lenient.
  limits.lenient = true;
  EXPECT_EQ(refusal(R"({"prompt": "a", "best_of": 3})", false, limits).param, "best_of");
  EXPECT_EQ(refusal(R"({"messages": [{"role": "user", "content": "a"}],
                        "modalities": ["text", "audio"]})", true, limits).param,
            "modalities");
  EXPECT_FALSE(hyrt::serve::parse_request(
      R"({"prompt": "a", "max_tokns": 3, "foo": {"bar": 1}})", false, limits, 1, &pr));
}

TEST(ServeRequest, SamplingFieldsAndTheirBounds) {
  const hyrt::Tokenizer tok = tinyTokenizer();
  const auto limits = limitsFor(tok, "");
  hyrt::serve::ParsedRequest pr;
  ASSERT_FALSE(hyrt::serve::parse_request(
      R"({"prompt": "ab", "n": 3, "logprobs": 4, "presence_penalty": 0.5,
          "frequency_penalty": -1, "repetition_penalty": 1.3, "min_p": 0.1,
          "logit_bias": {"7": 50, "300": -100}, "seed": 9, "temperature": 0.7,
          "stop": ["x"], "stop_token_ids": [12], "max_tokens": 4})",
      false, limits, 1, &pr));
  const hyrt::Request &r = pr.request;
  EXPECT_EQ(r.n, 3);
  EXPECT_EQ(r.logprobs, 4);
  EXPECT_FLOAT_EQ(r.sampler.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.sampler.frequency_penalty, -1.f);
  EXPECT_FLOAT_EQ(r.sampler.repetition_penalty, 1.3f);
  EXPECT_FLOAT_EQ(r.sampler.min_p, 0.1f);
  EXPECT_EQ(r.sampler.logit_bias,
            (std::vector<std::pair<int32_t, float>>{{300, -100.f}, {7, 50.f}})); // key order
  EXPECT_EQ(r.sampler.seed, 9u);
  EXPECT_EQ(r.stop_tokens.front(), 12); // then EOS / BOS
  // Chat: logprobs is a boolean, top_logprobs its count.
  ASSERT_FALSE(hyrt::serve::parse_request(
      R"({"messages": [{"role": "user", "content": "a"}], "logprobs": true,
          "top_logprobs": 20})", true, limits, 1, &pr));
  EXPECT_EQ(pr.request.logprobs, 20);
  ASSERT_FALSE(hyrt::serve::parse_request(
      R"({"messages": [{"role": "user", "content": "a"}], "logprobs": true})",
      true, limits, 1, &pr));
  EXPECT_EQ(pr.request.logprobs, 0);

  struct Bad {
    const char *body;
    bool chat;
    const char *param, *says;
  };
  const Bad bad[] = {
      {R"({"prompt": "a", "n": 0})", false, "n", "expected an integer in [1, 16], found 0"},
      {R"({"prompt": "a", "n": 10000})", false, "n", "found 10000"},
      {R"({"prompt": "a", "n": 1.5})", false, "n", "expected an integer, found 1.5"},
      {R"({"messages": [{"role": "user", "content": "a"}], "logprobs": true,
           "top_logprobs": 21})", true, "top_logprobs", "[0, 20], found 21"},
      {R"({"messages": [{"role": "user", "content": "a"}], "top_logprobs": 2})",
       true, "top_logprobs", "needs logprobs: true"},
      {R"({"prompt": "a", "logprobs": 21})", false, "logprobs", "found 21"},
      {R"({"prompt": "a", "logit_bias": {"301": 1}})", false, "logit_bias",
       "token ids in [0, 301) as keys, found '301'"},
      {R"({"prompt": "a", "logit_bias": {"x7": 1}})", false, "logit_bias", "found 'x7'"},
      {R"({"prompt": "a", "logit_bias": {"7": 101}})", false, "logit_bias",
       "bias in [-100, 100] for token 7, found 101"},
      {R"({"prompt": "a", "frequency_penalty": "high"})", false, "frequency_penalty",
       "expected a number, found string"},
      {R"({"prompt": "a", "presence_penalty": 2.5})", false, "presence_penalty",
       "expected a number in [-2.0, 2.0], found 2.5"},
      {R"({"prompt": "a", "repetition_penalty": 0})", false, "repetition_penalty",
       "(0.0, 10.0], found 0"},
      {R"({"prompt": "a", "min_p": 1.5})", false, "min_p", "found 1.5"},
      {R"({"prompt": "a", "stop_token_ids": [301]})", false, "stop_token_ids",
       "token id 301 outside the vocabulary"},
      {R"({"messages": [{"role": "user", "content": "a"}], "max_tokens": 3,
           "max_completion_tokens": 4})", true, "max_completion_tokens", "differ"},
  };
  for (const Bad &b : bad) {
    auto e = refusal(b.body, b.chat, limits);
    EXPECT_EQ(e.param, b.param) << b.body;
    EXPECT_NE(e.message.find(b.says), std::string::npos)
        << b.body << " -> " << e.message;
  }
}

TEST(ServeTokenize, RoundTripAndBounds) {
  const hyrt::Tokenizer tok = tinyTokenizer();
  const auto limits = limitsFor(tok, "");
  json out;
  ASSERT_FALSE(hyrt::serve::tokenize(R"({"model": "m", "prompt": "abc"})", limits, &out));
  EXPECT_EQ(out["tokens"], json({300, 256, 99})); // BOS, "ab", "c"
  EXPECT_EQ(out["count"], 3);
  EXPECT_EQ(out["max_model_len"], 64);
  ASSERT_FALSE(hyrt::serve::tokenize(
      R"({"prompt": "abc", "add_special_tokens": false})", limits, &out));
  EXPECT_EQ(out["tokens"], json({256, 99}));
  ASSERT_FALSE(hyrt::serve::detokenize(R"({"tokens": [256, 99]})", limits, &out));
  EXPECT_EQ(out["prompt"], "abc");
  // Messages render as a chat request renders them.
  ASSERT_FALSE(hyrt::serve::tokenize(
      R"({"messages": [{"role": "user", "content": "hi"}]})", limits, &out));
  hyrt::serve::ParsedRequest pr;
  ASSERT_FALSE(hyrt::serve::parse_request(
      R"({"messages": [{"role": "user", "content": "hi"}]})", true, limits, 1, &pr));
  EXPECT_EQ(out["count"], pr.request.prompt.size() - 1); // chat adds the BOS
  auto e = hyrt::serve::detokenize(R"({"tokens": [5, 301]})", limits, &out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "tokens");
  EXPECT_NE(e->message.find("token id 301 outside the vocabulary [0, 301)"),
            std::string::npos);
  e = hyrt::serve::tokenize(R"({"prompt": "a", "messages": []})", limits, &out);
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("either prompt or messages, found both"), std::string::npos);
  e = hyrt::serve::tokenize(R"({"prompt": "a", "tokens": [1]})", limits, &out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "tokens");
}
