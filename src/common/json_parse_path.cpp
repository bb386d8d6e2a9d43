#include "common/json_parse_path.h"

namespace moe {

std::string JsonParsePath::str(std::string_view prefix, size_t levels, size_t key_bytes) const {
  std::string path(prefix);
  for (size_t level = 0; level < open_.size() && level < levels; ++level) {
    const OpenContainer& c = open_[level];
    if (c.is_array) {
      path += '[';
      path += std::to_string(c.index);
      path += ']';
    } else {
      if (!path.empty()) path += '.';
      path += c.key.substr(0, key_bytes);
    }
  }
  if (open_.size() > levels) path += "...";
  return path;
}

}  // namespace moe
