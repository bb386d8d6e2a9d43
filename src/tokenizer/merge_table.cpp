#include "tokenizer/merge_table.h"

#include <bit>

namespace moe::tokenizer {

MergeTable::MergeTable(size_t count) {
  const size_t capacity = std::bit_ceil(2 * count + 2);
  slots_.assign(capacity, Slot{kEmpty, {}});
  mask_ = capacity - 1;
}

uint64_t MergeTable::key_of(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

size_t MergeTable::home_slot(uint64_t key) const {
  // Fibonacci hashing: multiply, keep the high bits.
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask_;
}

void MergeTable::insert_or_assign(int32_t left, int32_t right, MergeRule rule) {
  if (2 * (size_ + 1) > slots_.size()) grow();
  const uint64_t key = key_of(left, right);
  for (size_t i = home_slot(key);; i = (i + 1) & mask_) {
    if (slots_[i].key == kEmpty) ++size_;
    if (slots_[i].key == key || slots_[i].key == kEmpty) {
      slots_[i] = {key, rule};
      return;
    }
  }
}

void MergeTable::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(2 * old.size(), Slot{kEmpty, {}});
  mask_ = slots_.size() - 1;
  size_ = 0;
  for (const Slot& slot : old)
    if (slot.key != kEmpty)
      insert_or_assign(static_cast<int32_t>(slot.key >> 32), static_cast<int32_t>(slot.key & 0xFFFFFFFF), slot.rule);
}

const MergeRule* MergeTable::find(int32_t left, int32_t right) const {
  const uint64_t key = key_of(left, right);
  for (size_t i = home_slot(key);; i = (i + 1) & mask_) {
    if (slots_[i].key == key) return &slots_[i].rule;
    if (slots_[i].key == kEmpty) return nullptr;
  }
}

}  // namespace moe::tokenizer
