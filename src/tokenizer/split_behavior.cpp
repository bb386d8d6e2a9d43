#include "tokenizer/split_behavior.h"

#include "common/error.h"

namespace moe::tokenizer {
namespace {

// One stretch of the text and whether the pattern matched it.
struct Stretch {
  ByteRange range;
  bool is_match;
};

// The text cut into alternating matched and unmatched stretches, in order, covering every byte.
std::vector<Stretch> stretches_of(size_t length, const std::vector<ByteRange>& matches, bool invert) {
  std::vector<Stretch> stretches;
  size_t previous_end = 0;
  for (const ByteRange& match : matches) {
    if (previous_end != match.first) stretches.push_back({{previous_end, match.first}, invert});
    stretches.push_back({match, !invert});
    previous_end = match.second;
  }
  if (previous_end != length) stretches.push_back({{previous_end, length}, invert});
  return stretches;
}

// Walks the stretches in order: a stretch joins the last piece when `joins(is_match, previous_match)`,
// else it starts a new piece.
std::vector<ByteRange> join_forward(const std::vector<Stretch>& stretches, bool (*joins)(bool, bool)) {
  std::vector<ByteRange> pieces;
  bool previous_match = false;
  for (const Stretch& s : stretches) {
    if (joins(s.is_match, previous_match) && !pieces.empty())
      pieces.back().second = s.range.second;
    else
      pieces.push_back(s.range);
    previous_match = s.is_match;
  }
  return pieces;
}

// A range seen from the other end of a text of `length` bytes.
ByteRange mirrored(const ByteRange& range, size_t length) { return {length - range.second, length - range.first}; }

}  // namespace

SplitBehavior parse_split_behavior(const std::string& name, const std::string& source) {
  if (name == "Removed") return SplitBehavior::Removed;
  if (name == "Isolated") return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (name == "Contiguous") return SplitBehavior::Contiguous;
  throw Error(source + ": unsupported Split behavior '" + name +
              "' (supported: Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
}

std::vector<ByteRange> split_pieces(size_t length, const std::vector<ByteRange>& matches,
                                    SplitBehavior behavior, bool invert) {
  const std::vector<Stretch> stretches = stretches_of(length, matches, invert);
  auto merged_with_previous = [](bool is_match, bool previous_match) { return is_match && !previous_match; };
  std::vector<ByteRange> pieces;
  switch (behavior) {
    case SplitBehavior::Removed:
      for (const Stretch& s : stretches)
        if (!s.is_match) pieces.push_back(s.range);
      break;
    case SplitBehavior::Isolated:
      for (const Stretch& s : stretches) pieces.push_back(s.range);
      break;
    case SplitBehavior::Contiguous:
      // Runs of stretches of one kind fuse (with "invert", adjacent matches become such a run).
      pieces = join_forward(stretches, [](bool is_match, bool previous_match) { return is_match == previous_match; });
      break;
    case SplitBehavior::MergedWithPrevious:
      pieces = join_forward(stretches, merged_with_previous);
      break;
    case SplitBehavior::MergedWithNext: {
      // MergedWithPrevious of the text read backwards, turned back around.
      std::vector<Stretch> backwards;
      for (auto s = stretches.rbegin(); s != stretches.rend(); ++s)
        backwards.push_back({mirrored(s->range, length), s->is_match});
      const std::vector<ByteRange> backward_pieces = join_forward(backwards, merged_with_previous);
      for (auto piece = backward_pieces.rbegin(); piece != backward_pieces.rend(); ++piece)
        pieces.push_back(mirrored(*piece, length));
      break;
    }
  }
  std::erase_if(pieces, [](const ByteRange& r) { return r.first == r.second; });
  return pieces;
}

}  // namespace moe::tokenizer
