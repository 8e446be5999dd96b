// Scheduler: continuous batching with chunked prefill and page reservation
// over one Engine (see hyrt/engine/scheduler.h).
#include "hyrt/engine/scheduler.h"

#include <algorithm>
#include <cmath>

namespace hyrt {

namespace {

/// `token`'s log-softmax in `row` (raw logits) and the `top` most likely.
SampledToken token_logprob(const float *row, int64_t n, int32_t token,
                           int64_t top) {
  const float most = *std::max_element(row, row + n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += std::exp(double(row[i] - most));
  const float log_sum = float(std::log(sum)) + most;
  SampledToken t;
  t.token = token;
  t.logprob = row[token] - log_sum;
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    ids[size_t(i)] = int32_t(i);
  top = std::min(top, n);
  std::partial_sort(ids.begin(), ids.begin() + top, ids.end(),
                    [&](int32_t a, int32_t b) {
                      return row[a] > row[b] || (row[a] == row[b] && a < b);
                    });
  for (int64_t i = 0; i < top; ++i)
    t.top.push_back({ids[size_t(i)], row[ids[size_t(i)]] - log_sum});
  return t;
}

std::string str(int64_t v) { return std::to_string(v); }

/// Length of `text` without a trailing incomplete UTF-8 sequence (a token
/// may end in the middle of a character; the next one completes it).
size_t complete_utf8_prefix(const std::string &text) {
  const size_t n = text.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const unsigned char c = static_cast<unsigned char>(text[n - back]);
    if ((c & 0xC0) == 0x80)
      continue; // continuation byte: keep looking for the lead byte
    const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back ? n - back : n;
  }
  return n;
}

/// Longest suffix of `text` that is a proper prefix of some stop string:
/// that much text may still become a stop string, so it is held back.
size_t held_back_for_stops(const std::string &text,
                           const std::vector<std::string> &stops) {
  size_t held = 0;
  for (const std::string &s : stops)
    for (size_t k = std::min(s.size() - 1, text.size()); k > held; --k)
      if (text.compare(text.size() - k, k, s, 0, k) == 0) {
        held = k;
        break;
      }
  return held;
}

} // namespace

struct Scheduler::Active {
  int64_t id = 0;
  int64_t choice = 0;
  Request req;
  std::shared_ptr<TokenConstraint> constraint;
  EventCallback on_event;
  Sampler sampler;
  int64_t seq = -1;
  int64_t reserved = 0;      ///< worst-case pages (shared ones included)
  int64_t shared = 0;        ///< leading pages taken from the prefix cache
  int64_t cached_blocks = 0; ///< blocks recorded in the prefix cache
  std::vector<int32_t> output; ///< generated ids (stop token excluded)
  bool failed = false;         ///< ended by a step error: its KV is suspect
  size_t prefilled = 0;      ///< prompt tokens already in the cache
  int32_t pending = -1;      ///< sampled token still to be fed (decode)
  int64_t generated = 0;     ///< tokens reported, stop token excluded
  int32_t prev_token = -1;   ///< for the tokenizer's piece of the next one
  std::string text;          ///< generated text (with a tokenizer)
  size_t emitted = 0;        ///< bytes of `text` already sent
  bool done = false;
  std::vector<SampledToken> logprobs; ///< of tokens not yet emitted
  std::vector<SampledToken> prompt_logprobs; ///< until the first event
  Active(const SamplerConfig &c) : sampler(c) {}
};

Scheduler::Scheduler(Engine *engine, const Tokenizer *tokenizer,
                     SchedulerOptions options)
    : engine_(engine), tokenizer_(tokenizer), options_(options),
      page_size_(engine->kv_cache().config().page_size) {
  stats_.kv_pages_total = engine->kv_cache().config().num_pages;
  if (options_.prefix_cache)
    prefix_ = std::make_unique<PrefixCache>(&engine->mutable_kv_cache());
}

Scheduler::~Scheduler() { stop(); }

int64_t Scheduler::pages_for(const Active &a) const {
  // The last sampled token is never fed, so the cache holds at most
  // prompt + max_tokens - 1 positions, and never more than max_seq_len.
  const int64_t positions =
      std::min<int64_t>(int64_t(a.req.prompt.size()) + a.req.max_tokens - 1,
                        engine_->limits().max_seq_len);
  return (positions + page_size_ - 1) / page_size_;
}

Status Scheduler::submit(Request request, EventCallback on_event,
                         int64_t *id) {
  const ArtifactLimits &lim = engine_->limits();
  const int64_t n = int64_t(request.prompt.size());
  if (n == 0)
    return Status::Error("empty prompt (expected at least one token)");
  if (n > lim.max_seq_len)
    return Status::Error("prompt of " + str(n) +
                         " tokens exceeds max_seq_len " + str(lim.max_seq_len) +
                         " of this artifact");
  for (int32_t t : request.prompt)
    if (t < 0 || t >= engine_->vocab_size())
      return Status::Error("prompt token id " + str(t) +
                           " outside the vocabulary [0, " +
                           str(engine_->vocab_size()) + ")");
  if (request.max_tokens < 1)
    return Status::Error("max_tokens: expected >= 1, found " +
                         str(request.max_tokens));
  for (const std::string &s : request.stop_strings)
    if (s.empty())
      return Status::Error("stop: expected non-empty strings, found \"\"");
  if (!request.stop_strings.empty() && !tokenizer_)
    return Status::Error(
        "stop strings need a tokenizer and this artifact has none");
  if (request.n < 1 || request.n > Request::kMaxChoices)
    return Status::Error("n: expected 1 to " + str(Request::kMaxChoices) +
                         " choices, found " + str(request.n));
  if (request.logprobs < -1 || request.logprobs > Request::kMaxTopLogprobs)
    return Status::Error("logprobs: expected -1 (none) to " +
                         str(Request::kMaxTopLogprobs) + ", found " +
                         str(request.logprobs));
  if (request.n > 1 && request.constraint && !request.constraint_factory)
    return Status::Error("n > 1 with a constraint needs a constraint_factory "
                         "(each choice keeps its own constraint state)");
  if (Status s = Sampler(request.sampler).validate(engine_->vocab_size()); !s.ok())
    return s;
  std::vector<std::unique_ptr<Active>> choices;
  for (int64_t c = 0; c < request.n; ++c) {
    SamplerConfig sc = request.sampler;
    sc.stream = uint64_t(c);
    auto a = std::make_unique<Active>(sc);
    a->choice = c;
    a->req = request;
    a->constraint = c == 0 ? request.constraint
                    : request.constraint_factory ? request.constraint_factory()
                                                 : nullptr;
    if (request.constraint && !a->constraint)
      return Status::Error("constraint_factory made no constraint for choice " +
                           str(c));
    a->sampler.set_prompt(a->req.prompt);
    a->on_event = on_event;
    a->prev_token = a->req.prompt.back();
    a->reserved = pages_for(*a);
    choices.push_back(std::move(a));
  }
  const int64_t pool = engine_->kv_cache().config().num_pages;
  if (choices[0]->reserved > pool)
    return Status::Error("request needs " + str(choices[0]->reserved) +
                         " KV pages but the pool has only " + str(pool));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) // nothing would ever step it
      return Status::Error("the scheduler has stopped (the server is "
                           "shutting down)");
    *id = next_id_++;
    for (auto &a : choices) {
      a->id = *id;
      inbox_.push_back(std::move(a));
      ++stats_.queued;
    }
  }
  wake_.notify_all();
  return Status::Ok();
}

void Scheduler::cancel(int64_t id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancels_.push_back(id);
  }
  wake_.notify_all();
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Scheduler::clear_prefix_cache() {
  if (prefix_)
    prefix_->clear();
  publish_stats();
}

int64_t Scheduler::unreserved_pages() const {
  const KvCacheManager &kv = engine_->kv_cache();
  int64_t available = kv.free_pages() + (prefix_ ? prefix_->evictable_pages() : 0);
  for (const auto &a : running_) {
    const int64_t own = int64_t(kv.block_table(a->seq).size()) - a->shared;
    available -= a->reserved - a->shared - own;
  }
  return available;
}

void Scheduler::make_room(const std::vector<SeqChunk> &chunks) {
  if (!prefix_)
    return;
  const KvCacheManager &kv = engine_->kv_cache();
  int64_t need = 0;
  for (const SeqChunk &c : chunks)
    need += std::max<int64_t>(
        0, (kv.seq_length(c.seq_id) + int64_t(c.tokens.size()) + page_size_ - 1) /
                   page_size_ -
               int64_t(kv.block_table(c.seq_id).size()));
  if (need > kv.free_pages())
    prefix_->evict(need - kv.free_pages());
}

void Scheduler::cache_prompt_blocks(Active &a) {
  const int64_t blocks = int64_t(a.prefilled) / page_size_;
  if (!prefix_ || blocks <= a.cached_blocks)
    return;
  // Cannot fail: the blocks lie in pages this sequence holds.
  (void)prefix_->insert(a.req.prompt, engine_->kv_cache().block_table(a.seq),
                        blocks);
  a.cached_blocks = blocks;
}

void Scheduler::cache_sequence_blocks(Active &a) {
  if (!prefix_ || a.failed)
    return;
  // What the cache holds: the prompt and every generated token fed back
  // (the last sampled one never was). A follow-up turn whose prompt repeats
  // this conversation then reuses the answer's pages too.
  std::vector<int32_t> tokens = a.req.prompt;
  tokens.insert(tokens.end(), a.output.begin(), a.output.end());
  tokens.resize(std::min<size_t>(tokens.size(), size_t(engine_->seq_length(a.seq))));
  const int64_t blocks = int64_t(tokens.size()) / page_size_;
  if (blocks <= a.cached_blocks)
    return;
  (void)prefix_->insert(tokens, engine_->kv_cache().block_table(a.seq), blocks);
  a.cached_blocks = blocks;
}

void Scheduler::publish_stats() {
  const int64_t evictable = prefix_ ? prefix_->evictable_pages() : 0;
  std::lock_guard<std::mutex> lock(mu_);
  stats_.queued = int64_t(inbox_.size() + waiting_.size());
  stats_.running = int64_t(running_.size());
  stats_.kv_pages_used = stats_.kv_pages_total -
                         engine_->kv_cache().free_pages() - evictable;
  stats_.prefix_cached_pages = prefix_ ? prefix_->cached_pages() : 0;
  stats_.prefix_hit_tokens = prefix_hits_;
  stats_.prefix_evicted_pages = prefix_ ? prefix_->evicted_pages() : 0;
  stats_.steps = steps_;
  stats_.prompt_tokens = prompt_total_;
  stats_.generated_tokens = generated_total_;
}

void Scheduler::emit(Active &a, const std::vector<int32_t> &tokens,
                     bool finished, const std::string &reason) {
  RequestEvent e;
  e.request_id = a.id;
  e.choice = a.choice;
  e.tokens = tokens;
  e.logprobs.swap(a.logprobs);
  e.prompt_logprobs.swap(a.prompt_logprobs);
  // Unfinished, hold back what could still become a stop string or
  // complete a character; finished, everything left goes out.
  size_t end = a.text.size();
  if (!finished) {
    end -= held_back_for_stops(a.text, a.req.stop_strings);
    end = std::min(end, complete_utf8_prefix(a.text));
  }
  if (end > a.emitted) {
    e.text = a.text.substr(a.emitted, end - a.emitted);
    a.emitted = end;
  }
  e.finished = finished;
  e.finish_reason = reason;
  e.prompt_tokens = int64_t(a.req.prompt.size());
  e.completion_tokens = a.generated;
  if (finished)
    a.done = true;
  if (a.on_event && (finished || !e.tokens.empty() || !e.text.empty()))
    a.on_event(e);
}

void Scheduler::finish(Active &a, const std::string &reason,
                       const std::string &error) {
  if (a.done)
    return;
  if (!error.empty()) {
    a.failed = true;
    RequestEvent e;
    e.request_id = a.id;
    e.choice = a.choice;
    e.finished = true;
    e.finish_reason = reason;
    e.error = error;
    e.prompt_tokens = int64_t(a.req.prompt.size());
    e.completion_tokens = a.generated;
    a.done = true;
    if (a.on_event)
      a.on_event(e);
    return;
  }
  emit(a, {}, true, reason);
}

bool Scheduler::sample_and_accept(Active &a, float *logits) {
  const int64_t V = engine_->vocab_size();
  SampledToken t = a.sampler.step(logits, V, a.constraint.get(), a.req.logprobs);
  if (t.token < 0) {
    finish(a, "error",
           "no token may come next: logit_bias or the constraint masked out "
           "the whole vocabulary");
    return false;
  }
  const int32_t token = t.token;
  const auto &stops = a.req.stop_tokens;
  if (std::find(stops.begin(), stops.end(), token) != stops.end()) {
    emit(a, {}, true, "stop");
    return false;
  }
  if (a.constraint && !a.constraint->accept(token)) {
    finish(a, "error", "the constraint rejected the sampled token " +
                           str(token));
    return false;
  }
  if (a.req.logprobs >= 0)
    a.logprobs.push_back(std::move(t));
  ++a.generated;
  ++generated_total_;
  a.output.push_back(token);
  if (tokenizer_) {
    a.text += tokenizer_->decode(a.prev_token, token);
    a.prev_token = token;
    // Only the text that the new piece can have completed needs a look.
    size_t longest = 0;
    for (const std::string &s : a.req.stop_strings)
      longest = std::max(longest, s.size());
    const size_t from =
        a.emitted > longest ? a.emitted - longest : size_t(0);
    size_t cut = std::string::npos;
    for (const std::string &s : a.req.stop_strings)
      cut = std::min(cut, a.text.find(s, from));
    if (cut != std::string::npos) {
      a.text.resize(cut);
      emit(a, {token}, true, "stop");
      return false;
    }
  }
  // A constraint that is satisfied and admits nothing more ends the
  // request as a stop token would.
  if (a.constraint && a.constraint->complete() && !a.constraint->can_continue()) {
    emit(a, {token}, true, "stop");
    return false;
  }
  const bool length = a.generated >= a.req.max_tokens ||
                      engine_->seq_length(a.seq) >= engine_->limits().max_seq_len;
  emit(a, {token}, length, length ? "length" : "");
  if (length)
    return false;
  a.pending = token;
  return true;
}

bool Scheduler::sibling_pages(const Active &a, std::vector<int32_t> *pages) const {
  pages->clear();
  for (const auto &r : running_) {
    if (r->id != a.id || r->choice != 0)
      continue;
    if (r->done || r->failed)
      return true; // ending: its pages may go any moment; use the cache
    const int64_t want = (int64_t(a.req.prompt.size()) - 1) / page_size_;
    if (int64_t(r->prefilled) / page_size_ < want &&
        r->prefilled < r->req.prompt.size())
      return false; // not prefilled that far yet
    const std::vector<int32_t> &table = engine_->kv_cache().block_table(r->seq);
    pages->assign(table.begin(),
                  table.begin() + std::min<int64_t>(want, int64_t(table.size())));
    return true;
  }
  return true; // choice 0 is not running (ended, or still queued ahead)
}

void Scheduler::admit_inbox() {
  std::vector<int64_t> cancels;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto &a : inbox_)
      waiting_.push_back(std::move(a));
    inbox_.clear();
    cancels.swap(cancels_);
  }
  for (int64_t id : cancels) {
    for (auto &a : waiting_)
      if (a->id == id)
        finish(*a, "cancelled", "");
    for (auto &a : running_)
      if (a->id == id)
        finish(*a, "cancelled", "");
  }
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(),
                                [](const auto &a) { return a->done; }),
                 waiting_.end());
  const ArtifactLimits &lim = engine_->limits();
  const KvCacheManager &kv = engine_->kv_cache();
  // First come, first served: the head waits for pages rather than being
  // overtaken by smaller requests, so it cannot starve.
  while (!waiting_.empty() && int64_t(running_.size()) < lim.max_seqs) {
    Active &head = *waiting_.front();
    // A later choice shares what its choice 0 prefilled (the prompt is
    // computed once); until then it waits, and so does the queue behind it
    // (choice 0 runs, so that is soon).
    std::vector<int32_t> shared;
    // Prompt logprobs need every prompt position computed.
    const bool whole = head.req.prompt_logprobs;
    if (head.choice > 0 && !whole && !sibling_pages(head, &shared))
      break;
    // At least the last prompt token is computed (its logits give the
    // first token), so the block holding it is never taken from the cache.
    const bool from_cache = shared.empty() && prefix_ && !whole;
    if (from_cache)
      shared = prefix_->lookup(head.req.prompt,
                               (int64_t(head.req.prompt.size()) - 1) / page_size_);
    // Shared pages that only the cache held stop being evictable (a
    // sibling's pages are held by its sequence: never evictable).
    int64_t revived = 0;
    for (int32_t p : shared)
      revived += from_cache && kv.page_refs(p) == 1 ? 1 : 0;
    if (head.reserved - int64_t(shared.size()) + revived > unreserved_pages())
      break;
    std::unique_ptr<Active> a = std::move(waiting_.front());
    waiting_.pop_front();
    a->seq = engine_->add_sequence();
    if (!shared.empty()) {
      // Cannot fail: a fresh sequence, pages the cache or choice 0 holds.
      (void)engine_->share_prefix(a->seq, shared);
      a->shared = int64_t(shared.size());
      a->prefilled = size_t(a->shared * page_size_);
      prefix_hits_ += a->shared * page_size_;
      cache_prompt_blocks(*a); // marks the shared blocks used
    }
    running_.push_back(std::move(a));
  }
}

Status Scheduler::step(bool *did_work) {
  if (did_work)
    *did_work = false;
  admit_inbox();
  const ArtifactLimits &lim = engine_->limits();

  // Decodes first (one token each, the latency users see), then prefill
  // chunks in admission order in what is left of max_batch_tokens.
  std::vector<Active *> decodes, prefills;
  for (auto &a : running_)
    if (!a->done && a->pending >= 0)
      decodes.push_back(a.get());
  int64_t budget = lim.max_batch_tokens;
  const bool prefill_now = options_.mixed_steps || decodes.empty();
  if (options_.mixed_steps &&
      int64_t(decodes.size()) > budget) // extend steps hold budget tokens
    decodes.resize(size_t(budget));
  std::vector<SeqChunk> chunks;
  for (Active *a : decodes) {
    chunks.push_back({a->seq, {a->pending}});
    --budget;
  }
  if (prefill_now)
    for (auto &a : running_) {
      if (a->done || a->prefilled >= a->req.prompt.size() || budget <= 0)
        continue;
      const size_t n = std::min<size_t>(size_t(budget),
                                        a->req.prompt.size() - a->prefilled);
      chunks.push_back({a->seq,
                        {a->req.prompt.begin() + int64_t(a->prefilled),
                         a->req.prompt.begin() + int64_t(a->prefilled + n)}});
      prefills.push_back(a.get());
      budget -= int64_t(n);
    }

  Status status;
  if (!chunks.empty()) {
    if (did_work)
      *did_work = true;
    std::vector<float> logits;
    // Every row of the step when a prompt's logprobs are asked for.
    bool all_rows = false;
    for (Active *a : prefills)
      all_rows |= a->req.prompt_logprobs;
    make_room(chunks);
    status = prefills.empty()
                 ? engine_->decode(
                       [&] {
                         std::vector<int64_t> s;
                         for (const SeqChunk &c : chunks)
                           s.push_back(c.seq_id);
                         return s;
                       }(),
                       [&] {
                         std::vector<int32_t> t;
                         for (const SeqChunk &c : chunks)
                           t.push_back(c.tokens[0]);
                         return t;
                       }(),
                       &logits)
                 : engine_->extend_batch(chunks, &logits, all_rows);
    ++steps_;
    const int64_t V = engine_->vocab_size();
    if (!status.ok()) {
      for (Active *a : decodes)
        finish(*a, "error", status.message());
      for (Active *a : prefills)
        finish(*a, "error", status.message());
    } else {
      size_t row = 0;
      for (Active *a : decodes) {
        a->pending = -1;
        sample_and_accept(*a, &logits[row++ * V]);
      }
      for (size_t i = 0; i < prefills.size(); ++i) {
        Active *a = prefills[i];
        const size_t n = chunks[decodes.size() + i].tokens.size();
        if (all_rows && a->req.prompt_logprobs)
          for (size_t j = 0; j < n; ++j)
            if (a->prefilled + j + 1 < a->req.prompt.size())
              a->prompt_logprobs.push_back(
                  token_logprob(&logits[(row + j) * V], V,
                                a->req.prompt[a->prefilled + j + 1],
                                a->req.logprobs));
        if (all_rows)
          row += n - 1; // to the chunk's last row
        a->prefilled += n;
        prompt_total_ += int64_t(n);
        cache_prompt_blocks(*a);
        if (a->prefilled == a->req.prompt.size())
          sample_and_accept(*a, &logits[row * V]);
        ++row;
      }
    }
  }

  // Finished (or cancelled) requests give their pages back now.
  for (auto &a : running_)
    if (a->done) {
      cache_sequence_blocks(*a);
      (void)engine_->release(a->seq);
      if (did_work)
        *did_work = true;
    }
  running_.erase(std::remove_if(running_.begin(), running_.end(),
                                [](const auto &a) { return a->done; }),
                 running_.end());
  publish_stats();
  return status;
}

Status Scheduler::run_until_idle() {
  while (true) {
    bool worked = false;
    if (Status s = step(&worked); !s.ok())
      return s;
    std::lock_guard<std::mutex> lock(mu_);
    if (!worked && inbox_.empty() && cancels_.empty() && waiting_.empty() &&
        running_.empty())
      return Status::Ok();
  }
}

void Scheduler::start() {
  if (thread_.joinable())
    return;
  stopping_ = false;
  thread_ = std::thread([this] {
    while (!stopping_) {
      bool worked = false;
      (void)step(&worked); // errors already reached the requests involved
      if (worked)
        continue;
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] {
        return stopping_ || !inbox_.empty() || !cancels_.empty();
      });
    }
  });
}

void Scheduler::stop() {
  if (!thread_.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  // Nothing steps any more: end what is left and free its pages.
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto &a : inbox_)
      waiting_.push_back(std::move(a));
    inbox_.clear();
  }
  for (auto &a : waiting_)
    finish(*a, "cancelled", "");
  for (auto &a : running_) {
    finish(*a, "cancelled", "");
    (void)engine_->release(a->seq);
  }
  waiting_.clear();
  running_.clear();
  publish_stats();
}

} // namespace hyrt
