#include "tokenizer/streaming.h"

#include <algorithm>

#include "common/utf8.h"

namespace moe::tokenizer {

std::string IncrementalDetokenizer::push(int32_t id) {
  if (id >= 0 && !tokenizer_.knows(id)) return "";
  const std::string& bytes = tokenizer_.token_bytes(id);
  if (skip_special_ && tokenizer_.is_special(id)) return "";
  pending_ += bytes;
  std::string text;
  const size_t consumed = append_complete_utf8_lossy(pending_, text);
  pending_.erase(0, consumed);
  return text;
}

std::string IncrementalDetokenizer::finish() {
  std::string text;
  append_utf8_lossy(pending_, text);
  pending_.clear();
  return text;
}

StopStringMatcher::StopStringMatcher(std::vector<std::string> stop_strings, bool include_stop_string)
    : include_stop_string_(include_stop_string) {
  for (std::string& stop : stop_strings)
    if (!stop.empty()) stop_strings_.push_back(std::move(stop));
}

StopScan StopStringMatcher::feed(std::string_view text) {
  StopScan scan;
  if (stopped_) return scan;
  held_ += text;

  size_t best_start = std::string::npos, best_end = std::string::npos, best_index = 0;
  for (size_t i = 0; i < stop_strings_.size(); ++i) {
    const size_t start = held_.find(stop_strings_[i]);
    if (start == std::string::npos) continue;
    const size_t end = start + stop_strings_[i].size();
    if (end < best_end || (end == best_end && start < best_start)) {
      best_start = start;
      best_end = end;
      best_index = i;
    }
  }
  if (best_start != std::string::npos) {
    scan.text = held_.substr(0, include_stop_string_ ? best_end : best_start);
    scan.stopped = stopped_ = true;
    scan.stop_index = best_index;
    scan.stop_offset = sent_bytes_ + best_start;
    held_.clear();
    return scan;
  }
  const size_t ready = held_.size() - partial_stop_length();
  scan.text = held_.substr(0, ready);
  held_.erase(0, ready);
  sent_bytes_ += ready;
  return scan;
}

std::string StopStringMatcher::finish() {
  std::string rest = std::move(held_);
  sent_bytes_ += rest.size();
  held_.clear();
  return rest;
}

size_t StopStringMatcher::partial_stop_length() const {
  size_t longest = 0;
  for (const std::string& stop : stop_strings_) {
    for (size_t length = std::min(stop.size() - 1, held_.size()); length > longest; --length) {
      if (std::string_view(held_).substr(held_.size() - length) == std::string_view(stop).substr(0, length)) {
        longest = length;
        break;
      }
    }
  }
  return longest;
}

}  // namespace moe::tokenizer
