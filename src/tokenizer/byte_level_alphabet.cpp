#include "tokenizer/byte_level_alphabet.h"

#include "tokenizer/utf8.h"

namespace moe::tokenizer {

const ByteLevelAlphabet& ByteLevelAlphabet::instance() {
  static const ByteLevelAlphabet alphabet;
  return alphabet;
}

ByteLevelAlphabet::ByteLevelAlphabet() {
  byte_of_char_.fill(-1);
  // Printable Latin-1 bytes stand for themselves; the others take U+0100, U+0101, ... in byte order.
  auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE; };
  char32_t next_substitute = 0x100;
  for (int b = 0; b < 256; ++b) {
    const char32_t code_point = printable(b) ? static_cast<char32_t>(b) : next_substitute++;
    append_code_point(code_point, char_of_byte_[b]);
    byte_of_char_[code_point] = b;
  }
}

void ByteLevelAlphabet::encode(std::string_view bytes, std::string& out) const {
  for (unsigned char b : bytes) out.append(char_of_byte_[b]);
}

std::optional<std::string> ByteLevelAlphabet::decode(std::string_view token) const {
  std::string bytes;
  bytes.reserve(token.size());
  for (size_t pos = 0; pos < token.size();) {
    const Utf8Sequence seq = scan_utf8_sequence(token.substr(pos));
    if (!seq.valid) return std::nullopt;
    const char32_t code_point = decode_code_point(token.substr(pos), seq.length);
    if (code_point >= kCodePointLimit || byte_of_char_[code_point] < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(byte_of_char_[code_point]));
    pos += seq.length;
  }
  return bytes;
}

}  // namespace moe::tokenizer
