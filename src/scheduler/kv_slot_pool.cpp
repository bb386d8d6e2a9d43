#include "scheduler/kv_slot_pool.h"

#include <stdexcept>
#include <string>

#include "common/error.h"

namespace moe {

KvSlotPool::KvSlotPool(int64_t capacity) : capacity_(capacity) {
  if (capacity < 1) throw Error("the KV slot pool needs at least one slot, got " + std::to_string(capacity));
  in_use_.assign(static_cast<size_t>(capacity + 1), false);
  in_use_[kPaddingSlot] = true;
  free_.reserve(static_cast<size_t>(capacity));
  // Pushed in reverse so that the first allocations hand out 1, 2, 3, ... (easier to read in logs).
  for (int64_t slot = capacity; slot >= 1; --slot) free_.push_back(static_cast<int32_t>(slot));
}

std::optional<std::vector<int32_t>> KvSlotPool::alloc(int64_t n) {
  if (n < 0 || n > num_free()) return std::nullopt;
  std::vector<int32_t> slots(free_.end() - n, free_.end());
  free_.resize(free_.size() - static_cast<size_t>(n));
  for (int32_t slot : slots) in_use_[slot] = true;
  return slots;
}

void KvSlotPool::free(std::span<const int32_t> slots) {
  for (int32_t slot : slots) {
    if (slot <= kPaddingSlot || slot > capacity_ || !in_use_[slot])
      throw std::logic_error("KvSlotPool::free: slot " + std::to_string(slot) + " is not allocated");
    in_use_[slot] = false;
    free_.push_back(slot);
  }
}

}  // namespace moe
