// hyrt/engine/engine.h - runs a loaded Artifact: owns the paged KV cache and the
// activation arena, turns extend / decode requests into hyrt_step_v0 calls
// (chunked prefill, limit checks) and drives greedy or sampled generation.
#pragma once

#include "hyrt/artifact/artifact.h"
#include "hyrt/engine/kv_cache.h"
#include "hyrt/engine/sampler.h"
#include "hyrt/status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace hyrt {

/// The message for an entry point's HYRT_STEP_* return code (abi.h).
std::string step_error_text(int32_t code);

/// Engine settings.
struct EngineOptions {
  int64_t page_size = 16; ///< KV cache positions per page
  /// Pages in the pool; 0 sizes it for limits.max_seqs sequences of
  /// limits.max_seq_len positions.
  int64_t num_pages = 0;
  /// Transparent huge pages for the KV cache pools (see KvCacheConfig).
  bool huge_pages = true;
};

/// Options of Engine::generate.
struct GenerateOptions {
  int64_t max_new_tokens = 256;
  SamplerConfig sampler;
  /// Sampling one of these ends generation; the stop token is neither
  /// reported nor counted.
  std::vector<int32_t> stop_tokens;
  /// Keep the logits row of every position fed to the model (prompt and
  /// generated tokens) in GenerateResult::logits.
  bool record_logits = false;
};

/// What Engine::generate produced.
struct GenerateResult {
  std::vector<int32_t> tokens; ///< generated ids, stop token excluded
  /// "length" (max_new_tokens), "stop_token", "max_seq_len" or "callback".
  std::string stop_reason;
  std::vector<float> logits; ///< [logits_rows][vocab] when recorded
  int64_t logits_rows = 0;
  int64_t prompt_tokens = 0;
  int64_t decode_steps = 0;       ///< decode calls (tokens fed one by one)
  double prefill_seconds = 0;     ///< prompt extend plus first sample
  double decode_seconds = 0;      ///< every later decode step and sample
};

/// Called with each generated token as it is sampled; returning false stops
/// generation (stop_reason "callback").
using TokenCallback = std::function<bool(int32_t token)>;

/// Runs an Artifact. Not thread-safe: one caller drives one Engine.
class Engine {
public:
  /// Sizes the KV cache from manifest kv_cache and limits plus `options`
  /// and allocates the 64-byte aligned arena. `artifact` must outlive the
  /// engine.
  static Status create(const Artifact *artifact, const EngineOptions &options,
                       std::unique_ptr<Engine> *out);
  ~Engine();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  const Artifact &artifact() const { return *artifact_; }
  const ArtifactLimits &limits() const { return artifact_->manifest().limits; }
  int64_t vocab_size() const { return artifact_->manifest().model.vocab_size; }
  const KvCacheManager &kv_cache() const { return cache_; }
  /// The KV cache, for owners of page references other than sequences (the
  /// prefix cache retains and releases pages through it).
  KvCacheManager &mutable_kv_cache() { return cache_; }

  /// A new, empty sequence; its id is never reused by this engine.
  int64_t add_sequence();
  /// Starts the new, empty `seq` on `pages`: full pages that hold the KV of
  /// its first pages.size() * page_size tokens (a cached prefix). It shares
  /// them and only appends into pages of its own.
  Status share_prefix(int64_t seq, const std::vector<int32_t> &pages);
  /// Drops `seq`'s references on its KV pages and forgets it.
  Status release(int64_t seq);
  /// Positions of `seq` in the KV cache.
  int64_t seq_length(int64_t seq) const { return cache_.seq_length(seq); }

  /// Appends `tokens` to `seq`, running one extend call per chunk of at most
  /// limits.max_batch_tokens tokens (chunked prefill). `logits` receives one
  /// row of vocab_size floats per token, or only the last token's row when
  /// !all_rows. Refused before any call when the sequence would outgrow
  /// limits.max_seq_len.
  Status extend(int64_t seq, const std::vector<int32_t> &tokens,
                std::vector<float> *logits, bool all_rows = true);

  /// One extend call over several sequences (distinct, each with >= 1
  /// token): at most limits.max_batch_tokens tokens and limits.max_seqs
  /// sequences. `logits` gets [total tokens][vocab] in chunk order, or with
  /// !all_rows only the last token's row of each chunk: [chunks][vocab].
  Status extend_batch(const std::vector<SeqChunk> &chunks,
                      std::vector<float> *logits, bool all_rows = true);

  /// One decode call: token `tokens[i]` appended to `seqs[i]`, at most
  /// limits.max_seqs sequences. `logits` gets [seqs][vocab].
  Status decode(const std::vector<int64_t> &seqs,
                const std::vector<int32_t> &tokens, std::vector<float> *logits);

  /// Feeds `prompt` to a fresh sequence, then samples and decodes one token
  /// at a time until max_new_tokens, a stop token, the sequence reaching
  /// limits.max_seq_len or the callback says stop. The prompt must fit in
  /// max_seq_len. The sequence is released at the end.
  Status generate(const std::vector<int32_t> &prompt,
                  const GenerateOptions &options, const TokenCallback &on_token,
                  GenerateResult *result);

  /// Called with every step this engine is about to run (after it is
  /// built, before the artifact runs it): a tensor-parallel leader sends it
  /// to the other ranks here (hyrt/parallel/tensor_parallel.h). A failure refuses the
  /// step with that error.
  using StepHook = std::function<Status(const hyrt_step_v0 &step, bool decode)>;
  void set_step_hook(StepHook hook) { step_hook_ = std::move(hook); }

  /// Runs a step another rank's engine built (a tensor-parallel follower):
  /// its tokens, positions and block tables, over this engine's KV cache
  /// (same page pool, this rank's heads), weights and arena; its logits go
  /// to scratch. The leader's KV bookkeeping decides the pages, so this
  /// engine keeps none.
  Status run_foreign_step(hyrt_step_v0 step, bool decode);

private:
  Engine() = default;
  /// The artifact's failure, if any, of the step just run.
  Status step_status(int32_t rc, bool decode, int64_t tokens, int64_t seqs);
  /// Builds, runs and commits one step; the logits stay in batch_.
  Status run_step(const std::vector<SeqChunk> &chunks, bool decode,
                  bool all_logits = true);
  Status check_sequence(int64_t seq, int64_t new_tokens) const;

  struct ArenaDeleter {
    void operator()(void *p) const;
  };

  const Artifact *artifact_ = nullptr;
  KvCacheManager cache_;
  StepBatch batch_;
  std::unique_ptr<void, ArenaDeleter> arena_;
  std::set<int64_t> live_;
  int64_t next_seq_ = 0;
  StepHook step_hook_;
  std::vector<float> foreign_logits_;
};

} // namespace hyrt
