#include "serving/sse_decoder.h"

namespace moe::bench {

std::vector<std::string> SseDecoder::feed(std::string_view bytes) {
  std::vector<std::string> events;
  for (size_t newline = bytes.find('\n'); newline != std::string_view::npos; newline = bytes.find('\n')) {
    partial_line_.append(bytes.substr(0, newline));
    bytes.remove_prefix(newline + 1);
    std::string_view line = partial_line_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    take_line(line, events);
    partial_line_.clear();
  }
  partial_line_.append(bytes);
  return events;
}

void SseDecoder::take_line(std::string_view line, std::vector<std::string>& events) {
  if (line.empty()) {
    if (has_data_) events.push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  const size_t colon = line.find(':');
  if (colon == 0) return;  // a comment (keep-alive pings)
  if (line.substr(0, colon) != "data") return;
  std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (has_data_) data_ += '\n';
  data_.append(value);
  has_data_ = true;
}

}  // namespace moe::bench
