#pragma once
// Python's full case mappings that turn one code point into several (Unicode SpecialCasing.txt's
// unconditional entries: "ß".upper() == "SS", "ﬁ".upper() == "FI", "İ".lower() == "i̇"). Every other
// code point maps one-to-one, which utf8proc's simple mappings give.

namespace moe::tokenizer::jinja {

// UTF-8 of the multi-code-point str.upper() / str.lower() / title case of `c`, or nullptr when the
// mapping is a single code point.
const char* full_uppercase(char32_t c);
const char* full_lowercase(char32_t c);
const char* full_titlecase(char32_t c);

}  // namespace moe::tokenizer::jinja
