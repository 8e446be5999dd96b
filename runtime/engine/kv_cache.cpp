// Paged KV cache manager and step batch builder (see hyrt/engine/kv_cache.h).
#include "hyrt/engine/kv_cache.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <sys/mman.h>

namespace hyrt {

namespace {
std::string str(int64_t v) { return std::to_string(v); }
const std::vector<int32_t> kEmptyTable;
} // namespace

void KvCacheManager::FreeDeleter::operator()(void *p) const { std::free(p); }

Status KvCacheManager::init(const KvCacheConfig &c) {
  if (c.num_layers <= 0 || c.num_pages <= 0 || c.page_size <= 0 ||
      c.num_kv_heads <= 0 || c.k_head_dim <= 0 || c.v_head_dim < 0 ||
      c.max_pages_per_seq <= 0)
    return Status::Error(
        "invalid KV cache config: expected positive num_layers, num_pages, "
        "page_size, num_kv_heads, k_head_dim, max_pages_per_seq and "
        "v_head_dim >= 0, found layers=" +
        str(c.num_layers) + " pages=" + str(c.num_pages) +
        " page_size=" + str(c.page_size) + " kv_heads=" + str(c.num_kv_heads) +
        " k_dim=" + str(c.k_head_dim) + " v_dim=" + str(c.v_head_dim) +
        " max_pages_per_seq=" + str(c.max_pages_per_seq));
  if (c.dtype != HYRT_KV_F32 && c.dtype != HYRT_KV_BF16 && c.dtype != HYRT_KV_INT8)
    return Status::Error("invalid KV cache dtype " + str(c.dtype) +
                         ": expected HYRT_KV_F32 (0), HYRT_KV_BF16 (1) or HYRT_KV_INT8 (2)");
  if (c.num_pages > INT32_MAX)
    return Status::Error("KV cache num_pages " + str(c.num_pages) +
                         " exceeds the int32 page id range");
  config_ = c;
  k_pools_.clear();
  v_pools_.clear();
  k_scale_pools_.clear();
  v_scale_pools_.clear();
  k_ptrs_.assign(c.num_layers, nullptr);
  v_ptrs_.assign(c.num_layers, nullptr);
  const bool int8 = c.dtype == HYRT_KV_INT8;
  k_scale_ptrs_.assign(int8 ? c.num_layers : 0, nullptr);
  v_scale_ptrs_.assign(int8 ? c.num_layers : 0, nullptr);
  // head_dim elements of elem_bytes per (page, head, slot) row.
  auto alloc = [&](int64_t head_dim, int64_t elem_bytes, Pool *out) -> Status {
    const uint64_t elems =
        uint64_t(c.num_pages) * c.page_size * c.num_kv_heads * head_dim;
    constexpr uint64_t kHuge = uint64_t(2) << 20;
    const uint64_t align = elems * elem_bytes >= kHuge ? kHuge : 64;
    const uint64_t bytes = (elems * elem_bytes + align - 1) / align * align;
    auto *p = static_cast<unsigned char *>(std::aligned_alloc(align, bytes));
    if (!p)
      return Status::Error("KV cache: cannot allocate " + std::to_string(bytes) +
                           " bytes for one layer pool");
    if (align == kHuge) // advisory: THP may be disabled on the host
      ::madvise(p, bytes, c.huge_pages ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    out->reset(p);
    return Status::Ok();
  };
  for (int64_t l = 0; l < c.num_layers; ++l) {
    k_pools_.emplace_back();
    if (Status s = alloc(c.k_head_dim, elemBytes(), &k_pools_.back()); !s.ok())
      return s;
    k_ptrs_[l] = k_pools_.back().get();
    if (int8) {
      k_scale_pools_.emplace_back();
      if (Status s = alloc(1, sizeof(float), &k_scale_pools_.back()); !s.ok())
        return s;
      k_scale_ptrs_[l] = reinterpret_cast<float *>(k_scale_pools_.back().get());
    }
    if (c.v_head_dim > 0) {
      v_pools_.emplace_back();
      if (Status s = alloc(c.v_head_dim, elemBytes(), &v_pools_.back()); !s.ok())
        return s;
      v_ptrs_[l] = v_pools_.back().get();
      if (int8) {
        v_scale_pools_.emplace_back();
        if (Status s = alloc(1, sizeof(float), &v_scale_pools_.back()); !s.ok())
          return s;
        v_scale_ptrs_[l] = reinterpret_cast<float *>(v_scale_pools_.back().get());
      }
    }
  }
  free_list_.clear();
  page_refs_.assign(size_t(c.num_pages), 0);
  for (int64_t p = c.num_pages - 1; p >= 0; --p)
    free_list_.push_back(int32_t(p));
  seqs_.clear();
  view_.num_layers = c.num_layers;
  view_.num_pages = c.num_pages;
  view_.page_size = c.page_size;
  view_.num_kv_heads = c.num_kv_heads;
  view_.k_head_dim = c.k_head_dim;
  view_.v_head_dim = c.v_head_dim;
  view_.k_layers = k_ptrs_.data();
  view_.v_layers = v_ptrs_.data();
  view_.dtype = c.dtype;
  view_.k_scale_layers = int8 ? k_scale_ptrs_.data() : nullptr;
  view_.v_scale_layers = int8 ? v_scale_ptrs_.data() : nullptr;
  return Status::Ok();
}

void KvCacheManager::zero_page(int32_t page) {
  // Rows of one page (all heads); an int8 page's scales too: a stale scale
  // times a zero code is harmless, but a stale code under a fresh row's
  // scale, or any NaN left behind, is not.
  const int64_t rows = config_.page_size * config_.num_kv_heads, row = rows * elemBytes();
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    std::memset(static_cast<unsigned char *>(k_ptrs_[l]) + page * row * config_.k_head_dim,
                0, size_t(row * config_.k_head_dim));
    if (v_ptrs_[l])
      std::memset(static_cast<unsigned char *>(v_ptrs_[l]) + page * row * config_.v_head_dim,
                  0, size_t(row * config_.v_head_dim));
    if (!k_scale_ptrs_.empty()) {
      std::fill_n(k_scale_ptrs_[l] + page * rows, rows, 0.0f);
      if (v_scale_ptrs_[l])
        std::fill_n(v_scale_ptrs_[l] + page * rows, rows, 0.0f);
    }
  }
}

Status KvCacheManager::allocate(int64_t seq_id, int64_t num_tokens) {
  if (k_ptrs_.empty())
    return Status::Error("KV cache used before init()");
  if (num_tokens < 0)
    return Status::Error("sequence " + str(seq_id) +
                         ": expected a token count >= 0, found " +
                         str(num_tokens));
  const int64_t need =
      (num_tokens + config_.page_size - 1) / config_.page_size;
  if (need > config_.max_pages_per_seq)
    return Status::Error(
        "sequence " + str(seq_id) + " needs " + str(need) + " pages for " +
        str(num_tokens) + " tokens (page_size " + str(config_.page_size) +
        "), more than max_pages_per_seq " + str(config_.max_pages_per_seq));
  auto it = seqs_.find(seq_id);
  const int64_t have = it == seqs_.end() ? 0 : int64_t(it->second.pages.size());
  const int64_t extra = need - have;
  if (extra > free_pages())
    return Status::Error("KV cache pool exhausted: sequence " + str(seq_id) +
                         " requests " + str(extra) + " more pages, " +
                         str(free_pages()) + " of " + str(config_.num_pages) +
                         " available");
  Sequence &seq = seqs_[seq_id];
  for (int64_t i = 0; i < extra; ++i) {
    const int32_t page = free_list_.back();
    free_list_.pop_back();
    zero_page(page);
    page_refs_[page] = 1;
    seq.pages.push_back(page);
  }
  return Status::Ok();
}

Status KvCacheManager::free_sequence(int64_t seq_id) {
  auto it = seqs_.find(seq_id);
  if (it == seqs_.end())
    return Status::Error("free_sequence: unknown sequence " + str(seq_id));
  for (auto p = it->second.pages.rbegin(); p != it->second.pages.rend(); ++p)
    if (Status s = release_page(*p); !s.ok())
      return s;
  seqs_.erase(it);
  return Status::Ok();
}

Status KvCacheManager::share_pages(int64_t seq_id,
                                   const std::vector<int32_t> &pages) {
  auto it = seqs_.find(seq_id);
  if (it != seqs_.end() && !it->second.pages.empty())
    return Status::Error("share_pages: sequence " + str(seq_id) + " already has " +
                         str(int64_t(it->second.pages.size())) +
                         " pages, expected none");
  if (int64_t(pages.size()) > config_.max_pages_per_seq)
    return Status::Error("share_pages: " + str(int64_t(pages.size())) +
                         " pages exceed max_pages_per_seq " +
                         str(config_.max_pages_per_seq));
  for (int32_t p : pages)
    if (page_refs(p) <= 0)
      return Status::Error("share_pages: page " + str(p) +
                           " is not in use, expected a page held by its owner");
  Sequence &seq = seqs_[seq_id];
  for (int32_t p : pages)
    ++page_refs_[p];
  seq.pages = pages;
  seq.length = int64_t(pages.size()) * config_.page_size;
  return Status::Ok();
}

Status KvCacheManager::retain_page(int32_t page) {
  if (page_refs(page) <= 0)
    return Status::Error("retain_page: page " + str(page) +
                         " is not in use (expected a page with references)");
  ++page_refs_[page];
  return Status::Ok();
}

Status KvCacheManager::release_page(int32_t page) {
  if (page_refs(page) <= 0)
    return Status::Error("release_page: page " + str(page) +
                         " has no references to drop");
  if (--page_refs_[page] == 0)
    free_list_.push_back(page);
  return Status::Ok();
}

Status KvCacheManager::advance(int64_t seq_id, int64_t num_tokens) {
  auto it = seqs_.find(seq_id);
  if (it == seqs_.end())
    return Status::Error("advance: unknown sequence " + str(seq_id));
  const int64_t capacity = int64_t(it->second.pages.size()) * config_.page_size;
  const int64_t length = it->second.length + num_tokens;
  if (num_tokens < 0 || length > capacity)
    return Status::Error("advance: sequence " + str(seq_id) + " would hold " +
                         str(length) + " tokens, expected at most the " +
                         str(capacity) + " its pages cover");
  it->second.length = length;
  return Status::Ok();
}

bool KvCacheManager::has_sequence(int64_t seq_id) const {
  return seqs_.count(seq_id) != 0;
}

int64_t KvCacheManager::seq_length(int64_t seq_id) const {
  auto it = seqs_.find(seq_id);
  return it == seqs_.end() ? 0 : it->second.length;
}

const std::vector<int32_t> &
KvCacheManager::block_table(int64_t seq_id) const {
  auto it = seqs_.find(seq_id);
  return it == seqs_.end() ? kEmptyTable : it->second.pages;
}

Status StepBatch::build(KvCacheManager &cache,
                        const std::vector<SeqChunk> &chunks,
                        int64_t vocab_size, bool all_logits) {
  if (chunks.empty())
    return Status::Error("step: expected at least one sequence, found 0");
  std::set<int64_t> seen;
  for (const SeqChunk &c : chunks) {
    if (!seen.insert(c.seq_id).second)
      return Status::Error("step: sequence " + str(c.seq_id) +
                           " appears twice in one step");
    if (c.tokens.empty())
      return Status::Error("step: sequence " + str(c.seq_id) +
                           " has no new tokens");
    for (int32_t tok : c.tokens)
      if (tok < 0 || (vocab_size > 0 && tok >= vocab_size))
        return Status::Error("step: sequence " + str(c.seq_id) + " token id " +
                             str(tok) + " outside [0, " + str(vocab_size) +
                             ")");
  }
  // Check the whole batch first so that a failing step allocates nothing.
  const int64_t page_size = cache.config().page_size;
  int64_t extra_pages = 0;
  for (const SeqChunk &c : chunks) {
    const int64_t total = cache.seq_length(c.seq_id) + int64_t(c.tokens.size());
    extra_pages += std::max<int64_t>(
        0, (total + page_size - 1) / page_size -
               int64_t(cache.block_table(c.seq_id).size()));
  }
  if (extra_pages > cache.free_pages())
    return Status::Error("KV cache pool exhausted: step of " +
                         str(int64_t(chunks.size())) + " sequences requests " +
                         str(extra_pages) + " more pages, " +
                         str(cache.free_pages()) + " available");
  for (const SeqChunk &c : chunks) {
    const int64_t total = cache.seq_length(c.seq_id) + int64_t(c.tokens.size());
    if (Status s = cache.allocate(c.seq_id, total); !s.ok())
      return s;
  }
  const int64_t mpps = cache.config().max_pages_per_seq;
  max_pages_per_seq_ = mpps;
  vocab_size_ = vocab_size;
  seq_ids_.clear();
  tokens_.clear();
  positions_.clear();
  token_seq_.clear();
  seq_token_start_.clear();
  seq_new_len_.clear();
  seq_prefix_len_.clear();
  block_tables_.assign(chunks.size() * mpps, 0);
  for (size_t s = 0; s < chunks.size(); ++s) {
    const SeqChunk &c = chunks[s];
    const int64_t prefix = cache.seq_length(c.seq_id);
    seq_ids_.push_back(c.seq_id);
    seq_token_start_.push_back(int32_t(tokens_.size()));
    seq_new_len_.push_back(int32_t(c.tokens.size()));
    seq_prefix_len_.push_back(int32_t(prefix));
    for (size_t i = 0; i < c.tokens.size(); ++i) {
      tokens_.push_back(c.tokens[i]);
      positions_.push_back(int32_t(prefix + int64_t(i)));
      token_seq_.push_back(int32_t(s));
    }
    const std::vector<int32_t> &table = cache.block_table(c.seq_id);
    std::copy(table.begin(), table.end(), block_tables_.begin() + s * mpps);
  }
  all_logits_ = all_logits;
  logit_rows_.clear();
  for (size_t t = 0; t < tokens_.size(); ++t)
    if (all_logits || t + 1 == tokens_.size() || token_seq_[t + 1] != token_seq_[t])
      logit_rows_.push_back(int32_t(t));
  logits_.assign(logit_rows_.size() * std::max<int64_t>(vocab_size, 0), 0.f);
  return Status::Ok();
}

Status StepBatch::commit(KvCacheManager &cache) const {
  for (size_t s = 0; s < seq_ids_.size(); ++s)
    if (Status st = cache.advance(seq_ids_[s], seq_new_len_[s]); !st.ok())
      return st;
  return Status::Ok();
}

hyrt_step_v0 *StepBatch::abi() {
  step_.num_tokens = int64_t(tokens_.size());
  step_.num_seqs = int64_t(seq_ids_.size());
  step_.tokens = tokens_.data();
  step_.positions = positions_.data();
  step_.token_seq = token_seq_.data();
  step_.seq_token_start = seq_token_start_.data();
  step_.seq_new_len = seq_new_len_.data();
  step_.seq_prefix_len = seq_prefix_len_.data();
  step_.block_tables = block_tables_.data();
  step_.max_pages_per_seq = max_pages_per_seq_;
  step_.logits = logits_.empty() ? nullptr : logits_.data();
  step_.num_logit_rows = int64_t(logit_rows_.size());
  step_.logit_rows = logit_rows_.data();
  return &step_;
}

bool StepBatch::is_decode() const {
  return !seq_ids_.empty() && tokens_.size() == seq_ids_.size();
}

} // namespace hyrt
