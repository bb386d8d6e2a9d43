#pragma once
// The "pre_tokenizer" of tokenizer.json: cuts normalized text into the words that BPE encodes one
// by one, and spells them in the byte-level alphabet.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tokenizer/split_behavior.h"
#include "tokenizer/unicode_regex.h"

namespace moe::tokenizer {

// A Split pre-tokenizer (and the word regex of ByteLevel with use_regex).
struct RegexSplitStep {
  UnicodeRegex regex;
  SplitBehavior behavior;
  bool invert;
};

// ByteLevel's add_prefix_space: a word that does not start with a space gets one.
struct PrefixSpaceStep {};

// ByteLevel's final step: every byte of a word becomes its alphabet character.
struct ByteLevelSpellingStep {};

using PreTokenizerStep = std::variant<RegexSplitStep, PrefixSpaceStep, ByteLevelSpellingStep>;

// The pre-tokenizer pipeline, each step applied to every word the previous step produced.
class PreTokenizer {
 public:
  // Reads the "pre_tokenizer" value: Split, ByteLevel or a Sequence of them, which must include a
  // ByteLevel (this is a byte-level BPE tokenizer). Throws moe::Error naming `source` otherwise.
  static PreTokenizer from_json(const nlohmann::json& spec, const std::string& source);

  // Appends the words of `text` (valid UTF-8), spelled in the byte-level alphabet, to `words`.
  void split(std::string_view text, std::vector<std::string>& words) const;

 private:
  std::vector<PreTokenizerStep> steps_;
};

}  // namespace moe::tokenizer
