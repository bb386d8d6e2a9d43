#pragma once
// Gives requests their KV slots and takes them back: a prefix hit from the radix cache (when it is
// on), fresh slots from the pool (evicting cached prefixes first when the pool runs dry), and, when a
// request stops running, its computed KV goes to the cache for later requests and the rest is freed.
#include <cstdint>
#include <optional>
#include <span>

#include "scheduler/kv_slot_pool.h"
#include "scheduler/radix_cache.h"
#include "scheduler/request.h"

namespace moe {

class KvManager {
 public:
  KvManager(int64_t capacity, bool enable_prefix_cache);
  KvManager(const KvManager&) = delete;
  KvManager& operator=(const KvManager&) = delete;

  const KvSlotPool& pool() const { return pool_; }
  int64_t cached_tokens() const { return cache_ ? cache_->cached_tokens() : 0; }
  // Slots an allocation could get right now: free ones plus those eviction could free.
  int64_t available() const;

  // Starts request's slot table with the longest cached prefix of all its tokens but the last (that
  // one is always recomputed, so there are logits to sample from), locked, and ending before any
  // position whose prompt logprobs are still to be computed (Request::prefix_limit). Returns the hit length.
  int64_t attach_prefix(Request& request);
  // Appends n fresh slots to request's slot table, evicting if needed; false (nothing taken) if fewer
  // than n are available.
  bool extend(Request& request, int64_t n);
  // Puts request's computed KV into the cache (dropping slots the cache already had for the same
  // tokens) and moves the request's lock there, so others can share it while it still runs.
  void cache_progress(Request& request);
  // Takes back everything request holds (computed KV to the cache when on, the rest to the pool)
  // and resets its slot table.
  void release(Request& request);
  // Evicts every cached prefix no running request uses.
  void flush_cache();
  // Returns slots no request or cached prefix refers to any more (a verify's rejected drafts).
  void free_slots(std::span<const int32_t> slots) { pool_.free(slots); }

 private:
  // Inserts request's computed tokens into the cache and frees its own slots the cache already had.
  void insert_computed(Request& request);

  KvSlotPool pool_;
  std::optional<RadixCache> cache_;  // engaged when the prefix cache is on; refers to pool_
};

}  // namespace moe
