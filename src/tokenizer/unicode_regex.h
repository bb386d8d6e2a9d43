#pragma once
// The regex engine of the Split pre-tokenizer: PCRE2 in UTF mode with Unicode properties (UCP), so
// \s, \w, \d and \p{..} mean what they mean to Oniguruma in Hugging Face tokenizers, and look-around
// works as written. Patterns are JIT-compiled.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace moe::tokenizer {

// A compiled pattern; copies share the compiled code, and matching is thread-safe.
class UnicodeRegex {
 public:
  // Throws moe::Error quoting the pattern, PCRE2's message and the offset it points at.
  explicit UnicodeRegex(const std::string& pattern);

  // [start, end) byte ranges of the successive non-overlapping matches in `text`, which must be
  // valid UTF-8. An empty match right where the previous match ended is skipped (as Oniguruma's
  // iterator does), and the search moves one character past every empty match.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

 private:
  struct Compiled;
  std::string pattern_;
  std::shared_ptr<const Compiled> compiled_;
};

}  // namespace moe::tokenizer
