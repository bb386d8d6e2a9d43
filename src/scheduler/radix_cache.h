#pragma once
// The prefix cache: a radix tree over token ids whose edges carry the KV slots of those tokens, so a
// request whose prompt starts like an earlier one reuses that KV instead of recomputing it. A running
// request locks the path it uses; only unlocked leaves are evicted, least recently used first, and
// their slots go back to the pool. The tree owns the slots stored in it.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "scheduler/kv_slot_pool.h"

namespace moe {

class RadixCache {
 public:
  // A tree node; opaque to users, who only pass it back to lock/unlock.
  struct Node;

  // The longest cached prefix of a query: its slots (one per matched token) and the node it ends
  // at, which is what a request locks while it uses those slots.
  struct Match {
    std::vector<int32_t> slots;
    Node* node = nullptr;
  };

  explicit RadixCache(KvSlotPool& pool);
  ~RadixCache();
  RadixCache(const RadixCache&) = delete;
  RadixCache& operator=(const RadixCache&) = delete;

  // Longest cached prefix of `tokens`. A match ending inside an edge splits it, so the returned
  // node covers exactly the matched tokens. Marks the path as recently used.
  Match match_prefix(std::span<const int32_t> tokens);
  // Stores tokens -> slots. Returns how many leading tokens were already cached: the caller's slots
  // for those stay the caller's (free them if they are not the cached ones); the tree takes
  // ownership of slots[returned ..].
  size_t insert(std::span<const int32_t> tokens, std::span<const int32_t> slots);

  // Pins node and its ancestors against eviction; unlock releases one pin. nullptr is a no-op.
  void lock(Node* node);
  void unlock(Node* node);

  // Evicts unlocked leaves, least recently used first, until at least num_tokens slots went back
  // to the pool or nothing evictable is left. Returns the number of slots freed.
  int64_t evict(int64_t num_tokens);
  // Evicts everything that is not locked.
  void flush() { evict(evictable_tokens()); }

  int64_t cached_tokens() const { return cached_tokens_; }
  int64_t evictable_tokens() const { return evictable_tokens_; }

 private:
  // Cuts node's edge after `keep` tokens; returns the new node holding the first part.
  Node* split(Node* node, size_t keep);
  // Marks node as just used, for LRU eviction.
  void touch(Node* node);

  KvSlotPool& pool_;
  std::unique_ptr<Node> root_;
  uint64_t clock_ = 0;            // logical time for LRU; bumped on every access
  int64_t cached_tokens_ = 0;     // tokens stored in the tree
  int64_t evictable_tokens_ = 0;  // of those, tokens in nodes no request locks
};

}  // namespace moe
