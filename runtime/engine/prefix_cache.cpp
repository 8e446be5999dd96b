// Prefix cache: radix tree over page-sized token blocks with LRU eviction
// (see hyrt/engine/prefix_cache.h).
#include "hyrt/engine/prefix_cache.h"

#include <queue>
#include <tuple>

namespace hyrt {

PrefixCache::PrefixCache(KvCacheManager *cache)
    : cache_(cache), page_size_(cache->config().page_size) {}

PrefixCache::~PrefixCache() { clear(); }

std::vector<int32_t> PrefixCache::lookup(const std::vector<int32_t> &tokens,
                                         int64_t max_blocks) const {
  std::vector<int32_t> pages;
  const Node *node = &root_;
  std::vector<int32_t> block;
  for (int64_t b = 0; b < max_blocks && (b + 1) * page_size_ <= int64_t(tokens.size());
       ++b) {
    block.assign(tokens.begin() + b * page_size_, tokens.begin() + (b + 1) * page_size_);
    auto it = node->children.find(block);
    if (it == node->children.end())
      break;
    node = it->second.get();
    pages.push_back(node->page);
  }
  return pages;
}

Status PrefixCache::insert(const std::vector<int32_t> &tokens,
                           const std::vector<int32_t> &pages,
                           int64_t num_blocks) {
  if (num_blocks * page_size_ > int64_t(tokens.size()) ||
      num_blocks > int64_t(pages.size()))
    return Status::Error("prefix cache insert: " + std::to_string(num_blocks) +
                         " blocks of " + std::to_string(page_size_) +
                         " tokens, but only " + std::to_string(tokens.size()) +
                         " tokens on " + std::to_string(pages.size()) + " pages");
  const uint64_t now = ++clock_;
  Node *node = &root_;
  for (int64_t b = 0; b < num_blocks; ++b) {
    std::vector<int32_t> block(tokens.begin() + b * page_size_,
                               tokens.begin() + (b + 1) * page_size_);
    auto it = node->children.find(block);
    if (it == node->children.end()) {
      if (Status s = cache_->retain_page(pages[b]); !s.ok())
        return s;
      auto child = std::make_unique<Node>();
      child->parent = node;
      child->block = block;
      child->page = pages[b];
      it = node->children.emplace(std::move(block), std::move(child)).first;
      ++num_nodes_;
    } else if (it->second->page != pages[b]) {
      break;
    }
    node = it->second.get();
    node->last_used = now;
  }
  return Status::Ok();
}

bool PrefixCache::evictable(const Node &n) const {
  return cache_->page_refs(n.page) == 1;
}

int64_t PrefixCache::evictable_pages() const {
  int64_t count = 0;
  std::vector<const Node *> stack = {&root_};
  while (!stack.empty()) {
    const Node *n = stack.back();
    stack.pop_back();
    for (const auto &[key, child] : n->children) {
      count += evictable(*child) ? 1 : 0;
      stack.push_back(child.get());
    }
  }
  return count;
}

int64_t PrefixCache::evict(int64_t pages) {
  // Min-heap of evictable leaves by last use; a parent whose last child
  // goes becomes a leaf and joins the heap.
  using Entry = std::pair<uint64_t, Node *>;
  auto later = [](const Entry &a, const Entry &b) { return a.first > b.first; };
  std::priority_queue<Entry, std::vector<Entry>, decltype(later)> leaves(later);
  std::vector<Node *> stack = {&root_};
  while (!stack.empty()) {
    Node *n = stack.back();
    stack.pop_back();
    for (auto &[key, child] : n->children) {
      if (child->children.empty() && evictable(*child))
        leaves.push({child->last_used, child.get()});
      stack.push_back(child.get());
    }
  }
  int64_t freed = 0;
  while (freed < pages && !leaves.empty()) {
    Node *leaf = leaves.top().second;
    leaves.pop();
    Node *parent = leaf->parent;
    (void)cache_->release_page(leaf->page); // the cache's own reference
    parent->children.erase(leaf->block);     // destroys leaf
    --num_nodes_;
    ++freed;
    ++evicted_;
    if (parent != &root_ && parent->children.empty() && evictable(*parent))
      leaves.push({parent->last_used, parent});
  }
  return freed;
}

void PrefixCache::release_subtree(Node &n) {
  for (auto &[key, child] : n.children) {
    release_subtree(*child);
    (void)cache_->release_page(child->page);
  }
  n.children.clear();
}

void PrefixCache::clear() {
  release_subtree(root_);
  num_nodes_ = 0;
}

} // namespace hyrt
