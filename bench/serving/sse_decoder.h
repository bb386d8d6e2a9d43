#pragma once
// Server-sent events framing, as moe-serve (and SGLang, OpenAI) stream their answers: bytes arrive
// in arbitrary pieces; an event is its `data:` lines, ended by a blank line.
#include <string>
#include <string_view>
#include <vector>

namespace moe::bench {

// Cuts a byte stream into the data of its events, whatever the boundaries of the reads.
class SseDecoder {
 public:
  // Takes the next bytes of the stream and returns the data of every event they complete, in order.
  // Several data lines of one event are joined with '\n'; comments and other fields are skipped.
  std::vector<std::string> feed(std::string_view bytes);

 private:
  // Handles one complete line (without its line ending), appending a finished event to `events`.
  void take_line(std::string_view line, std::vector<std::string>& events);

  std::string partial_line_;  // the bytes after the last line ending seen
  std::string data_;          // the data of the event being read
  bool has_data_ = false;     // the event being read has a data line (possibly empty)
};

}  // namespace moe::bench
