#include "tokenizer/pre_tokenizer.h"

#include <cctype>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "tokenizer/byte_level_alphabet.h"

namespace moe::tokenizer {
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
