// hyrt/engine/kv_cache.h - paged KV cache manager (page pools, free list, per-sequence
// block tables) and the builder of hyrt_step_v0 batches on top of it.
#pragma once

#include "hyrt/abi.h"
#include "hyrt/status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace hyrt {

/// Shape of a paged KV cache (see hyrt_kv_cache_v0 for the layout).
struct KvCacheConfig {
  int64_t num_layers = 0;
  int64_t num_pages = 0;
  int64_t page_size = 0;
  int64_t num_kv_heads = 0;
  int64_t k_head_dim = 0;
  int64_t v_head_dim = 0; ///< 0: no V pools (MLA latent cache)
  int64_t max_pages_per_seq = 0;
  int32_t dtype = HYRT_KV_F32; ///< element type of the pools
  /// Pools of 2 MiB or more start on 2 MiB boundaries with MADV_HUGEPAGE
  /// (attention walks a head's rows page by page across the whole pool:
  /// with 4 KiB pages nearly every cache page is a TLB miss); false asks
  /// for MADV_NOHUGEPAGE.
  bool huge_pages = true;
};

/// Owns page pools (fp32, bf16 or int8 with per-row scale pools) for every
/// layer, the free-page list and the block table of every live sequence.
/// Pages (and their scales) are zeroed when handed out: a reused page must
/// never show a new sequence what a freed one left there.
///
/// Pages are reference counted so that sequences with a common prefix can
/// share full pages (see PrefixCache): a sequence holds one reference on
/// each page of its block table, other owners take theirs with retain_page,
/// and a page returns to the free list when the last reference goes. An
/// int8 page's scale rows are indexed by the page id, so they are shared
/// and freed with it. Shared pages must be full: a sequence only writes at
/// positions >= its length, which lie past every page it was given.
class KvCacheManager {
public:
  /// Validates `config` and allocates the pools (64-byte aligned).
  Status init(const KvCacheConfig &config);

  const KvCacheConfig &config() const { return config_; }

  /// Makes the block table of `seq_id` cover positions [0, num_tokens),
  /// creating the sequence when new. Fails, changing nothing, when the
  /// sequence would need more than max_pages_per_seq pages or the pool has
  /// fewer free pages than requested.
  Status allocate(int64_t seq_id, int64_t num_tokens);

  /// Starts the empty or new sequence `seq_id` on `pages`, full pages held
  /// by some other owner, taking a reference on each: its length becomes
  /// pages.size() * page_size. Fails, changing nothing, when the sequence
  /// already has pages or a page is not in use.
  Status share_pages(int64_t seq_id, const std::vector<int32_t> &pages);

  /// Drops the sequence's reference on each of its pages (pages nobody else
  /// holds return to the pool) and forgets the sequence.
  Status free_sequence(int64_t seq_id);

  /// Takes one more reference on `page`, which must be in use.
  Status retain_page(int32_t page);
  /// Drops one reference on `page`; the last one returns it to the pool.
  Status release_page(int32_t page);
  /// References held on `page` (0: free).
  int32_t page_refs(int32_t page) const {
    return page >= 0 && page < int32_t(page_refs_.size()) ? page_refs_[page] : 0;
  }

  /// Records `num_tokens` more tokens of `seq_id` as present in the cache
  /// (after a step ran); they must fit in its allocated pages.
  Status advance(int64_t seq_id, int64_t num_tokens);

  bool has_sequence(int64_t seq_id) const;
  /// Tokens of `seq_id` whose KV is in the cache (0 for an unknown id).
  int64_t seq_length(int64_t seq_id) const;
  /// Page ids of `seq_id` in position order (empty for an unknown id).
  const std::vector<int32_t> &block_table(int64_t seq_id) const;
  int64_t free_pages() const { return int64_t(free_list_.size()); }
  int64_t num_sequences() const { return int64_t(seqs_.size()); }

  /// The C view passed to artifacts; valid while this manager lives.
  hyrt_kv_cache_v0 *view() { return &view_; }

private:
  struct FreeDeleter {
    void operator()(void *p) const;
  };
  using Pool = std::unique_ptr<unsigned char[], FreeDeleter>;
  struct Sequence {
    std::vector<int32_t> pages;
    int64_t length = 0;
  };
  void zero_page(int32_t page);
  int64_t elemBytes() const {
    return config_.dtype == HYRT_KV_INT8 ? 1 : config_.dtype == HYRT_KV_BF16 ? 2 : 4;
  }

  KvCacheConfig config_;
  std::vector<Pool> k_pools_, v_pools_;
  std::vector<void *> k_ptrs_, v_ptrs_;
  std::vector<Pool> k_scale_pools_, v_scale_pools_; // int8 only
  std::vector<float *> k_scale_ptrs_, v_scale_ptrs_;
  std::vector<int32_t> free_list_; // back() is handed out next
  std::vector<int32_t> page_refs_; // per page; 0 exactly when on free_list_
  std::map<int64_t, Sequence> seqs_;
  hyrt_kv_cache_v0 view_{};
};

/// New tokens of one sequence in a step.
struct SeqChunk {
  int64_t seq_id = 0;
  std::vector<int32_t> tokens;
};

/// Owns the arrays behind a hyrt_step_v0 for one batch step. Extend steps
/// have any number of tokens per sequence; decode steps exactly one.
class StepBatch {
public:
  /// Fills the step for `chunks` (distinct sequences, each with at least one
  /// token), allocating cache pages for prefix + new tokens. Token ids must
  /// lie in [0, vocab_size). Logits are computed for every token when
  /// `all_logits`, else only for the last token of each sequence (the one to
  /// sample from): [rows][vocab_size] floats.
  Status build(KvCacheManager &cache, const std::vector<SeqChunk> &chunks,
               int64_t vocab_size, bool all_logits = true);
  /// Marks this step's tokens as cached (call after the artifact ran).
  Status commit(KvCacheManager &cache) const;

  /// The C view; pointers refer to this object's arrays.
  hyrt_step_v0 *abi();
  /// True when every sequence has exactly one new token.
  bool is_decode() const;
  int64_t num_tokens() const { return int64_t(tokens_.size()); }
  /// Logits rows computed by the step (every token, or one per sequence).
  int64_t num_logit_rows() const { return int64_t(logit_rows_.size()); }
  /// Logits row r (of token logit_rows[r]).
  const float *logits(int64_t r) const { return &logits_[r * vocab_size_]; }
  /// Row of the last token of sequence s (the one to sample from).
  const float *last_logits(int64_t s) const {
    const int32_t last = seq_token_start_[s] + seq_new_len_[s] - 1;
    return logits(all_logits_ ? last : s);
  }

private:
  std::vector<int64_t> seq_ids_;
  std::vector<int32_t> tokens_, positions_, token_seq_, seq_token_start_,
      seq_new_len_, seq_prefix_len_, block_tables_, logit_rows_;
  std::vector<float> logits_;
  int64_t vocab_size_ = 0, max_pages_per_seq_ = 0;
  bool all_logits_ = true;
  hyrt_step_v0 step_{};
};

} // namespace hyrt
