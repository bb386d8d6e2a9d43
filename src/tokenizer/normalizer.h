#pragma once
// The "normalizer" of tokenizer.json: the Unicode normalization applied to text before it is split
// into words (NFC for Qwen; none for Llama-3 and GPT-2).
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace moe::tokenizer {

// A chain of Unicode normalization forms run through utf8proc; an empty chain changes nothing.
class Normalizer {
 public:
  // Reads the "normalizer" value: null, {"type": "NFC" | "NFD" | "NFKC" | "NFKD"} or a "Sequence" of
  // those. Anything else throws moe::Error naming `source` and the supported types.
  static Normalizer from_json(const nlohmann::json& spec, const std::string& source);

  // Normalizes valid UTF-8 text.
  std::string normalize(std::string_view text) const;

 private:
  std::vector<int> forms_;  // utf8proc option sets, applied in order
};

}  // namespace moe::tokenizer
