#pragma once
// The "model" of tokenizer.json for byte-level BPE: the vocabulary, the merges ranked by their
// order in the file, and the merge loop that turns one pre-tokenized word into ids; with the
// look-up structures that keep encoding fast (string_view-keyed maps, a flat merge table, a word
// cache).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace moe::tokenizer {

// A hash map keyed by std::string that can be searched with a std::string_view without building a
// string: the tokenizer looks up slices of its input millions of times.

// Hashes std::string and std::string_view alike (is_transparent enables heterogeneous find).
struct TransparentStringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

template <class Value>
using StringMap = std::unordered_map<std::string, Value, TransparentStringHash, std::equal_to<>>;

// The BPE merge look-up, the hottest step of encoding a word the cache has not seen: a flat
// open-addressing table, so a probe costs one cache miss instead of a node chase.

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

// The encoder's hot path: most words of a text were seen before, so their BPE ids are remembered.

// A thread-safe map from a pre-tokenized word to its ids, bounded in size: when full it starts over,
// so a long-running server keeps the words of its current traffic.
class WordCache {
 public:
  explicit WordCache(size_t capacity) : capacity_(capacity) {}

  // Appends the cached ids of `word` to `out` and returns true, or returns false on a miss.
  bool append_cached(std::string_view word, std::vector<int32_t>& out) const;
  void insert(std::string_view word, const int32_t* ids, size_t count);

 private:
  size_t capacity_;
  mutable std::mutex mutex_;
  StringMap<std::vector<int32_t>> entries_;
};

// Encodes words by applying the lowest-ranked applicable merge first, as tokenizers' BPE does.
class BpeModel {
 public:
  // Reads a model of type BPE: "vocab", "merges" ("a b" strings or [a, b] pairs), "ignore_merges".
  // Throws moe::Error naming `source` for a merge outside the vocabulary, or a vocabulary missing one
  // of the 256 byte-level characters (then it is not a byte-level BPE).
  static BpeModel from_json(const nlohmann::json& model, const std::string& source);

  // Appends the ids of one pre-tokenized word spelled in the byte-level alphabet (cached).
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  const StringMap<int32_t>& vocab() const { return vocab_; }

 private:
  BpeModel() = default;
  // The merge loop itself, for a word the cache does not hold.
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;

  StringMap<int32_t> vocab_;
  MergeTable merges_;
  bool ignore_merges_ = false;
  std::unique_ptr<WordCache> cache_;
};

}  // namespace moe::tokenizer
