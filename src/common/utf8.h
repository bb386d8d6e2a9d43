#pragma once
// UTF-8 helpers shared by the tokenizer's encoder (input validation), decoder (lossy output) and
// incremental detokenizer (holding back an unfinished character), and by the Jinja renderer's
// Python str semantics (code points, not bytes).
#include <cstddef>
#include <string>
#include <string_view>

namespace moe {

// U+FFFD as UTF-8: what every invalid byte sequence becomes.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

// What lies at the start of a non-empty byte string.
struct Utf8Sequence {
  size_t length = 0;       // bytes of the character, or of the maximal ill-formed subpart
  bool valid = false;      // a whole well-formed character
  bool truncated = false;  // a valid beginning cut off by the end of the input
};

// Classifies the sequence at bytes[0]; `bytes` must not be empty.
Utf8Sequence scan_utf8_sequence(std::string_view bytes);

// True when every byte sequence in `bytes` is well-formed UTF-8.
bool is_valid_utf8(std::string_view bytes);

// Appends `bytes` to `out`, each maximal ill-formed subpart replaced by one U+FFFD (the Unicode
// "substitution of maximal subparts" practice, which Rust's String::from_utf8_lossy follows).
void append_utf8_lossy(std::string_view bytes, std::string& out);

// Like append_utf8_lossy, but stops before a trailing valid-but-unfinished sequence and returns the
// number of bytes consumed: the rest may still become a character when more bytes arrive.
size_t append_complete_utf8_lossy(std::string_view bytes, std::string& out);

// Decodes the code point of the well-formed sequence of `length` bytes at bytes[0].
char32_t decode_code_point(std::string_view bytes, size_t length);

// Appends the UTF-8 encoding of a code point.
void append_code_point(char32_t code_point, std::string& out);

}  // namespace moe
