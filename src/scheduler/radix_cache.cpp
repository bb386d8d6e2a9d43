#include "scheduler/radix_cache.h"

#include <algorithm>
#include <queue>
#include <stdexcept>
#include <unordered_map>

namespace moe {

// One edge of the tree and the node it leads to.
struct RadixCache::Node {
  std::vector<int32_t> tokens;  // the edge from parent to this node
  std::vector<int32_t> slots;   // KV slot of each token on the edge
  std::unordered_map<int32_t, std::unique_ptr<Node>> children;  // keyed by their first token
  Node* parent = nullptr;
  int lock_count = 0;
  uint64_t last_access = 0;

  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
};

namespace {

// How many leading tokens a and b share.
size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

RadixCache::RadixCache(KvSlotPool& pool) : pool_(pool), root_(std::make_unique<Node>()) {}

RadixCache::~RadixCache() = default;

void RadixCache::touch(Node* node) {
  node->last_access = ++clock_;
}

// The new head node takes the first part of the edge and becomes node's parent.
RadixCache::Node* RadixCache::split(Node* node, size_t keep) {
  auto head = std::make_unique<Node>();
  head->tokens.assign(node->tokens.begin(), node->tokens.begin() + keep);
  head->slots.assign(node->slots.begin(), node->slots.begin() + keep);
  head->parent = node->parent;
  head->lock_count = node->lock_count;  // every lock through node also runs through its new parent
  head->last_access = node->last_access;
  node->tokens.erase(node->tokens.begin(), node->tokens.begin() + keep);
  node->slots.erase(node->slots.begin(), node->slots.begin() + keep);

  auto& slot_in_parent = node->parent->children[head->tokens[0]];
  std::unique_ptr<Node> tail = std::move(slot_in_parent);
  tail->parent = head.get();
  Node* head_ptr = head.get();
  head->children[tail->tokens[0]] = std::move(tail);
  slot_in_parent = std::move(head);
  return head_ptr;
}

RadixCache::Match RadixCache::match_prefix(std::span<const int32_t> tokens) {
  Match match;
  Node* node = root_.get();
  size_t pos = 0;
  while (pos < tokens.size()) {
    auto it = node->children.find(tokens[pos]);
    if (it == node->children.end()) break;
    Node* child = it->second.get();
    const size_t common = common_prefix(child->tokens, tokens.subspan(pos));
    const bool ends_inside_edge = common < child->tokens.size();
    if (ends_inside_edge) child = split(child, common);
    touch(child);
    match.slots.insert(match.slots.end(), child->slots.begin(), child->slots.end());
    node = child;
    pos += common;
    if (ends_inside_edge) break;
  }
  match.node = node;
  return match;
}

size_t RadixCache::insert(std::span<const int32_t> tokens, std::span<const int32_t> slots) {
  if (tokens.size() != slots.size()) throw std::logic_error("RadixCache::insert: one slot per token");
  Node* node = root_.get();
  size_t pos = 0;
  while (pos < tokens.size()) {
    auto it = node->children.find(tokens[pos]);
    if (it == node->children.end()) {
      auto leaf = std::make_unique<Node>();
      leaf->tokens.assign(tokens.begin() + pos, tokens.end());
      leaf->slots.assign(slots.begin() + pos, slots.end());
      leaf->parent = node;
      touch(leaf.get());
      cached_tokens_ += leaf->size();
      evictable_tokens_ += leaf->size();
      node->children[tokens[pos]] = std::move(leaf);
      return pos;
    }
    Node* child = it->second.get();
    const size_t common = common_prefix(child->tokens, tokens.subspan(pos));
    if (common < child->tokens.size()) child = split(child, common);
    touch(child);
    node = child;
    pos += common;
  }
  return pos;
}

void RadixCache::lock(Node* node) {
  for (; node != nullptr && node != root_.get(); node = node->parent) {
    if (node->lock_count++ == 0) evictable_tokens_ -= node->size();
  }
}

void RadixCache::unlock(Node* node) {
  for (; node != nullptr && node != root_.get(); node = node->parent) {
    if (node->lock_count <= 0) throw std::logic_error("RadixCache::unlock: node is not locked");
    if (--node->lock_count == 0) evictable_tokens_ += node->size();
  }
}

int64_t RadixCache::evict(int64_t num_tokens) {
  auto older = [](const Node* a, const Node* b) { return a->last_access > b->last_access; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(older)> leaves(older);
  std::vector<Node*> stack{root_.get()};
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (auto& [first, child] : node->children) stack.push_back(child.get());
    if (node != root_.get() && node->children.empty() && node->lock_count == 0) leaves.push(node);
  }

  int64_t freed = 0;
  while (freed < num_tokens && !leaves.empty()) {
    Node* leaf = leaves.top();
    leaves.pop();
    pool_.free(leaf->slots);
    freed += leaf->size();
    cached_tokens_ -= leaf->size();
    evictable_tokens_ -= leaf->size();
    Node* parent = leaf->parent;
    parent->children.erase(leaf->tokens[0]);  // destroys leaf
    if (parent != root_.get() && parent->children.empty() && parent->lock_count == 0) leaves.push(parent);
  }
  return freed;
}

}  // namespace moe
