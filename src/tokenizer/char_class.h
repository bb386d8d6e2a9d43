#pragma once
// Unicode character classes that added-token matching needs: Rust's char::is_whitespace (lstrip,
// rstrip) and the regex class \w (single_word boundaries).
namespace moe::tokenizer {

// The Unicode White_Space property.
bool is_white_space(char32_t code_point);

// Unicode \w: letters, marks, decimal digits, connector punctuation and the join controls.
bool is_word_character(char32_t code_point);

}  // namespace moe::tokenizer
