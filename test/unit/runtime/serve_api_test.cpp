// hyc serve's request parsing with a checkpoint's chat template: messages
// rendered by the template (with the request's chat_template_kwargs) and
// tokenized without a second BOS; without a template, the plain format.
#include "hyrt/text/chat_template.h"
#include "hyrt/text/tokenizer.h"

#include "hyrt/support/json.h"
#include "runtime/serving/openai_api.h"
#include "runtime/text/tokenizer/util.h"

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
  const fs::path dir = fs::path(::testing::TempDir()) / "serve_api_tok";
  fs::create_directories(dir);
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
TEST(ServeRequest, TokenIdsPastInt32AreRefusedNotNarrowed) {
  const hyrt::Tokenizer tok = tinyTokenizer();
  const auto limits = limitsFor(tok, "");
  hyrt::serve::ParsedRequest pr;
  for (const char *ids : {"[1, 4294967301]", "[-1]", "[2147483648]",
                          "[18446744073709551615]", "[-9223372036854775808]"}) {
    const std::string body = std::string(R"({"model": "m", "prompt": )") + ids + "}";
    auto err = hyrt::serve::parse_request(body, false, limits, 1, &pr);
    ASSERT_TRUE(err) << ids;
    EXPECT_EQ(err->status, 400) << ids;
    EXPECT_EQ(err->param, "prompt") << ids;
  }
  ASSERT_FALSE(hyrt::serve::parse_request(R"({"model": "m", "prompt": [1, 2147483647]})",
                                          false, limits, 1, &pr));
  EXPECT_EQ(pr.request.prompt, (std::vector<int32_t>{1, 2147483647}));
}
