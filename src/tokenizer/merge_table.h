#pragma once
// The BPE merge look-up, the hottest step of encoding a word the cache has not seen: a flat
// open-addressing table, so a probe costs one cache miss instead of a node chase.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace moe::tokenizer {

// What merging a pair of adjacent tokens gives, and how early the merge applies (lower first).
struct MergeRule {
  uint32_t rank;
  int32_t merged_id;
};

// Maps a pair of token ids to its merge rule. Filled once while loading, then read-only.
class MergeTable {
 public:
  // Sizes the table for `count` pairs; it grows past that, staying at most half full so probe runs
  // stay short.
  explicit MergeTable(size_t count = 0);

  // Sets the rule of a pair; a pair given twice keeps the later rule.
  void insert_or_assign(int32_t left, int32_t right, MergeRule rule);
  // The rule of a pair, or nullptr when the pair never merges.
  const MergeRule* find(int32_t left, int32_t right) const;

 private:
  struct Slot {
    uint64_t key;
    MergeRule rule;
  };
  // Token ids are non-negative int32, so no pair key has all bits set.
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  static uint64_t key_of(int32_t left, int32_t right);
  size_t home_slot(uint64_t key) const;
  // Doubles the capacity and re-inserts every pair.
  void grow();

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace moe::tokenizer
