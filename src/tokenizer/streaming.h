#pragma once
// A reply's text as it streams out: ids arrive one at a time and their text must go out as it
// grows, without ever splitting a UTF-8 character that spans several byte-level tokens, and cut at
// the first stop string even when one straddles tokens.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

 private:
  Tokenizer tokenizer_;
  bool skip_special_;
  std::string pending_;
};

// Stop strings for streaming replies: a stop string may straddle tokens (and stream chunks), so
// text that could be the beginning of one is held back until it is known not to be (as SGLang and
// vLLM do), and the reply is cut where the first stop string begins.

// What one call to StopStringMatcher::feed found.
struct StopScan {
  std::string text;          // text that may be sent to the client now
  bool stopped = false;      // a stop string was completed: the reply ends after `text`
  size_t stop_index = 0;     // which stop string (index into the constructor's list), when stopped
  size_t stop_offset = 0;    // byte offset in the whole stream where that stop string begins
};

// Scans a stream of text for the first completed stop string. "First" is the occurrence that ends
// earliest (a longer one on a tie), so the result does not depend on how the stream is chunked.
class StopStringMatcher {
 public:
  // Empty stop strings are ignored. include_stop_string keeps the stop string in the emitted text
  // (vLLM's include_stop_str_in_output); the default cuts it off, as OpenAI's API does.
  explicit StopStringMatcher(std::vector<std::string> stop_strings, bool include_stop_string = false);

  // Adds the next piece of the stream. Text after a stop is ignored.
  StopScan feed(std::string_view text);

  // Ends the stream without a stop: returns the text still held back.
  std::string finish();

  bool stopped() const { return stopped_; }

 private:
  // Length of the longest end of held_ that is a proper prefix of a stop string.
  size_t partial_stop_length() const;

  std::vector<std::string> stop_strings_;
  bool include_stop_string_;
  std::string held_;      // unsent text; never contains a whole stop string
  size_t sent_bytes_ = 0; // stream offset of held_[0]
  bool stopped_ = false;
};

}  // namespace moe::tokenizer
