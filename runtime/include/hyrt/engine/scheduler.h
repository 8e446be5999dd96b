// hyrt/engine/scheduler.h - continuous batching over one Engine: requests queue,
// are admitted when their KV pages can be reserved, and share steps (decodes
// of running sequences plus prefill chunks of new ones) up to the artifact's
// max_batch_tokens / max_seqs; stop tokens and strings, max tokens,
// per-request sampling (logit processors, a TokenConstraint, logprobs),
// n choices over one prompt, and cancellation.
#pragma once

#include "hyrt/engine/engine.h"
#include "hyrt/engine/prefix_cache.h"
#include "hyrt/engine/sampler.h"
#include "hyrt/engine/token_constraint.h"
#include "hyrt/status.h"
#include "hyrt/text/tokenizer.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hyrt {

/// One generation request.
struct Request {
  std::vector<int32_t> prompt; ///< token ids, BOS included when wanted
  int64_t max_tokens = 16;     ///< generated tokens at most (>= 1)
  SamplerConfig sampler;       ///< temperature 0 = greedy; own seed
  /// Sampling one of these ends the request ("stop"); it is not reported.
  std::vector<int32_t> stop_tokens;
  /// Text that ends the request ("stop") when it appears in the generated
  /// text; the text is cut before it. Needs the scheduler's tokenizer.
  std::vector<std::string> stop_strings;
  /// Choices: n sequences continue the prompt, which is prefilled once
  /// (choices 1..n-1 share its full KV pages with choice 0 and recompute
  /// only its last, partial block). Choice i samples from PCG32 stream i of
  /// the seed. Events name their choice; cancel(id) ends them all.
  int64_t n = 1;
  static constexpr int64_t kMaxChoices = 16;
  /// Log-probabilities with every token: -1 none, 0 the token's own, k in
  /// [1, kMaxTopLogprobs] also the k most likely tokens.
  int64_t logprobs = -1;
  static constexpr int64_t kMaxTopLogprobs = 20;
  /// With logprobs >= 0: also the log-probability of every prompt token
  /// after the first (and the `logprobs` most likely there), the
  /// log-softmax of the raw logits of the position before it. Such a
  /// prompt is computed whole: no prefix-cache or sibling pages.
  bool prompt_logprobs = false;
  /// What may come next (null: anything). Masks the logits after
  /// logit_bias and the penalties; a sampled token it rejects ends the
  /// request with an error; once complete() and !can_continue(), the
  /// request ends ("stop"). With n > 1 it must be null or n separate
  /// constraints are needed: give `constraint_factory` instead.
  std::shared_ptr<TokenConstraint> constraint;
  /// Makes the constraint of choices 1..n-1 (each needs its own state);
  /// choice 0 takes `constraint`.
  std::function<std::shared_ptr<TokenConstraint>()> constraint_factory;
};

/// What a request produced since the last event. Events of one request
/// arrive in order; the last one has `finished` set.
struct RequestEvent {
  int64_t request_id = 0;
  int64_t choice = 0;          ///< which of the request's n choices
  std::vector<int32_t> tokens; ///< newly generated ids
  /// With Request::logprobs >= 0: one per entry of `tokens`.
  std::vector<SampledToken> logprobs;
  /// With Request::prompt_logprobs, in a choice's first event: one per
  /// prompt token after the first.
  std::vector<SampledToken> prompt_logprobs;
  /// New text that is final: text that might still turn into a stop string,
  /// or an incomplete UTF-8 sequence, is held back until it cannot.
  std::string text;
  bool finished = false;
  /// "stop" (stop token or string), "length" (max_tokens or max_seq_len),
  /// "cancelled" or "error" (then `error` says why).
  std::string finish_reason;
  std::string error;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0; ///< generated so far, stop token excluded
};

/// Receives events on the scheduler's thread; must not block for long and
/// must not call Scheduler::step. It may call submit / cancel.
using EventCallback = std::function<void(const RequestEvent &)>;

/// Scheduler settings.
struct SchedulerOptions {
  /// Put prefill chunks and decodes of other sequences in one extend step.
  /// false: a decode-only step, then prefill-only steps (decode then runs
  /// on the artifact's decode entry point, as Engine::generate does).
  bool mixed_steps = true;
  /// Share the KV pages of full prompt (and, once a request ends, answer)
  /// blocks between requests with a
  /// common prefix (PrefixCache); cached pages nobody uses are evicted,
  /// least recently used first, when admission or a step needs pages.
  bool prefix_cache = true;
};

/// Counters for monitoring, readable from any thread.
struct SchedulerStats {
  int64_t queued = 0;  ///< submitted, not yet admitted
  int64_t running = 0; ///< admitted (prefilling or decoding)
  /// Pages held by requests (cached pages only the prefix cache holds are
  /// free to take, so they do not count).
  int64_t kv_pages_used = 0;
  int64_t kv_pages_total = 0;
  int64_t prefix_cached_pages = 0; ///< pages the prefix cache references
  int64_t prefix_hit_tokens = 0;   ///< prompt tokens taken from the cache
  int64_t prefix_evicted_pages = 0; ///< cached pages evicted for others
  int64_t steps = 0;
  int64_t prompt_tokens = 0;    ///< prefilled, total
  int64_t generated_tokens = 0; ///< total
};

/// Continuous batching over one Engine (which it drives alone).
///
/// Admission reserves, in first-come order, the pages a request can ever
/// need (prompt + max_tokens, capped at max_seq_len, less the cached prefix
/// pages it shares): a running request never waits for or fails on pages,
/// and the head of the queue is never overtaken, so it cannot starve. Pages
/// only the prefix cache holds count as available; they are evicted when a
/// step needs them. At most limits.max_seqs requests run.
///
/// With the prefix cache, a request whose prompt starts with cached blocks
/// shares their pages and prefills the rest; when the whole prompt is
/// cached, its last block is recomputed (it must produce the logits of the
/// last token, and a shared page is never written).
///
/// Thread safety: submit, cancel and stats may be called from any thread;
/// step (or the thread started by start) drives the engine.
class Scheduler {
public:
  /// `engine` (and `tokenizer`, which may be null) must outlive this.
  Scheduler(Engine *engine, const Tokenizer *tokenizer,
            SchedulerOptions options = {});
  ~Scheduler();
  Scheduler(const Scheduler &) = delete;
  Scheduler &operator=(const Scheduler &) = delete;

  /// Checks `request` against the artifact (prompt length, token ids, pool
  /// size, sampling values) and queues it; `*id` names it. Nothing is
  /// queued on error.
  Status submit(Request request, EventCallback on_event, int64_t *id);
  /// Ends request `id` at the next step ("cancelled"), freeing its pages.
  /// Unknown or finished ids are ignored.
  void cancel(int64_t id);

  /// Runs one engine step over queued and running requests. `*did_work` is
  /// false when there was nothing to do. An engine error finishes every
  /// request of the step with "error" and is returned.
  Status step(bool *did_work = nullptr);
  /// Steps until no request is queued or running.
  Status run_until_idle();

  /// Starts a thread that steps whenever there is work; stop() ends it
  /// (running requests are cancelled).
  void start();
  void stop();

  SchedulerStats stats() const;

  /// Drops the prefix cache's pages (those still used by requests stay with
  /// them). Only while nothing steps: before start() or after stop(), or
  /// between step() calls on the caller's thread.
  void clear_prefix_cache();

private:
  struct Active;
  void admit_inbox();
  void finish(Active &a, const std::string &reason, const std::string &error);
  void emit(Active &a, const std::vector<int32_t> &tokens, bool finished,
            const std::string &reason);
  /// Samples from `logits` (the row of `a`, processed in place) and feeds
  /// the token on; false when the request ended.
  bool sample_and_accept(Active &a, float *logits);
  /// Pages that choice > 0 of a request shares with its choice 0, which
  /// must have prefilled them first: false while `a` must wait for that.
  bool sibling_pages(const Active &a, std::vector<int32_t> *pages) const;
  int64_t pages_for(const Active &a) const;
  /// Pages that can be handed out without touching running requests'
  /// reservations: free and evictable pages less what running requests may
  /// still allocate.
  int64_t unreserved_pages() const;
  /// Evicts cached pages until the step of `chunks` finds its pages free.
  void make_room(const std::vector<SeqChunk> &chunks);
  /// Records the full prompt blocks of `a` now in the cache.
  void cache_prompt_blocks(Active &a);
  /// At the end of a request: records every full block of its prompt and
  /// fed-back output (not after a step error).
  void cache_sequence_blocks(Active &a);
  void publish_stats();

  Engine *engine_;
  const Tokenizer *tokenizer_;
  SchedulerOptions options_;
  int64_t page_size_ = 16;

  mutable std::mutex mu_; ///< guards inbox_, cancels_, next_id_, stats_
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Active>> inbox_;
  std::vector<int64_t> cancels_;
  int64_t next_id_ = 1;
  SchedulerStats stats_;

  // Owned by the stepping thread.
  std::deque<std::unique_ptr<Active>> waiting_;
  std::vector<std::unique_ptr<Active>> running_;
  std::unique_ptr<PrefixCache> prefix_; ///< null when options_.prefix_cache off
  int64_t steps_ = 0, prompt_total_ = 0, generated_total_ = 0,
          prefix_hits_ = 0;

  std::thread thread_;
  std::atomic<bool> stopping_{false};
};

} // namespace hyrt
