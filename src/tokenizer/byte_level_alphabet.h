#pragma once
// GPT-2's reversible map between the 256 byte values and 256 printable characters, which lets a
// byte-level BPE vocabulary write any byte string as text (a space becomes "Ġ", a newline "Ċ").
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace moe::tokenizer {

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

}  // namespace moe::tokenizer
