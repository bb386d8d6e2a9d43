#pragma once
// Streaming detokenization: a reply's ids arrive one at a time and its text must go out as it
// grows, without ever splitting a UTF-8 character that spans several byte-level tokens.
#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace moe::tokenizer {

// Turns ids into text piece by piece. Everything push() and finish() return, concatenated, equals
// Tokenizer::decode of all the ids with the same skip_special (the ByteLevel decoder is a
// concatenation of token bytes, so only a trailing unfinished character needs holding back).
class IncrementalDetokenizer {
 public:
  IncrementalDetokenizer(Tokenizer tokenizer, bool skip_special)
      : tokenizer_(std::move(tokenizer)), skip_special_(skip_special) {}

  // Adds one id and returns the text that is now complete (often empty mid-character). Ill-formed
  // bytes become U+FFFD as soon as they cannot start a character. An id the tokenizer does not know
  // adds nothing, as in Tokenizer::decode; a negative id is a moe::Error.
  std::string push(int32_t id);

  // Ends the stream: bytes of a character that never finished come out as U+FFFD, as decode gives.
  std::string finish();

  // Bytes held back because they may be the start of a character.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  Tokenizer tokenizer_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace moe::tokenizer
