// The sampling fields of an OpenAI request (see parse_sampling in
// openai_api.h): ranges as OpenAI documents them (vLLM's for the
// extensions), each refusal naming the field and what it found.
#include "openai_api.h"

#include "request_fields.h"

namespace hyrt::serve {

using nlohmann::json;

namespace {

/// logit_bias: {"<token id>": bias in [-100, 100]}, ids in the vocabulary.
std::optional<ApiError> parse_logit_bias(const json &body,
                                         const ServeLimits &limits,
                                         SamplerConfig *sc) {
  const json *lb = field(body, "logit_bias");
  if (!lb)
    return std::nullopt;
  if (!lb->is_object())
    return bad("logit_bias", "logit_bias: expected an object mapping token ids "
                             "(as strings) to biases, found " +
                                 std::string(lb->type_name()));
  if (lb->size() > 1024) // OpenAI's own cap
    return bad("logit_bias", "logit_bias: at most 1024 tokens, found " +
                                 std::to_string(lb->size()));
  for (auto it = lb->begin(); it != lb->end(); ++it) {
    const std::string &key = it.key();
    const bool digits = !key.empty() && key.size() <= 10 &&
                        key.find_first_not_of("0123456789") == std::string::npos;
    const int64_t id = digits ? std::stoll(key) : -1;
    if (id < 0 || id >= limits.vocab_size)
      return bad("logit_bias", "logit_bias: expected token ids in [0, " +
                                   std::to_string(limits.vocab_size) +
                                   ") as keys, found '" + key + "'");
    const json &v = it.value();
    if (!v.is_number() || !(v.get<double>() >= -100 && v.get<double>() <= 100))
      return bad("logit_bias", "logit_bias: expected a bias in [-100, 100] for "
                               "token " + key + ", found " + v.dump());
    sc->logit_bias.push_back({int32_t(id), float(v.get<double>())});
  }
  return std::nullopt;
}

/// stop: a string or up to 4; stop_token_ids: ids in the vocabulary.
std::optional<ApiError> parse_stops(const json &body, const ServeLimits &limits,
                                    Request *r) {
  if (const json *stop = field(body, "stop")) {
    std::vector<json> items = stop->is_array() ? stop->get<std::vector<json>>()
                                               : std::vector<json>{*stop};
    if (items.size() > 4)
      return bad("stop", "stop: at most 4 sequences, found " +
                             std::to_string(items.size()));
    for (const json &s : items) {
      if (!s.is_string() || s.get<std::string>().empty())
        return bad("stop", "stop: expected a non-empty string or an array of "
                           "them, found " + s.dump());
      r->stop_strings.push_back(s.get<std::string>());
    }
    if (!r->stop_strings.empty() && !limits.tokenizer)
      return bad("stop", "stop strings need a tokenizer and this artifact "
                         "has none");
  }
  if (const json *ids = field(body, "stop_token_ids")) {
    if (!ids->is_array() || ids->size() > 64)
      return bad("stop_token_ids", "stop_token_ids: expected an array of at "
                                   "most 64 token ids, found " +
                                       (ids->is_array() ? std::to_string(ids->size()) + " ids"
                                                        : std::string(ids->type_name())));
    for (const json &t : *ids) {
      int32_t id = 0;
      if (auto e = get_token_id(t, "stop_token_ids", limits.vocab_size, &id))
        return e;
      r->stop_tokens.push_back(id);
    }
  }
  bool ignore_eos = false;
  if (auto e = get_bool(body, "ignore_eos", &ignore_eos))
    return e;
  if (!ignore_eos) // as `hyc run`: llama2.c models also end at BOS
    for (int32_t id : {limits.eos_id, limits.bos_id})
      if (id >= 0)
        r->stop_tokens.push_back(id);
  return std::nullopt;
}

/// logprobs: chat takes a boolean plus top_logprobs (0..20); completions
/// an integer (0..20; OpenAI caps it at 5, vLLM at 20).
std::optional<ApiError> parse_logprobs(const json &body, bool chat, Request *r) {
  const int64_t cap = Request::kMaxTopLogprobs;
  if (!chat) {
    const json *v = field(body, "logprobs");
    if (v && v->is_boolean()) { // some clients send false for "none"
      if (v->get<bool>())
        return bad("logprobs", "logprobs: expected an integer in [0, 20] for "
                               "completions, found true");
      return std::nullopt;
    }
    int64_t k = -1;
    if (auto e = get_int(body, "logprobs", 0, cap, &k))
      return e;
    r->logprobs = k;
    return std::nullopt;
  }
  bool want = false;
  if (auto e = get_bool(body, "logprobs", &want))
    return e;
  int64_t top = 0;
  if (auto e = get_int(body, "top_logprobs", 0, cap, &top))
    return e;
  if (field(body, "top_logprobs") && !want)
    return bad("top_logprobs", "top_logprobs: needs logprobs: true");
  r->logprobs = want ? top : -1;
  return std::nullopt;
}

} // namespace

std::optional<ApiError> parse_sampling(const json &body,
                                       const ServeLimits &limits,
                                       uint64_t default_seed,
                                       ParsedRequest *out) {
  Request &r = out->request;
  SamplerConfig &sc = r.sampler;
  double temperature = 1, top_p = 1, min_p = 0, presence = 0, frequency = 0,
         repetition = 1;
  int64_t top_k = 0, seed = 0, n = 1;
  if (auto e = get_real(body, "temperature", 0, 2, false, &temperature))
    return e;
  if (auto e = get_real(body, "top_p", 0, 1, true, &top_p))
    return e;
  if (auto e = get_int(body, "top_k", 0, INT32_MAX, &top_k))
    return e;
  if (auto e = get_real(body, "min_p", 0, 1, false, &min_p))
    return e;
  if (auto e = get_real(body, "presence_penalty", -2, 2, false, &presence))
    return e;
  if (auto e = get_real(body, "frequency_penalty", -2, 2, false, &frequency))
    return e;
  // vLLM's bound is (0, 2]; > 2 only blocks repeats harder, so up to 10.
  if (auto e = get_real(body, "repetition_penalty", 0, 10, true, &repetition))
    return e;
  if (auto e = get_int(body, "seed", INT64_MIN, INT64_MAX, &seed))
    return e;
  if (auto e = get_int(body, "n", 1, Request::kMaxChoices, &n))
    return e;
  sc.temperature = float(temperature);
  sc.top_p = float(top_p);
  sc.top_k = top_k;
  sc.min_p = float(min_p);
  sc.presence_penalty = float(presence);
  sc.frequency_penalty = float(frequency);
  sc.repetition_penalty = float(repetition);
  sc.seed = field(body, "seed") ? uint64_t(seed) : default_seed;
  r.n = n;
  if (auto e = parse_logit_bias(body, limits, &sc))
    return e;
  if (auto e = parse_logprobs(body, out->chat, &r))
    return e;
  return parse_stops(body, limits, &r);
}

} // namespace hyrt::serve
