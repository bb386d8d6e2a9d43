#pragma once
// Finds a tag (such as "</think>") in text that arrives in pieces: a piece may end inside the tag,
// so the scanner holds back the end of the text that could still begin it.
#include <optional>
#include <string>
#include <string_view>

namespace moe::api {

struct TagSplit {
  std::string before;                // text before the tag (or all the text that cannot start it)
  std::optional<std::string> after;  // set once the tag is found: the text after it, not scanned
};

class TagScanner {
 public:
  explicit TagScanner(std::string_view tag) : tag_(tag) {}

  // Scans what is held back plus `text`. After the tag is found the caller decides what comes next.
  TagSplit feed(std::string_view text);
  // The text held back as a possible start of the tag (the output ended there); empties it.
  std::string release();

 private:
  std::string tag_;
  std::string held_;
};

}  // namespace moe::api
