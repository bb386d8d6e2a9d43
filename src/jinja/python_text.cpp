#include "jinja/python_text.h"

#include <utf8proc.h>

#include <algorithm>
#include <utility>

#include "common/utf8.h"
#include "jinja/value.h"

namespace moe::jinja::python_text {

namespace {

bool is_in(char32_t c, std::u32string_view set) { return set.find(c) != std::u32string_view::npos; }

char32_t simple_mapping(utf8proc_int32_t (*mapping)(utf8proc_int32_t), char32_t c) {
  return static_cast<char32_t>(mapping(static_cast<utf8proc_int32_t>(c)));
}

// Unicode's "cased" property: upper, lower or title case letters, anything with a case mapping, and
// the Other_Lowercase / Other_Uppercase letters that have neither (ª, º, squared Latin letters...).
bool is_cased(char32_t c) {
  static constexpr std::pair<char32_t, char32_t> kOtherCased[] = {
      {0xAA, 0xAA}, {0xBA, 0xBA}, {0x1F130, 0x1F149}, {0x1F150, 0x1F169}, {0x1F170, 0x1F189}};
  for (const auto& [first, last] : kOtherCased)
    if (c >= first && c <= last) return true;
  const utf8proc_category_t category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return category == UTF8PROC_CATEGORY_LU || category == UTF8PROC_CATEGORY_LL || category == UTF8PROC_CATEGORY_LT ||
         simple_mapping(utf8proc_tolower, c) != c || simple_mapping(utf8proc_toupper, c) != c;
}

// Unicode's "case-ignorable" property: marks, format characters, modifiers, and the punctuation
// allowed inside words (Word_Break MidLetter, MidNumLet, Single_Quote).
bool is_case_ignorable(char32_t c) {
  static constexpr char32_t kWordInternal[] = {0x27,   0x2E,   0x3A,   0xB7,   0x387,  0x5F4,  0x2018, 0x2019,
                                               0x2024, 0x2027, 0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A};
  if (std::find(std::begin(kWordInternal), std::end(kWordInternal), c) != std::end(kWordInternal)) return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
      return true;
    default:
      return false;
  }
}

// Unicode's Final_Sigma condition for the capital sigma at points[i]: a cased letter before it and
// none after it, skipping case-ignorable code points on both sides. Python lowercases it to ς then.
bool is_final_sigma(const std::u32string& points, size_t i) {
  size_t before = i;
  while (before > 0 && is_case_ignorable(points[before - 1])) --before;
  if (before == 0 || !is_cased(points[before - 1])) return false;
  size_t after = i + 1;
  while (after < points.size() && is_case_ignorable(points[after])) ++after;
  return after == points.size() || !is_cased(points[after]);
}

// Appends Python's lowercase of points[i], which may depend on its neighbours (final sigma).
void append_lower(const std::u32string& points, size_t i, std::string& out) {
  constexpr char32_t kCapitalSigma = 0x3A3, kFinalSigma = 0x3C2, kSigma = 0x3C3;
  const char32_t c = points[i];
  if (c == kCapitalSigma) return append_code_point(is_final_sigma(points, i) ? kFinalSigma : kSigma, out);
  if (const char* full = full_lowercase(c)) {
    out += full;
    return;
  }
  append_code_point(simple_mapping(utf8proc_tolower, c), out);
}

// Whitespace-run splitting (str.split() with no separator), honouring maxsplit from either end.
std::vector<std::string> split_on_whitespace(std::string_view text, int64_t maxsplit, bool from_right) {
  std::u32string points = decode(text);
  if (from_right) std::reverse(points.begin(), points.end());
  std::vector<std::u32string> pieces;
  size_t i = 0;
  while (true) {
    while (i < points.size() && is_space(points[i])) ++i;
    if (i == points.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(pieces.size()) == maxsplit) {
      pieces.push_back(points.substr(i));
      break;
    }
    size_t end = i;
    while (end < points.size() && !is_space(points[end])) ++end;
    pieces.push_back(points.substr(i, end - i));
    i = end;
  }
  std::vector<std::string> out;
  for (auto& piece : pieces) {
    if (from_right) std::reverse(piece.begin(), piece.end());
    out.push_back(encode(piece));
  }
  if (from_right) std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace

std::u32string decode(std::string_view text) {
  std::u32string out;
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Sequence sequence = scan_utf8_sequence(text.substr(pos));
    if (!sequence.valid) throw RenderFailure("text is not valid UTF-8");
    out.push_back(decode_code_point(text.substr(pos), sequence.length));
    pos += sequence.length;
  }
  return out;
}

std::string encode(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (char32_t c : code_points) append_code_point(c, out);
  return out;
}

size_t length(std::string_view text) {
  // Every code point has exactly one byte that is not a continuation byte.
  return static_cast<size_t>(std::count_if(text.begin(), text.end(),
                                           [](char b) { return (static_cast<unsigned char>(b) & 0xC0) != 0x80; }));
}

bool is_space(char32_t c) {
  // Python's str.isspace(): bidirectional class WS/B/S or category Zs.
  static constexpr char32_t kSpaces[] = {0x09,   0x0A,   0x0B,   0x0C,   0x0D,   0x1C,   0x1D,   0x1E,
                                         0x1F,   0x20,   0x85,   0xA0,   0x1680, 0x2028, 0x2029, 0x202F,
                                         0x205F, 0x3000};
  if (c >= 0x2000 && c <= 0x200A) return true;
  return std::find(std::begin(kSpaces), std::end(kSpaces), c) != std::end(kSpaces);
}

std::string strip(std::string_view text, const std::optional<std::string>& chars, bool left, bool right) {
  const std::u32string strip_set = chars ? decode(*chars) : std::u32string();
  // The code point of the `length` bytes at text[pos], when it is one this call strips.
  const auto strippable_at = [&](size_t pos, size_t length) {
    const std::string_view bytes = text.substr(pos, length);
    if (!scan_utf8_sequence(bytes).valid) throw RenderFailure("text is not valid UTF-8");
    const char32_t c = decode_code_point(bytes, length);
    return chars ? is_in(c, strip_set) : is_space(c);
  };
  // Walks in from both ends only as far as needed: long contents are stripped without decoding them.
  size_t begin = 0, end = text.size();
  while (left && begin < end) {
    const size_t length = scan_utf8_sequence(text.substr(begin, end - begin)).length;
    if (!strippable_at(begin, length)) break;
    begin += length;
  }
  while (right && end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    if (!strippable_at(start, end - start)) break;
    end = start;
  }
  return std::string(text.substr(begin, end - begin));
}

std::vector<std::string> split(std::string_view text, const std::optional<std::string>& sep, int64_t maxsplit,
                               bool from_right) {
  if (!sep) return split_on_whitespace(text, maxsplit, from_right);
  if (sep->empty()) throw RenderFailure("split(): empty separator");
  std::vector<std::string> pieces;
  if (!from_right) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(pieces.size()) < maxsplit) {
      const size_t hit = text.find(*sep, start);
      if (hit == std::string_view::npos) break;
      pieces.emplace_back(text.substr(start, hit - start));
      start = hit + sep->size();
    }
    pieces.emplace_back(text.substr(start));
    return pieces;
  }
  size_t end = text.size();
  while (maxsplit < 0 || static_cast<int64_t>(pieces.size()) < maxsplit) {
    if (end < sep->size()) break;
    const size_t hit = text.rfind(*sep, end - sep->size());
    if (hit == std::string_view::npos) break;
    pieces.emplace_back(text.substr(hit + sep->size(), end - hit - sep->size()));
    end = hit;
  }
  pieces.emplace_back(text.substr(0, end));
  std::reverse(pieces.begin(), pieces.end());
  return pieces;
}

std::string replace(std::string_view text, std::string_view old_text, std::string_view new_text, int64_t count) {
  std::string out;
  int64_t done = 0;
  if (old_text.empty()) {
    // Python inserts `new` before every code point and at the end.
    const std::u32string points = decode(text);
    for (char32_t c : points) {
      if (count < 0 || done < count) out += new_text, ++done;
      out += encode(std::u32string(1, c));
    }
    if (count < 0 || done < count) out += new_text;
    return out;
  }
  size_t start = 0;
  while (count < 0 || done < count) {
    const size_t hit = text.find(old_text, start);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(start, hit - start));
    out.append(new_text);
    start = hit + old_text.size();
    ++done;
  }
  out.append(text.substr(start));
  return out;
}

std::string lower(std::string_view text) {
  const std::u32string points = decode(text);
  std::string out;
  for (size_t i = 0; i < points.size(); ++i) append_lower(points, i, out);
  return out;
}

std::string upper(std::string_view text) {
  std::string out;
  for (char32_t c : decode(text)) {
    if (const char* full = full_uppercase(c))
      out += full;
    else
      append_code_point(simple_mapping(utf8proc_toupper, c), out);
  }
  return out;
}

std::string capitalize(std::string_view text) {
  const std::u32string points = decode(text);
  std::string out;
  if (points.empty()) return out;
  if (const char* full = full_titlecase(points[0]))
    out += full;
  else
    append_code_point(simple_mapping(utf8proc_totitle, points[0]), out);
  for (size_t i = 1; i < points.size(); ++i) append_lower(points, i, out);
  return out;
}

}  // namespace moe::jinja::python_text
