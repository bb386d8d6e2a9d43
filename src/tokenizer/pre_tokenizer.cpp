#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/utf8.h"

namespace moe::tokenizer {

struct UnicodeRegex::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

// Per-thread match state, so that matching allocates nothing per call. The JIT stack grows to
// 8 MiB because patterns such as \s+(?!\S) backtrack over long runs of blanks.
struct MatchScratch {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  MatchScratch() { pcre2_jit_stack_assign(context, nullptr, jit_stack); }
  ~MatchScratch() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

UnicodeRegex::UnicodeRegex(const std::string& pattern) : pattern_(pattern) {
  auto compiled = std::make_shared<Compiled>();
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                 PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (!compiled->code)
    throw Error("cannot compile regex '" + pattern + "': " + pcre2_message(error_code) + " at offset " +
                std::to_string(error_offset));
  compiled->jit = pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE) == 0;
  compiled_ = std::move(compiled);
}

std::vector<std::pair<size_t, size_t>> UnicodeRegex::find_all(std::string_view text) const {
  thread_local MatchScratch scratch;
  std::vector<std::pair<size_t, size_t>> matches;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t search_from = 0;
  size_t previous_end = std::string_view::npos;
  while (search_from <= text.size()) {
    // The input was validated once by the tokenizer, so PCRE2 need not re-check it per call.
    const int rc = compiled_->jit ? pcre2_jit_match(compiled_->code, subject, text.size(), search_from,
                                                    PCRE2_NO_UTF_CHECK, scratch.data, scratch.context)
                                   : pcre2_match(compiled_->code, subject, text.size(), search_from,
                                                 PCRE2_NO_UTF_CHECK, scratch.data, scratch.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw Error("regex '" + pattern_ + "' failed: " + pcre2_message(rc));
    const PCRE2_SIZE* range = pcre2_get_ovector_pointer(scratch.data);
    const size_t start = range[0], end = range[1];
    if (start != end || start != previous_end) matches.emplace_back(start, end);
    previous_end = end;
    if (end > start) {
      search_from = end;
    } else if (end < text.size()) {
      search_from = end + scan_utf8_sequence(text.substr(end)).length;
    } else {
      break;
    }
  }
  return matches;
}

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

namespace {

constexpr const char* kSupportedTypes = "Split, ByteLevel, Sequence";

// The word regex of GPT-2, which ByteLevel uses when use_regex is true (tokenizers' default).
constexpr const char* kGpt2WordPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// A literal Split pattern as a regex: every ASCII punctuation character escaped.
std::string escape_literal(const std::string& literal) {
  std::string escaped;
  for (char c : literal) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x80 && !std::isalnum(byte)) escaped.push_back('\\');
    escaped.push_back(c);
  }
  return escaped;
}

// A Split pre-tokenizer: a regex or a literal string, its behavior and invert.
RegexSplitStep parse_split(const nlohmann::json& spec, const std::string& source) {
  const nlohmann::json& pattern = spec.at("pattern");
  std::string regex;
  if (pattern.contains("Regex"))
    regex = pattern.at("Regex").get<std::string>();
  else if (pattern.contains("String"))
    regex = escape_literal(pattern.at("String").get<std::string>());
  else
    throw Error(source + ": Split pattern must be {\"Regex\": ...} or {\"String\": ...}, got " + pattern.dump());
  return {UnicodeRegex(regex), parse_split_behavior(spec.value("behavior", "Isolated"), source),
          spec.value("invert", false)};
}

// Appends the steps of one pre_tokenizer value (a Sequence is flattened) and notes a ByteLevel.
void append_steps(const nlohmann::json& spec, const std::string& source, std::vector<PreTokenizerStep>& steps,
                  bool& has_byte_level) {
  const std::string type = spec.is_object() ? spec.value("type", "") : "";
  if (type == "Sequence") {
    for (const auto& member : spec.value("pretokenizers", nlohmann::json::array()))
      append_steps(member, source, steps, has_byte_level);
  } else if (type == "Split") {
    steps.emplace_back(parse_split(spec, source));
  } else if (type == "ByteLevel") {
    // tokenizers' defaults: add_prefix_space and use_regex are both true when absent.
    if (spec.value("add_prefix_space", true)) steps.emplace_back(PrefixSpaceStep{});
    if (spec.value("use_regex", true))
      steps.emplace_back(RegexSplitStep{UnicodeRegex(kGpt2WordPattern), SplitBehavior::Isolated, false});
    steps.emplace_back(ByteLevelSpellingStep{});
    has_byte_level = true;
  } else {
    throw Error(source + ": unsupported pre_tokenizer type '" + (spec.is_null() ? "null" : type) +
                "' (supported: " + kSupportedTypes + ")");
  }
}

// Applies one step to one word, appending what it becomes.
struct StepApplier {
  std::string& word;
  std::vector<std::string>& out;

  void operator()(const RegexSplitStep& step) const {
    for (const ByteRange& piece : split_pieces(word.size(), step.regex.find_all(word), step.behavior, step.invert))
      out.emplace_back(word, piece.first, piece.second - piece.first);
  }
  void operator()(const PrefixSpaceStep&) const {
    out.push_back(word.starts_with(' ') ? std::move(word) : " " + word);
  }
  void operator()(const ByteLevelSpellingStep&) const {
    std::string spelled;
    ByteLevelAlphabet::instance().encode(word, spelled);
    out.push_back(std::move(spelled));
  }
};

}  // namespace

PreTokenizer PreTokenizer::from_json(const nlohmann::json& spec, const std::string& source) {
  PreTokenizer pre_tokenizer;
  bool has_byte_level = false;
  append_steps(spec, source, pre_tokenizer.steps_, has_byte_level);
  if (!has_byte_level)
    throw Error(source + ": the pre_tokenizer has no ByteLevel step; only byte-level BPE tokenizers are supported");
  return pre_tokenizer;
}

void PreTokenizer::split(std::string_view text, std::vector<std::string>& words) const {
  if (text.empty()) return;  // tokenizers drops empty pieces before any step sees them
  std::vector<std::string> current{std::string(text)};
  std::vector<std::string> next;
  for (const PreTokenizerStep& step : steps_) {
    next.clear();
    for (std::string& word : current) std::visit(StepApplier{word, next}, step);
    current.swap(next);
  }
  for (std::string& word : current) words.push_back(std::move(word));
}

}  // namespace moe::tokenizer
