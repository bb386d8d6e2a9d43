#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <bit>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/utf8.h"
#include "tokenizer/pre_tokenizer.h"

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

bool WordCache::append_cached(std::string_view word, std::vector<int32_t>& out) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(word);
  if (it == entries_.end()) return false;
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

void WordCache::insert(std::string_view word, const int32_t* ids, size_t count) {
  std::lock_guard lock(mutex_);
  if (entries_.size() >= capacity_) entries_.clear();
  entries_.try_emplace(std::string(word), ids, ids + count);
}

namespace {

// The bound on vocabulary ids: 16.7 million, some 60 times the largest published vocabulary.
constexpr int64_t kMaxTokenId = int64_t{1} << 24;

// Words seen recently enough to be worth remembering; a cache entry is small.
constexpr size_t kWordCacheCapacity = 1 << 16;
// Longer words are rare and would crowd the cache (tokenizers uses the same limit).
constexpr size_t kLongestCachedWord = 256;

// A merge entry as its two halves: "a b" (older files) or ["a", "b"] (tokenizers >= 0.20).
std::pair<std::string, std::string> merge_halves(const nlohmann::json& entry, const std::string& source) {
  if (entry.is_array() && entry.size() == 2) return {entry[0].get<std::string>(), entry[1].get<std::string>()};
  if (entry.is_string()) {
    const std::string text = entry.get<std::string>();
    const size_t space = text.find(' ');
    if (space != std::string::npos && text.find(' ', space + 1) == std::string::npos)
      return {text.substr(0, space), text.substr(space + 1)};
  }
  throw Error(source + ": bad merge " + entry.dump() + " (expected \"a b\" or [\"a\", \"b\"])");
}

// One symbol of a word being merged: a token id in a doubly linked list over the word.
struct Symbol {
  int32_t id;
  int prev, next;
  bool merged_away = false;
};

// A candidate merge of the symbol at `position` with its right neighbour.
struct Candidate {
  uint32_t rank;
  int position;
  int32_t merged_id;
  // Heaps pop the largest: make the lowest rank, then the leftmost, the largest.
  bool operator<(const Candidate& other) const {
    return rank != other.rank ? rank > other.rank : position > other.position;
  }
};

}  // namespace

BpeModel BpeModel::from_json(const nlohmann::json& model, const std::string& source) {
  BpeModel bpe;
  // get_ref refuses a vocabulary that is not an object (items() would iterate a string's value).
  for (const auto& [token, id] : model.at("vocab").get_ref<const nlohmann::json::object_t&>()) {
    // Ids index the tokenizer's per-id tables: one of 2^30 would ask for gigabytes (found by
    // fuzz_tokenizer_json); no published vocabulary comes near the bound.
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= kMaxTokenId)
      throw Error(source + ": token '" + token + "' has id " + id.dump() + "; ids must be integers in [0, " +
                  std::to_string(kMaxTokenId) + ")");
    bpe.vocab_.emplace(token, id.get<int32_t>());
  }
  auto id_of = [&](const std::string& token, const nlohmann::json& entry) {
    auto it = bpe.vocab_.find(token);
    if (it == bpe.vocab_.end())
      throw Error(source + ": merge " + entry.dump() + " uses '" + token + "', which is not in the vocabulary");
    return it->second;
  };
  const nlohmann::json& merges = model.at("merges");
  bpe.merges_ = MergeTable(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto [left, right] = merge_halves(merges[rank], source);
    const int32_t left_id = id_of(left, merges[rank]), right_id = id_of(right, merges[rank]);
    // A repeated pair takes its last rank, as tokenizers' map building does.
    bpe.merges_.insert_or_assign(left_id, right_id,
                                 MergeRule{static_cast<uint32_t>(rank), id_of(left + right, merges[rank])});
  }
  for (int byte = 0; byte < 256; ++byte) {
    std::string character;
    ByteLevelAlphabet::instance().encode(std::string(1, static_cast<char>(byte)), character);
    if (!bpe.vocab_.contains(character))
      throw Error(source + ": the vocabulary has no token for byte " + std::to_string(byte) + " ('" + character +
                  "'); only byte-level BPE vocabularies are supported");
  }
  const auto ignore_merges = model.find("ignore_merges");
  bpe.ignore_merges_ = ignore_merges != model.end() && ignore_merges->is_boolean() && ignore_merges->get<bool>();
  bpe.cache_ = std::make_unique<WordCache>(kWordCacheCapacity);
  return bpe;
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    if (auto id = token_to_id(word)) {
      out.push_back(*id);
      return;
    }
  }
  if (cache_->append_cached(word, out)) return;
  const size_t first = out.size();
  merge_word(word, out);
  if (word.size() < kLongestCachedWord) cache_->insert(word, out.data() + first, out.size() - first);
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  // Scratch reused across words: a miss then allocates nothing.
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> queue;
  symbols.clear();
  queue.clear();
  for (size_t pos = 0; pos < word.size();) {
    const size_t length = scan_utf8_sequence(word.substr(pos)).length;
    auto id = token_to_id(word.substr(pos, length));
    // Words are spelled in the byte-level alphabet, all of which from_json found in the vocabulary.
    if (!id) throw Error("BPE: character '" + std::string(word.substr(pos, length)) + "' is not in the vocabulary");
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({*id, index - 1, index + 1});
    pos += length;
  }
  symbols.back().next = -1;

  // A binary heap of candidates on `queue` (std::priority_queue cannot reuse a buffer).
  auto push_candidate = [&](int position) {
    const int next = symbols[position].next;
    if (next < 0) return;
    if (const MergeRule* rule = merges_.find(symbols[position].id, symbols[next].id)) {
      queue.push_back({rule->rank, position, rule->merged_id});
      std::push_heap(queue.begin(), queue.end());
    }
  };
  for (int i = 0; i + 1 < static_cast<int>(symbols.size()); ++i) push_candidate(i);

  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end());
    const Candidate top = queue.back();
    queue.pop_back();
    Symbol& left = symbols[top.position];
    // Skip candidates made stale by an earlier merge of either side.
    if (left.merged_away || left.next < 0) continue;
    const MergeRule* rule = merges_.find(left.id, symbols[left.next].id);
    if (!rule || rule->merged_id != top.merged_id) continue;
    Symbol& right = symbols[left.next];
    left.id = top.merged_id;
    right.merged_away = true;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.position;
    if (left.prev >= 0) push_candidate(left.prev);
    push_candidate(top.position);
  }
  for (int i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

}  // namespace moe::tokenizer
