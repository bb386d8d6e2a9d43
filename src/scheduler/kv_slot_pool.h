#pragma once
// The free list of KV-cache token slots (SGLang's token_to_kv_pool allocator). Slot 0 is reserved as
// a padding slot: it is never handed out, so a worker may point padding tokens of a fixed-shape batch
// at it without touching any request's KV. A KvCache for this pool needs num_slots() = capacity + 1.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace moe {

class KvSlotPool {
 public:
  // The slot a worker may write padding tokens to; never allocated.
  static constexpr int32_t kPaddingSlot = 0;

  explicit KvSlotPool(int64_t capacity);

  // Slots usable by requests (excludes the padding slot).
  int64_t capacity() const { return capacity_; }
  // Size of the KV cache this pool indexes into, padding slot included.
  int64_t num_slots() const { return capacity_ + 1; }
  int64_t num_free() const { return static_cast<int64_t>(free_.size()); }
  int64_t num_used() const { return capacity_ - num_free(); }

  // n distinct free slots, or nullopt (and nothing taken) when fewer than n are free.
  std::optional<std::vector<int32_t>> alloc(int64_t n);
  // Returns slots to the pool; freeing a slot that is not allocated is a logic error (throws).
  void free(std::span<const int32_t> slots);

 private:
  int64_t capacity_;
  std::vector<int32_t> free_;   // a stack: recently freed slots are reused first
  std::vector<bool> in_use_;    // [num_slots], catches double frees
};

}  // namespace moe
