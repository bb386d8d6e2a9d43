#include "scheduler/kv_manager.h"

#include <algorithm>
#include <span>

namespace moe {

KvManager::KvManager(int64_t capacity, bool enable_prefix_cache) : pool_(capacity) {
  if (enable_prefix_cache) cache_.emplace(pool_);
}

int64_t KvManager::available() const {
  return pool_.num_free() + (cache_ ? cache_->evictable_tokens() : 0);
}

int64_t KvManager::attach_prefix(Request& request) {
  if (!cache_) return 0;
  RadixCache::Match match = cache_->match_prefix(request.tokens(0, request.prefix_limit()));
  cache_->lock(match.node);
  const auto hit = static_cast<int64_t>(match.slots.size());
  request.slot_table = std::move(match.slots);
  request.num_computed = hit;
  request.num_cache_owned = hit;
  request.cache_node = match.node;
  return hit;
}

bool KvManager::extend(Request& request, int64_t n) {
  if (cache_ && pool_.num_free() < n) cache_->evict(n - pool_.num_free());
  std::optional<std::vector<int32_t>> slots = pool_.alloc(n);
  if (!slots) return false;
  request.slot_table.insert(request.slot_table.end(), slots->begin(), slots->end());
  return true;
}

void KvManager::insert_computed(Request& request) {
  const std::span<const int32_t> table(request.slot_table);
  const size_t already_cached = cache_->insert(request.tokens(0, request.num_computed),
                                               table.first(static_cast<size_t>(request.num_computed)));
  // Positions in [num_cache_owned, already_cached) were computed by this request too, but the cache
  // holds the same tokens in other slots (another request inserted them first): ours are duplicates.
  const auto owned = static_cast<size_t>(request.num_cache_owned);
  if (already_cached > owned) pool_.free(table.subspan(owned, already_cached - owned));
}

void KvManager::cache_progress(Request& request) {
  if (!cache_ || request.num_computed == 0) return;
  insert_computed(request);
  RadixCache::Match match = cache_->match_prefix(request.tokens(0, request.num_computed));
  // Where another request cached the same tokens first, the request now reads that copy's slots.
  const auto same = std::mismatch(match.slots.begin(), match.slots.end(), request.slot_table.begin()).first;
  request.slots_rewritten_from(same - match.slots.begin());
  std::copy(match.slots.begin(), match.slots.end(), request.slot_table.begin());
  cache_->lock(match.node);
  cache_->unlock(request.cache_node);
  request.cache_node = match.node;
  request.num_cache_owned = request.num_computed;
}

void KvManager::release(Request& request) {
  const std::span<const int32_t> table(request.slot_table);
  if (cache_) {
    insert_computed(request);
    cache_->unlock(request.cache_node);
    // Slots allocated for a step whose result never came (an abort while the batch was in flight).
    pool_.free(table.subspan(static_cast<size_t>(request.num_computed)));
  } else {
    pool_.free(table);
  }
  request.slot_table.clear();
  request.num_computed = 0;
  request.num_cache_owned = 0;
  request.cache_node = nullptr;
}

void KvManager::flush_cache() {
  if (cache_) cache_->flush();
}

}  // namespace moe
