// Helpers for the reference-kernel tests: random data and a small paged KV
// cache built by hand (independent of the hyrt cache manager).
#pragma once

#include "hyrt/abi.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace hyrt_test {

/// Uniform values in [lo, hi) from a fixed seed.
inline std::vector<float> random_vec(size_t n, uint32_t seed, float lo = -1.f,
                                     float hi = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// A paged cache with a deliberately scrambled page assignment, plus a step
/// description for a batch of sequences.
struct PagedSetup {
  int64_t page_size, num_kv_heads, k_dim, v_dim, max_pages;
  std::vector<std::vector<float>> k_pool, v_pool; // one per layer
  std::vector<void *> k_ptrs, v_ptrs;
  std::vector<int32_t> block_tables; // [S][max_pages]
  hyrt_kv_cache_v0 kv{};
  PagedSetup(const PagedSetup &) = delete;
  PagedSetup &operator=(const PagedSetup &) = delete;

  PagedSetup(int64_t num_layers, int64_t num_seqs, int64_t page_size,
             int64_t max_pages, int64_t hkv, int64_t dk, int64_t dv)
      : page_size(page_size), num_kv_heads(hkv), k_dim(dk), v_dim(dv),
        max_pages(max_pages) {
    const int64_t num_pages = num_seqs * max_pages + 3;
    // Page ids: a fixed permutation, so seq s page j is never s*max+j.
    std::vector<int32_t> perm(num_pages);
    std::iota(perm.begin(), perm.end(), 0);
    std::mt19937 gen(1234);
    std::shuffle(perm.begin(), perm.end(), gen);
    block_tables.assign(num_seqs * max_pages, 0);
    for (int64_t i = 0; i < num_seqs * max_pages; ++i)
      block_tables[i] = perm[i];
    for (int64_t l = 0; l < num_layers; ++l) {
      k_pool.emplace_back(num_pages * page_size * hkv * dk, -7.f);
      v_pool.emplace_back(dv ? num_pages * page_size * hkv * dv : 0, -7.f);
    }
    for (int64_t l = 0; l < num_layers; ++l) {
      k_ptrs.push_back(k_pool[l].data());
      v_ptrs.push_back(dv ? v_pool[l].data() : nullptr);
    }
    kv.num_layers = num_layers;
    kv.num_pages = num_pages;
    kv.page_size = page_size;
    kv.num_kv_heads = hkv;
    kv.k_head_dim = dk;
    kv.v_head_dim = dv;
    kv.k_layers = k_ptrs.data();
    kv.v_layers = v_ptrs.data();
  }
};

/// Step arrays for sequences with given prefix and new lengths.
struct StepSetup {
  std::vector<int32_t> tokens, positions, token_seq, start, new_len, prefix;
  hyrt_step_v0 step{};
  StepSetup(const StepSetup &) = delete;
  StepSetup &operator=(const StepSetup &) = delete;

  StepSetup(const std::vector<int32_t> &prefix_len,
            const std::vector<int32_t> &new_lens, const PagedSetup &cache)
      : new_len(new_lens), prefix(prefix_len) {
    for (size_t s = 0; s < new_lens.size(); ++s) {
      start.push_back(int32_t(tokens.size()));
      for (int32_t i = 0; i < new_lens[s]; ++i) {
        tokens.push_back(0);
        positions.push_back(prefix_len[s] + i);
        token_seq.push_back(int32_t(s));
      }
    }
    step.num_tokens = int64_t(tokens.size());
    step.num_seqs = int64_t(new_lens.size());
    step.tokens = tokens.data();
    step.positions = positions.data();
    step.token_seq = token_seq.data();
    step.seq_token_start = start.data();
    step.seq_new_len = new_len.data();
    step.seq_prefix_len = prefix.data();
    step.block_tables = cache.block_tables.data();
    step.max_pages_per_seq = cache.max_pages;
    step.logits = nullptr;
  }
};

} // namespace hyrt_test
