// structured_bench - cost of constrained decoding per generated token on a
// real vocabulary (default: the Qwen3 tokenizer in ../shared): for a few
// schemas, a seeded random generation is run twice with one compiled
// constraint. The first run pays first-visit masks (trie walks); the
// second finds every mask cached. Reported: time of mask() (logits of the
// model's padded vocabulary, 151936) plus accept(), per token.
// Usage: hyc_structured_bench [TOKENIZER_DIR]
#include "hyrt/structured/grammar_constraint.h"
#include "hyrt/structured/json_schema.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

using namespace hyrt::structured;
using Clock = std::chrono::steady_clock;

namespace {

struct Pass {
  double miss_ms = 0, hit_ms = 0;
  int misses = 0, hits = 0, tokens = 0;
};

Pass run(const std::shared_ptr<CompiledConstraint> &compiled, uint32_t seed) {
  GrammarConstraint c(compiled);
  const TokenVocabulary &v = compiled->vocab();
  std::vector<float> logits(151936);
  std::mt19937 rng(seed);
  Pass p;
  for (int step = 0; step < 4000; ++step) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    const int64_t before = compiled->stats().misses;
    const auto t0 = Clock::now();
    c.mask(logits.data(), int64_t(logits.size()));
    const double ms =
        std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    std::vector<int32_t> ids;
    for (int32_t id = 0; id < v.size(); ++id)
      if (std::isfinite(logits[id]))
        ids.push_back(id);
    if (ids.empty())
      break;
    // As the tests do: half uniform, half by first byte (closes strings).
    int32_t pick = ids[rng() % ids.size()];
    if (rng() % 2) {
      std::vector<int32_t> by_byte[256];
      for (int32_t id : ids)
        by_byte[v.is_stop(id) ? 0 : uint8_t(v.bytes(id)[0])].push_back(id);
      std::vector<int> bytes;
      for (int b = 0; b < 256; ++b)
        if (!by_byte[b].empty())
          bytes.push_back(b);
      const auto &g = by_byte[bytes[rng() % bytes.size()]];
      pick = g[rng() % g.size()];
    }
    const auto t1 = Clock::now();
    c.accept(pick);
    const double accept_ms =
        std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
    if (compiled->stats().misses > before) {
      p.miss_ms += ms + accept_ms;
      ++p.misses;
    } else {
      p.hit_ms += ms + accept_ms;
      ++p.hits;
    }
    ++p.tokens;
    if (v.is_stop(pick) || !c.can_continue())
      break;
  }
  return p;
}

} // namespace

int main(int argc, char **argv) {
  const std::string dir =
      argc > 1 ? argv[1] : std::string(HYC_SHARED_DIR) + "/tokenizers/qwen3";
  hyrt::TokenizerData data;
  hyrt::Tokenizer tok;
  hyrt::Status s = hyrt::read_hf_tokenizer(dir, &data);
  if (s.ok())
    s = tok.init(std::move(data));
  std::shared_ptr<const TokenVocabulary> vocab;
  const auto tv = Clock::now();
  if (s.ok())
    s = TokenVocabulary::build(tok, {}, &vocab);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  std::printf("vocabulary: %lld tokens, trie of %lld nodes, built in %.0f ms\n",
              (long long)vocab->size(), (long long)vocab->trie_size(),
              std::chrono::duration<double, std::milli>(Clock::now() - tv)
                  .count());
  const std::pair<const char *, const char *> schemas[] = {
      {"json_object", nullptr},
      {"person", R"({"type":"object","properties":{"name":{"type":"string",
        "maxLength":20},"age":{"type":"integer","minimum":0,"maximum":130},
        "email":{"type":"string","format":"email"}},"required":["name","age"]})"},
      {"tree", R"({"$defs":{"n":{"type":"object","properties":{"v":{
        "type":"string","maxLength":8},"k":{"type":"array","items":{
        "$ref":"#/$defs/n"},"maxItems":3}},"required":["v"]}},
        "$ref":"#/$defs/n"})"},
      {"strings_64", R"({"type":"array","items":{"type":"string",
        "minLength":1,"maxLength":64},"maxItems":8})"},
  };
  std::printf("%-12s %7s %10s %14s %10s %14s\n", "schema", "tokens",
              "1st-visits", "1st-visit ms", "cached", "cached ms/tok");
  for (const auto &[name, text] : schemas) {
    std::shared_ptr<const Grammar> grammar;
    const auto tc = Clock::now();
    if (text) {
      if (hyrt::Status e = compile_json_schema_text(text, SchemaLimits{}, &grammar);
          !e.ok()) {
        std::fprintf(stderr, "%s: %s\n", name, e.message().c_str());
        return 1;
      }
    } else {
      grammar = json_object_grammar(SchemaLimits{});
    }
    const double compile_ms =
        std::chrono::duration<double, std::milli>(Clock::now() - tc).count();
    auto compiled = std::make_shared<CompiledConstraint>(grammar, vocab);
    double first_ms = 0, cached_ms = 0;
    int first_n = 0, cached_n = 0, tokens = 0;
    for (uint32_t seed = 1; seed <= 3; ++seed) {
      Pass cold = run(compiled, seed);
      Pass warm = run(compiled, seed); // same path: all cached
      first_ms += cold.miss_ms;
      first_n += cold.misses;
      cached_ms += warm.hit_ms + warm.miss_ms;
      cached_n += warm.tokens;
      tokens += cold.tokens;
    }
    std::printf("%-12s %7d %10d %14.2f %10d %14.4f   (compile %.1f ms, %zu "
                "states, cache %.1f MiB)\n",
                name, tokens, first_n, first_n ? first_ms / first_n : 0.0,
                cached_n, cached_n ? cached_ms / cached_n : 0.0, compile_ms,
                grammar->nodes.size(),
                compiled->stats().bytes / 1048576.0);
  }
  return 0;
}
