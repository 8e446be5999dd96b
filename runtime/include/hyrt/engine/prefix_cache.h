// hyrt/engine/prefix_cache.h - radix tree over page-sized token blocks whose nodes
// hold references on full KV pages, so that requests sharing a prompt prefix
// reuse its pages instead of recomputing them; unreferenced blocks are
// evicted least recently used, leaves first.
#pragma once

#include "hyrt/engine/kv_cache.h"
#include "hyrt/status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace hyrt {

/// Cached KV pages keyed by the tokens of the whole prefix they complete.
///
/// A node is one page_size block of tokens; its path from the root spells
/// the prefix, so equal blocks after different prefixes are different
/// nodes (their KV differs). Each node holds one reference on its page
/// (KvCacheManager::retain_page); sequences hold their own. A sequence that
/// holds a node's page holds the pages of all its ancestors too (it either
/// matched the path or computed it and inserted it), so a node whose page
/// only the cache holds has no descendant in use: it and its subtree can be
/// evicted, leaves first.
///
/// Not thread-safe: the scheduler's stepping thread owns it.
class PrefixCache {
public:
  /// `cache` must outlive this; its pages are referenced until clear().
  explicit PrefixCache(KvCacheManager *cache);
  ~PrefixCache();
  PrefixCache(const PrefixCache &) = delete;
  PrefixCache &operator=(const PrefixCache &) = delete;

  /// Pages of the longest cached prefix of `tokens` in whole blocks, at most
  /// `max_blocks` of them, in position order. Changes nothing (the caller
  /// touches them with insert once it uses them).
  std::vector<int32_t> lookup(const std::vector<int32_t> &tokens,
                              int64_t max_blocks) const;

  /// Records the first `num_blocks` full blocks of `tokens`, whose KV lies
  /// in `pages` (the sequence's block table), and marks the path used now.
  /// Blocks already cached on other pages end the walk: the sequence keeps
  /// its own copies private, and nothing below them is recorded (that would
  /// hang a page it holds below one it does not).
  Status insert(const std::vector<int32_t> &tokens,
                const std::vector<int32_t> &pages, int64_t num_blocks);

  /// Frees up to `pages` pages that only the cache holds, least recently
  /// used leaves first; returns how many it freed.
  int64_t evict(int64_t pages);
  /// Drops every node; pages still used by sequences stay with them.
  void clear();

  /// Pages the cache references.
  int64_t cached_pages() const { return num_nodes_; }
  /// Pages only the cache references: what evict could free.
  int64_t evictable_pages() const;
  /// Pages evict has freed so far.
  int64_t evicted_pages() const { return evicted_; }

private:
  struct Node {
    Node *parent = nullptr;
    std::vector<int32_t> block; ///< key in parent->children
    int32_t page = -1;
    uint64_t last_used = 0;
    std::map<std::vector<int32_t>, std::unique_ptr<Node>> children;
  };
  bool evictable(const Node &n) const;
  void release_subtree(Node &n);

  KvCacheManager *cache_;
  int64_t page_size_;
  Node root_;
  int64_t num_nodes_ = 0;
  int64_t evicted_ = 0;
  uint64_t clock_ = 0;
};

} // namespace hyrt
