#pragma once
// The "pre_tokenizer" of tokenizer.json: cuts normalized text into the words that BPE encodes one
// by one (Split steps: a Unicode regex and what to do with its matches), and spells them in the
// byte-level alphabet.
#include <array>
#include <cstddef>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace moe::tokenizer {

// The regex engine of the Split pre-tokenizer: PCRE2 in UTF mode with Unicode properties (UCP), so
// \s, \w, \d and \p{..} mean what they mean to Oniguruma in Hugging Face tokenizers, and look-around
// works as written. Patterns are JIT-compiled.

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

// How a Split pre-tokenizer turns regex matches into pieces: the five "behavior" values of
// tokenizers' SplitDelimiterBehavior, plus "invert" (the pattern marks the pieces, not the delimiters).

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// Parses a behavior name; throws moe::Error naming `source` and the accepted names.
SplitBehavior parse_split_behavior(const std::string& name, const std::string& source);

using ByteRange = std::pair<size_t, size_t>;

// The non-empty [begin, end) pieces of a text of `length` bytes, given the matches of the pattern in it.
std::vector<ByteRange> split_pieces(size_t length, const std::vector<ByteRange>& matches,
                                    SplitBehavior behavior, bool invert);

// GPT-2's reversible map between the 256 byte values and 256 printable characters, which lets a
// byte-level BPE vocabulary write any byte string as text (a space becomes "Ġ", a newline "Ċ").

// The byte-level alphabet, built once; both directions are table look-ups.
class ByteLevelAlphabet {
 public:
  static const ByteLevelAlphabet& instance();

  // Appends the alphabet spelling of raw bytes.
  void encode(std::string_view bytes, std::string& out) const;
  // The raw bytes a token spelled in the alphabet stands for, or nullopt when the token holds a
  // character outside the alphabet (such tokens decode to their own UTF-8, as the HF decoder does).
  std::optional<std::string> decode(std::string_view token) const;

 private:
  ByteLevelAlphabet();

  // Every alphabet character is below U+0144 (256 + the 68 bytes that are not printable).
  static constexpr char32_t kCodePointLimit = 0x144;
  std::array<std::string, 256> char_of_byte_;          // UTF-8 of the character standing for a byte
  std::array<int, kCodePointLimit> byte_of_char_{};  // -1 where a code point is not in the alphabet
};

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
