// hyrt_check_step_v0: the generated entry points' first call (abi.h). The
// arena, the logits gather and the KV tables are sized for the compiled
// bounds, so a step past them would write outside them; it is refused here
// with a code the runtime turns into a message. Cost: a few compares per
// sequence and per token, nothing per layer.
#include "hyrt/abi.h"

namespace {

int32_t check_sequences(const hyrt_step_v0 *s, const hyrt_kv_cache_v0 *kv,
                        const hyrt_step_bounds_v0 *b) {
  if (s->max_pages_per_seq < 1 || kv->page_size < 1)
    return HYRT_STEP_PAGES;
  int64_t next = 0;
  for (int64_t q = 0; q < s->num_seqs; ++q) {
    const int64_t start = s->seq_token_start[q], len = s->seq_new_len[q],
                  prefix = s->seq_prefix_len[q];
    if (start != next || len < 1 || len > s->num_tokens - next ||
        (b->decode && len != 1))
      return HYRT_STEP_LAYOUT;
    next += len;
    if (prefix < 0 || prefix > b->max_seq_len - len)
      return HYRT_STEP_POSITION;
    const int64_t pages = (prefix + len + kv->page_size - 1) / kv->page_size;
    if (pages > s->max_pages_per_seq)
      return HYRT_STEP_PAGES;
    const int32_t *table = s->block_tables + q * s->max_pages_per_seq;
    for (int64_t j = 0; j < pages; ++j)
      if (table[j] < 0 || table[j] >= kv->num_pages)
        return HYRT_STEP_PAGES;
  }
  return next == s->num_tokens ? HYRT_STEP_OK : HYRT_STEP_LAYOUT;
}

int32_t check_tokens(const hyrt_step_v0 *s, const hyrt_step_bounds_v0 *b) {
  for (int64_t t = 0; t < s->num_tokens; ++t) {
    const int32_t q = s->token_seq[t];
    if (q < 0 || q >= s->num_seqs || t < s->seq_token_start[q] ||
        t >= int64_t(s->seq_token_start[q]) + s->seq_new_len[q])
      return HYRT_STEP_LAYOUT;
    if (s->positions[t] != s->seq_prefix_len[q] + (t - s->seq_token_start[q]))
      return HYRT_STEP_POSITION;
    if (s->tokens[t] < 0 || s->tokens[t] >= b->vocab_size)
      return HYRT_STEP_TOKEN_ID;
  }
  if (s->num_logit_rows < 0 || s->num_logit_rows > s->num_tokens ||
      (s->num_logit_rows > 0 && !s->logit_rows))
    return HYRT_STEP_LOGIT_ROWS;
  for (int64_t r = 0; r < s->num_logit_rows; ++r)
    if (s->logit_rows[r] < (r ? s->logit_rows[r - 1] + 1 : 0) ||
        s->logit_rows[r] >= s->num_tokens)
      return HYRT_STEP_LOGIT_ROWS;
  return HYRT_STEP_OK;
}

} // namespace

extern "C" int32_t hyrt_check_step_v0(const hyrt_step_v0 *s, const hyrt_kv_cache_v0 *kv,
                                      const hyrt_step_bounds_v0 *b) {
  if (!s || !kv || !b || !s->tokens || !s->positions || !s->token_seq ||
      !s->seq_token_start || !s->seq_new_len || !s->seq_prefix_len ||
      !s->block_tables || !s->logits || !kv->k_layers)
    return HYRT_STEP_NULL;
  // Sequences first: a decode step's token count is its sequence count.
  if (s->num_seqs < 1 || s->num_seqs > b->max_seqs ||
      (b->decode && s->num_seqs != s->num_tokens))
    return HYRT_STEP_TOO_MANY_SEQS;
  if (s->num_tokens < s->num_seqs || s->num_tokens > b->max_tokens)
    return HYRT_STEP_TOO_MANY_TOKENS;
  if (kv->num_layers != b->kv_num_layers || kv->num_kv_heads != b->kv_num_kv_heads ||
      kv->k_head_dim != b->k_head_dim || kv->v_head_dim != b->v_head_dim ||
      (b->kv_dtype >= 0 && kv->dtype != b->kv_dtype) || kv->num_pages < 1)
    return HYRT_STEP_KV_CACHE;
  if (int32_t rc = check_sequences(s, kv, b))
    return rc;
  return check_tokens(s, b);
}
