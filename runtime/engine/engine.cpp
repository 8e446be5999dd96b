// Engine: KV cache and arena ownership, limit checks and extend / decode
// steps through an artifact's entry points (see hyrt/engine/engine.h).
#include "hyrt/engine/engine.h"

#include <algorithm>
#include <cstdlib>

namespace hyrt {

namespace {
std::string str(int64_t v) { return std::to_string(v); }
} // namespace

void Engine::ArenaDeleter::operator()(void *p) const { std::free(p); }

Engine::~Engine() = default;

Status Engine::create(const Artifact *artifact, const EngineOptions &options,
                      std::unique_ptr<Engine> *out) {
  if (!artifact)
    return Status::Error("Engine::create: no artifact");
  const Manifest &m = artifact->manifest();
  if (options.page_size <= 0)
    return Status::Error("KV cache page_size: expected > 0, found " +
                         str(options.page_size));
  if (options.num_pages < 0)
    return Status::Error("KV cache num_pages: expected >= 0, found " +
                         str(options.num_pages));
  std::unique_ptr<Engine> engine(new Engine());
  engine->artifact_ = artifact;
  KvCacheConfig cc;
  cc.num_layers = m.kv_cache.num_layers;
  cc.num_kv_heads = m.kv_cache.num_kv_heads;
  cc.k_head_dim = m.kv_cache.k_head_dim;
  cc.v_head_dim = m.kv_cache.v_head_dim;
  cc.dtype = m.kv_cache.dtype == "int8"   ? HYRT_KV_INT8
             : m.kv_cache.dtype == "bf16" ? HYRT_KV_BF16
                                          : HYRT_KV_F32;
  cc.huge_pages = options.huge_pages;
  cc.page_size = options.page_size;
  cc.max_pages_per_seq =
      (m.limits.max_seq_len + options.page_size - 1) / options.page_size;
  cc.num_pages = options.num_pages > 0
                     ? options.num_pages
                     : m.limits.max_seqs * cc.max_pages_per_seq;
  if (Status s = engine->cache_.init(cc); !s.ok())
    return s;
  const size_t arena =
      (size_t(std::max<int64_t>(artifact->arena_bytes(), 64)) + 63) / 64 * 64;
  engine->arena_.reset(std::aligned_alloc(64, arena));
  if (!engine->arena_)
    return Status::Error("cannot allocate the " + str(int64_t(arena)) +
                         "-byte activation arena");
  *out = std::move(engine);
  return Status::Ok();
}

int64_t Engine::add_sequence() {
  const int64_t id = next_seq_++;
  live_.insert(id);
  return id;
}

Status Engine::share_prefix(int64_t seq, const std::vector<int32_t> &pages) {
  if (!live_.count(seq))
    return Status::Error("share_prefix: unknown sequence " + str(seq));
  if (int64_t(pages.size()) * cache_.config().page_size > limits().max_seq_len)
    return Status::Error("share_prefix: " + str(int64_t(pages.size())) +
                         " pages exceed max_seq_len " + str(limits().max_seq_len));
  return cache_.share_pages(seq, pages);
}

Status Engine::release(int64_t seq) {
  if (!live_.erase(seq))
    return Status::Error("release: unknown sequence " + str(seq));
  if (cache_.has_sequence(seq))
    return cache_.free_sequence(seq);
  return Status::Ok();
}

Status Engine::check_sequence(int64_t seq, int64_t new_tokens) const {
  if (!live_.count(seq))
    return Status::Error("unknown sequence " + str(seq) +
                         " (not added or already released)");
  if (new_tokens <= 0)
    return Status::Error("sequence " + str(seq) +
                         ": expected at least one new token, found 0");
  const int64_t pos = cache_.seq_length(seq);
  if (pos + new_tokens > limits().max_seq_len)
    return Status::Error(str(new_tokens) + " tokens at position " + str(pos) +
                         " of sequence " + str(seq) + " exceed max_seq_len " +
                         str(limits().max_seq_len) + " of this artifact");
  return Status::Ok();
}

std::string step_error_text(int32_t code) {
  switch (code) {
  case HYRT_STEP_NULL:
    return "a required pointer of the step is null";
  case HYRT_STEP_TOO_MANY_TOKENS:
    return "the step's token count is outside the compiled bound";
  case HYRT_STEP_TOO_MANY_SEQS:
    return "the step's sequence count is outside the compiled bound (max_seqs)";
  case HYRT_STEP_LAYOUT:
    return "the step's sequences are not contiguous and in order";
  case HYRT_STEP_POSITION:
    return "a position is past the compiled max_seq_len or not prefix + index";
  case HYRT_STEP_PAGES:
    return "a block table is too short or names a page outside the KV pool";
  case HYRT_STEP_LOGIT_ROWS:
    return "the logit rows are not ascending token indices of the step";
  case HYRT_STEP_TOKEN_ID:
    return "a token id is outside the model's vocabulary";
  case HYRT_STEP_KV_CACHE:
    return "the KV cache's geometry or dtype differs from the compiled one";
  default:
    return "unknown error code " + std::to_string(code);
  }
}

Status Engine::run_step(const std::vector<SeqChunk> &chunks, bool decode,
                        bool all_logits) {
  if (Status s = batch_.build(cache_, chunks, vocab_size(), all_logits); !s.ok())
    return s;
  if (step_hook_)
    if (Status s = step_hook_(*batch_.abi(), decode); !s.ok())
      return s;
  hyrt_entry_fn_v0 fn = decode ? artifact_->decode_fn() : artifact_->extend_fn();
  const int32_t rc =
      fn(batch_.abi(), cache_.view(), artifact_->weights(), arena_.get());
  if (Status s = step_status(rc, decode, batch_.num_tokens(), int64_t(chunks.size())); !s.ok())
    return s;
  return batch_.commit(cache_);
}

Status Engine::run_foreign_step(hyrt_step_v0 step, bool decode) {
  foreign_logits_.resize(size_t(std::max<int64_t>(1, step.num_logit_rows) * vocab_size()));
  step.logits = foreign_logits_.data();
  hyrt_entry_fn_v0 fn = decode ? artifact_->decode_fn() : artifact_->extend_fn();
  const int32_t rc = fn(&step, cache_.view(), artifact_->weights(), arena_.get());
  return step_status(rc, decode, step.num_tokens, step.num_seqs);
}

Status Engine::step_status(int32_t rc, bool decode, int64_t tokens, int64_t seqs) {
  const Manifest &m = artifact_->manifest();
  // A rank's all-reduce that could not run leaves a partial sum behind:
  // the step is lost, and so is the sequence's KV (not committed).
  if (hyrt_collectives_v0 *c = artifact_->collectives(); c && c->failed) {
    const int32_t why = c->failed;
    c->failed = HYRT_COLLECTIVE_OK;
    return Status::Error(
        (decode ? m.decode_symbol : m.extend_symbol) + ": " +
        (why == HYRT_COLLECTIVE_NOT_REGISTERED
             ? "this artifact all-reduces across tensor-parallel ranks, and no group of "
               "that size was registered (run it with its --tp)"
             : "the tensor-parallel all-reduce failed (a rank stopped; see its error)"));
  }
  if (rc != 0)
    return Status::Error(
        (decode ? m.decode_symbol : m.extend_symbol) + " refused a step of " +
        str(tokens) + " tokens over " + str(seqs) + " sequences: " + step_error_text(rc) +
        " (code " + std::to_string(rc) + ")");
  return Status::Ok();
}

Status Engine::extend_batch(const std::vector<SeqChunk> &chunks,
                            std::vector<float> *logits, bool all_rows) {
  int64_t total = 0;
  for (const SeqChunk &c : chunks) {
    if (Status s = check_sequence(c.seq_id, int64_t(c.tokens.size())); !s.ok())
      return s;
    total += int64_t(c.tokens.size());
  }
  if (total > limits().max_batch_tokens)
    return Status::Error("extend step of " + str(total) +
                         " tokens exceeds max_batch_tokens " +
                         str(limits().max_batch_tokens) + " of this artifact");
  if (int64_t(chunks.size()) > limits().max_seqs)
    return Status::Error("extend step over " + str(int64_t(chunks.size())) +
                         " sequences exceeds max_seqs " +
                         str(limits().max_seqs) + " of this artifact");
  if (Status s = run_step(chunks, /*decode=*/false, all_rows); !s.ok())
    return s;
  if (!logits)
    return Status::Ok();
  if (all_rows) {
    logits->assign(batch_.logits(0), batch_.logits(0) + total * vocab_size());
    return Status::Ok();
  }
  logits->clear();
  for (size_t i = 0; i < chunks.size(); ++i)
    logits->insert(logits->end(), batch_.last_logits(int64_t(i)),
                   batch_.last_logits(int64_t(i)) + vocab_size());
  return Status::Ok();
}

Status Engine::extend(int64_t seq, const std::vector<int32_t> &tokens,
                      std::vector<float> *logits, bool all_rows) {
  if (Status s = check_sequence(seq, int64_t(tokens.size())); !s.ok())
    return s;
  const int64_t V = vocab_size(), chunk = limits().max_batch_tokens;
  if (logits)
    logits->clear();
  std::vector<SeqChunk> step(1);
  step[0].seq_id = seq;
  for (size_t begin = 0; begin < tokens.size(); begin += size_t(chunk)) {
    const size_t end = std::min(tokens.size(), begin + size_t(chunk));
    step[0].tokens.assign(tokens.begin() + begin, tokens.begin() + end);
    // Without all_rows only the last token's row is computed (the lm_head
    // of a large vocabulary costs as much as several layers).
    if (Status s = run_step(step, /*decode=*/false, all_rows && logits); !s.ok())
      return s;
    if (!logits)
      continue;
    const int64_t n = int64_t(end - begin);
    if (all_rows)
      logits->insert(logits->end(), batch_.logits(0), batch_.logits(0) + n * V);
    else if (end == tokens.size())
      logits->assign(batch_.last_logits(0), batch_.last_logits(0) + V);
  }
  return Status::Ok();
}

Status Engine::decode(const std::vector<int64_t> &seqs,
                      const std::vector<int32_t> &tokens,
                      std::vector<float> *logits) {
  if (seqs.size() != tokens.size())
    return Status::Error("decode: " + str(int64_t(seqs.size())) +
                         " sequences but " + str(int64_t(tokens.size())) +
                         " tokens; expected one token per sequence");
  if (seqs.empty())
    return Status::Error("decode: expected at least one sequence, found 0");
  if (int64_t(seqs.size()) > limits().max_seqs)
    return Status::Error("decode batch of " + str(int64_t(seqs.size())) +
                         " exceeds max_seqs " + str(limits().max_seqs) +
                         " of this artifact");
  std::vector<SeqChunk> chunks(seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (Status s = check_sequence(seqs[i], 1); !s.ok())
      return s;
    chunks[i].seq_id = seqs[i];
    chunks[i].tokens = {tokens[i]};
  }
  if (Status s = run_step(chunks, /*decode=*/true); !s.ok())
    return s;
  if (logits)
    logits->assign(batch_.logits(0),
                   batch_.logits(0) + int64_t(seqs.size()) * vocab_size());
  return Status::Ok();
}

} // namespace hyrt
