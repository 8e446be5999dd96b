// libFuzzer target: raw bytes from a socket through the code `hyc serve`
// runs on them, in process: the HTTP/1.1 head parser, then (for a complete
// request) the OpenAI request parser with a byte-level tokenizer and a chat
// template, as the routes call it. Pipelined requests are followed.
#include "runtime/serving/http_wire.h"
#include "runtime/serving/openai_api.h"

#include "hyrt/text/chat_template.h"
#include "hyrt/text/tokenizer.h"
#include "runtime/text/tokenizer/util.h"
#include "test/fuzz/fuzz_files.h"

#include <nlohmann/json.hpp>

#include <fstream>

namespace {

/// The 256 byte symbols, one merge, a special token that tokenizer_config
/// makes the BOS: enough for every path of the request parser.
const hyrt::Tokenizer &tokenizer() {
  static const hyrt::Tokenizer tok = [] {
    using json = nlohmann::json;
    json vocab = json::object();
    for (int b = 0; b < 256; ++b)
      vocab[hyrt::detail::utf8_encode(
          hyrt::detail::gpt2_byte_to_codepoint(static_cast<unsigned char>(b)))] = b;
    vocab["ab"] = 256;
    const json tj = {
        {"added_tokens", {{{"id", 300}, {"content", "<|x|>"}, {"special", true}}}},
        {"normalizer", nullptr},
        {"pre_tokenizer", {{"type", "ByteLevel"}, {"use_regex", true}}},
        {"post_processor", nullptr},
        {"decoder", {{"type", "ByteLevel"}}},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b"}}}}};
    const std::string dir = hyc::fuzz::scratchDir() + "/http-tokenizer";
    mkdir(dir.c_str(), 0700);
    std::ofstream(dir + "/tokenizer.json") << tj.dump();
    std::ofstream(dir + "/tokenizer_config.json")
        << R"({"add_bos_token": true, "bos_token": "<|x|>"})";
    hyrt::TokenizerData data;
    hyrt::Tokenizer t;
    if (!hyrt::read_hf_tokenizer(dir, &data).ok() || !t.init(std::move(data)).ok())
      std::abort(); // the harness is broken, not the server
    return t;
  }();
  return tok;
}

const hyrt::serve::ServeLimits &limits() {
  static const hyrt::serve::ServeLimits l = [] {
    hyrt::serve::ServeLimits s;
    s.model_name = "m";
    s.max_seq_len = 256;
    s.tokenizer = &tokenizer();
    s.bos_id = tokenizer().bos_id();
    s.eos_id = tokenizer().eos_id();
    auto t = std::make_shared<hyrt::ChatTemplate>();
    if (!t->compile("{{ bos_token }}{% for m in messages %}[{{ m.role }}]"
                    "{{ m.content }}{% endfor %}{% if add_generation_prompt %}"
                    "[assistant]{% endif %}")
             .ok())
      std::abort();
    s.chat_template = t;
    return s;
  }();
  return l;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  hyrt::http::HeadLimits head_limits;
  for (int requests = 0; requests < 8 && !bytes.empty(); ++requests) {
    hyrt::http::Request req;
    size_t head = 0;
    int status = 0;
    std::string error;
    if (hyrt::http::parse_head(bytes, head_limits, &req, &head, &status, &error) !=
        hyrt::http::HeadStatus::kComplete) {
      hyc::fuzz::explain("head", error);
      return 0;
    }
    if (req.content_length > bytes.size() - head)
      return 0; // the listener would wait for the rest
    req.body = std::string(bytes.substr(head, size_t(req.content_length)));
    bytes.remove_prefix(head + size_t(req.content_length));
    if (req.method != "POST")
      continue;
    hyrt::serve::ParsedRequest pr;
    if (auto e = hyrt::serve::parse_request(req.body, req.path == "/v1/chat/completions",
                                            limits(), 1, &pr))
      hyc::fuzz::explain("request", e->message);
  }
  return 0;
}
