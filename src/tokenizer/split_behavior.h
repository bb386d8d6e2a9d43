#pragma once
// How a Split pre-tokenizer turns regex matches into pieces: the five "behavior" values of
// tokenizers' SplitDelimiterBehavior, plus "invert" (the pattern marks the pieces, not the delimiters).
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace moe::tokenizer {

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// Parses a behavior name; throws moe::Error naming `source` and the accepted names.
SplitBehavior parse_split_behavior(const std::string& name, const std::string& source);

using ByteRange = std::pair<size_t, size_t>;

// The non-empty [begin, end) pieces of a text of `length` bytes, given the matches of the pattern in it.
std::vector<ByteRange> split_pieces(size_t length, const std::vector<ByteRange>& matches,
                                    SplitBehavior behavior, bool invert);

}  // namespace moe::tokenizer
