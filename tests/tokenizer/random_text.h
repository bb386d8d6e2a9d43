#pragma once
// Seeded random text for property tests: words of many scripts, emoji with skin tones and ZWJ
// sequences, combining marks, control characters, digits, punctuation, whitespace runs and the
// occasional special token.
#include <random>
#include <string>
#include <vector>

#include "common/utf8.h"

namespace moe::tokenizer::testing {

class RandomText {
 public:
  explicit RandomText(uint32_t seed) : rng_(seed) {}

  // A string of up to `max_pieces` random pieces.
  std::string next(int max_pieces = 12) {
    std::string text;
    const int pieces = uniform(1, max_pieces);
    for (int i = 0; i < pieces; ++i) text += piece();
    return text;
  }

 private:
  int uniform(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }

  std::string code_points(char32_t low, char32_t high, int count) {
    std::string out;
    for (int i = 0; i < count; ++i) append_code_point(static_cast<char32_t>(uniform(low, high)), out);
    return out;
  }

  std::string pick(const std::vector<std::string>& options) { return options[uniform(0, options.size() - 1)]; }

  std::string piece() {
    static const std::vector<std::string> kWords = {"the", "The", " quick", "brown", " fox's", "I'll", "don't",
                                                    "HELLO", "naïve", "über", "straße", "x", "_id", "e-mail"};
    static const std::vector<std::string> kEmoji = {
        "\xF0\x9F\x91\x8D", "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD",                                     // 👍 👍🏽
        "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7",              // 👨‍👩‍👧
        "\xF0\x9F\x8F\xB3\xEF\xB8\x8F\xE2\x80\x8D\xF0\x9F\x8C\x88", "\xF0\x9F\x87\xAF\xF0\x9F\x87\xB5"};  // 🏳️‍🌈 🇯🇵
    static const std::vector<std::string> kSpace = {" ", "  ", "\t", "\n", "\r\n", "\n\n\n", "   \n ",
                                                    "\xC2\xA0", "\xE3\x80\x80", "\xE2\x80\xA8"};
    static const std::vector<std::string> kSpecial = {"<|im_start|>", "<|im_end|>", "<think>", "<|endoftext|>"};
    switch (uniform(0, 13)) {
      case 0: return pick(kWords);
      case 1: return pick(kEmoji);
      case 2: return pick(kSpace);
      case 3: return code_points(0x4E00, 0x9FFF, uniform(1, 6));                          // CJK
      case 4: return code_points(0x0600, 0x06FF, uniform(1, 5));                          // Arabic
      case 5: return code_points(0x0900, 0x097F, uniform(1, 5));                          // Devanagari
      case 6: return code_points(0x0410, 0x044F, uniform(1, 6));                          // Cyrillic
      case 7: return code_points('a', 'z', 1) + code_points(0x0300, 0x036F, uniform(1, 3));  // combining marks
      case 8: return code_points(0x00, 0x1F, uniform(1, 3)) + code_points(0x7F, 0x9F, 1);  // controls
      case 9: return code_points('0', '9', uniform(1, 8));
      case 10: return code_points('!', '/', uniform(1, 3));
      case 11: return code_points(0xAC00, 0xD7A3, uniform(1, 4));                         // Hangul
      case 12: return pick(kSpecial);
      default: {
        // Any scalar value, surrogates excluded.
        char32_t c = static_cast<char32_t>(uniform(0x80, 0x10FFFF));
        if (c >= 0xD800 && c <= 0xDFFF) c -= 0x800;
        return code_points(c, c, 1);
      }
    }
  }

  std::mt19937 rng_;
};

}  // namespace moe::tokenizer::testing
