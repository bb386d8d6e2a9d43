#pragma once
// Python str semantics over UTF-8 std::strings: lengths and indexes count code points, whitespace
// is Unicode whitespace, case mapping is Unicode's. Shared by filters, methods and the lexer.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace moe::jinja::python_text {

// The code points of UTF-8 text; throws RenderFailure when it is not well-formed.
std::u32string decode(std::string_view text);
// UTF-8 encoding of code points.
std::string encode(std::u32string_view code_points);
// len(s).
size_t length(std::string_view text);

// str.isspace() for one code point.
bool is_space(char32_t c);

// str.strip / lstrip / rstrip: removes code points in `chars` (whitespace when absent).
std::string strip(std::string_view text, const std::optional<std::string>& chars, bool left, bool right);
// str.split(sep, maxsplit) and str.rsplit: whitespace-run splitting when `sep` is absent; maxsplit < 0
// means no limit. Throws RenderFailure on an empty separator, as Python raises ValueError.
std::vector<std::string> split(std::string_view text, const std::optional<std::string>& sep, int64_t maxsplit,
                               bool from_right);
// str.replace(old, new, count); count < 0 replaces all. An empty `old` inserts between code points.
std::string replace(std::string_view text, std::string_view old_text, std::string_view new_text, int64_t count);
// str.lower() / str.upper(): Unicode full case mapping ("ß".upper() == "SS"), with the final sigma
// rule in lower().
std::string lower(std::string_view text);
std::string upper(std::string_view text);
// str.capitalize(): the first code point title-cased, the rest lower-cased.
std::string capitalize(std::string_view text);

// Python's full case mappings that turn one code point into several (Unicode SpecialCasing.txt's
// unconditional entries: "ß".upper() == "SS", "ﬁ".upper() == "FI", "İ".lower() == "i̇"). Every other
// code point maps one-to-one, which utf8proc's simple mappings give. The table is special_casing.cpp.
// Each gives the UTF-8 of the multi-code-point str.upper() / str.lower() / title case of `c`, or
// nullptr when the mapping is a single code point.
const char* full_uppercase(char32_t c);
const char* full_lowercase(char32_t c);
const char* full_titlecase(char32_t c);

}  // namespace moe::jinja::python_text
