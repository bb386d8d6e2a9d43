#include "api/tag_scanner.h"

#include <algorithm>
#include <utility>

namespace moe::api {

TagSplit TagScanner::feed(std::string_view text) {
  std::string buffer = std::exchange(held_, {});
  buffer += text;
  if (const size_t at = buffer.find(tag_); at != std::string::npos) {
    return {buffer.substr(0, at), buffer.substr(at + tag_.size())};
  }
  // The longest end of `buffer` that is a proper beginning of the tag.
  size_t partial = std::min(tag_.size() - 1, buffer.size());
  while (partial > 0 && buffer.compare(buffer.size() - partial, partial, tag_, 0, partial) != 0) --partial;
  held_ = buffer.substr(buffer.size() - partial);
  buffer.resize(buffer.size() - partial);
  return {std::move(buffer), std::nullopt};
}

std::string TagScanner::release() { return std::exchange(held_, {}); }

}  // namespace moe::api
