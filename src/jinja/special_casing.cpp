#include "jinja/python_text.h"

#include <algorithm>
#include <iterator>

namespace moe::jinja::python_text {

namespace {

// One code point with at least one multi-code-point mapping; "" where that mapping is simple.
struct SpecialCase {
  char32_t code_point;
  const char* upper;
  const char* lower;
  const char* title;
};

// Generated from Python 3.11 (Unicode 14.0): every code point c for which len(c.upper()),
// len(c.lower()) or len(c.title()) exceeds 1, with those mappings as UTF-8. Sorted by code point.
constexpr SpecialCase kSpecialCases[] = {
    {0x00DF, "\x53\x53", "", "\x53\x73"},
    {0x0130, "", "\x69\xcc\x87", ""},
    {0x0149, "\xca\xbc\x4e", "", "\xca\xbc\x4e"},
    {0x01F0, "\x4a\xcc\x8c", "", "\x4a\xcc\x8c"},
    {0x0390, "\xce\x99\xcc\x88\xcc\x81", "", "\xce\x99\xcc\x88\xcc\x81"},
    {0x03B0, "\xce\xa5\xcc\x88\xcc\x81", "", "\xce\xa5\xcc\x88\xcc\x81"},
    {0x0587, "\xd4\xb5\xd5\x92", "", "\xd4\xb5\xd6\x82"},
    {0x1E96, "\x48\xcc\xb1", "", "\x48\xcc\xb1"},
    {0x1E97, "\x54\xcc\x88", "", "\x54\xcc\x88"},
    {0x1E98, "\x57\xcc\x8a", "", "\x57\xcc\x8a"},
    {0x1E99, "\x59\xcc\x8a", "", "\x59\xcc\x8a"},
    {0x1E9A, "\x41\xca\xbe", "", "\x41\xca\xbe"},
    {0x1F50, "\xce\xa5\xcc\x93", "", "\xce\xa5\xcc\x93"},
    {0x1F52, "\xce\xa5\xcc\x93\xcc\x80", "", "\xce\xa5\xcc\x93\xcc\x80"},
    {0x1F54, "\xce\xa5\xcc\x93\xcc\x81", "", "\xce\xa5\xcc\x93\xcc\x81"},
    {0x1F56, "\xce\xa5\xcc\x93\xcd\x82", "", "\xce\xa5\xcc\x93\xcd\x82"},
    {0x1F80, "\xe1\xbc\x88\xce\x99", "", ""},
    {0x1F81, "\xe1\xbc\x89\xce\x99", "", ""},
    {0x1F82, "\xe1\xbc\x8a\xce\x99", "", ""},
    {0x1F83, "\xe1\xbc\x8b\xce\x99", "", ""},
    {0x1F84, "\xe1\xbc\x8c\xce\x99", "", ""},
    {0x1F85, "\xe1\xbc\x8d\xce\x99", "", ""},
    {0x1F86, "\xe1\xbc\x8e\xce\x99", "", ""},
    {0x1F87, "\xe1\xbc\x8f\xce\x99", "", ""},
    {0x1F88, "\xe1\xbc\x88\xce\x99", "", ""},
    {0x1F89, "\xe1\xbc\x89\xce\x99", "", ""},
    {0x1F8A, "\xe1\xbc\x8a\xce\x99", "", ""},
    {0x1F8B, "\xe1\xbc\x8b\xce\x99", "", ""},
    {0x1F8C, "\xe1\xbc\x8c\xce\x99", "", ""},
    {0x1F8D, "\xe1\xbc\x8d\xce\x99", "", ""},
    {0x1F8E, "\xe1\xbc\x8e\xce\x99", "", ""},
    {0x1F8F, "\xe1\xbc\x8f\xce\x99", "", ""},
    {0x1F90, "\xe1\xbc\xa8\xce\x99", "", ""},
    {0x1F91, "\xe1\xbc\xa9\xce\x99", "", ""},
    {0x1F92, "\xe1\xbc\xaa\xce\x99", "", ""},
    {0x1F93, "\xe1\xbc\xab\xce\x99", "", ""},
    {0x1F94, "\xe1\xbc\xac\xce\x99", "", ""},
    {0x1F95, "\xe1\xbc\xad\xce\x99", "", ""},
    {0x1F96, "\xe1\xbc\xae\xce\x99", "", ""},
    {0x1F97, "\xe1\xbc\xaf\xce\x99", "", ""},
    {0x1F98, "\xe1\xbc\xa8\xce\x99", "", ""},
    {0x1F99, "\xe1\xbc\xa9\xce\x99", "", ""},
    {0x1F9A, "\xe1\xbc\xaa\xce\x99", "", ""},
    {0x1F9B, "\xe1\xbc\xab\xce\x99", "", ""},
    {0x1F9C, "\xe1\xbc\xac\xce\x99", "", ""},
    {0x1F9D, "\xe1\xbc\xad\xce\x99", "", ""},
    {0x1F9E, "\xe1\xbc\xae\xce\x99", "", ""},
    {0x1F9F, "\xe1\xbc\xaf\xce\x99", "", ""},
    {0x1FA0, "\xe1\xbd\xa8\xce\x99", "", ""},
    {0x1FA1, "\xe1\xbd\xa9\xce\x99", "", ""},
    {0x1FA2, "\xe1\xbd\xaa\xce\x99", "", ""},
    {0x1FA3, "\xe1\xbd\xab\xce\x99", "", ""},
    {0x1FA4, "\xe1\xbd\xac\xce\x99", "", ""},
    {0x1FA5, "\xe1\xbd\xad\xce\x99", "", ""},
    {0x1FA6, "\xe1\xbd\xae\xce\x99", "", ""},
    {0x1FA7, "\xe1\xbd\xaf\xce\x99", "", ""},
    {0x1FA8, "\xe1\xbd\xa8\xce\x99", "", ""},
    {0x1FA9, "\xe1\xbd\xa9\xce\x99", "", ""},
    {0x1FAA, "\xe1\xbd\xaa\xce\x99", "", ""},
    {0x1FAB, "\xe1\xbd\xab\xce\x99", "", ""},
    {0x1FAC, "\xe1\xbd\xac\xce\x99", "", ""},
    {0x1FAD, "\xe1\xbd\xad\xce\x99", "", ""},
    {0x1FAE, "\xe1\xbd\xae\xce\x99", "", ""},
    {0x1FAF, "\xe1\xbd\xaf\xce\x99", "", ""},
    {0x1FB2, "\xe1\xbe\xba\xce\x99", "", "\xe1\xbe\xba\xcd\x85"},
    {0x1FB3, "\xce\x91\xce\x99", "", ""},
    {0x1FB4, "\xce\x86\xce\x99", "", "\xce\x86\xcd\x85"},
    {0x1FB6, "\xce\x91\xcd\x82", "", "\xce\x91\xcd\x82"},
    {0x1FB7, "\xce\x91\xcd\x82\xce\x99", "", "\xce\x91\xcd\x82\xcd\x85"},
    {0x1FBC, "\xce\x91\xce\x99", "", ""},
    {0x1FC2, "\xe1\xbf\x8a\xce\x99", "", "\xe1\xbf\x8a\xcd\x85"},
    {0x1FC3, "\xce\x97\xce\x99", "", ""},
    {0x1FC4, "\xce\x89\xce\x99", "", "\xce\x89\xcd\x85"},
    {0x1FC6, "\xce\x97\xcd\x82", "", "\xce\x97\xcd\x82"},
    {0x1FC7, "\xce\x97\xcd\x82\xce\x99", "", "\xce\x97\xcd\x82\xcd\x85"},
    {0x1FCC, "\xce\x97\xce\x99", "", ""},
    {0x1FD2, "\xce\x99\xcc\x88\xcc\x80", "", "\xce\x99\xcc\x88\xcc\x80"},
    {0x1FD3, "\xce\x99\xcc\x88\xcc\x81", "", "\xce\x99\xcc\x88\xcc\x81"},
    {0x1FD6, "\xce\x99\xcd\x82", "", "\xce\x99\xcd\x82"},
    {0x1FD7, "\xce\x99\xcc\x88\xcd\x82", "", "\xce\x99\xcc\x88\xcd\x82"},
    {0x1FE2, "\xce\xa5\xcc\x88\xcc\x80", "", "\xce\xa5\xcc\x88\xcc\x80"},
    {0x1FE3, "\xce\xa5\xcc\x88\xcc\x81", "", "\xce\xa5\xcc\x88\xcc\x81"},
    {0x1FE4, "\xce\xa1\xcc\x93", "", "\xce\xa1\xcc\x93"},
    {0x1FE6, "\xce\xa5\xcd\x82", "", "\xce\xa5\xcd\x82"},
    {0x1FE7, "\xce\xa5\xcc\x88\xcd\x82", "", "\xce\xa5\xcc\x88\xcd\x82"},
    {0x1FF2, "\xe1\xbf\xba\xce\x99", "", "\xe1\xbf\xba\xcd\x85"},
    {0x1FF3, "\xce\xa9\xce\x99", "", ""},
    {0x1FF4, "\xce\x8f\xce\x99", "", "\xce\x8f\xcd\x85"},
    {0x1FF6, "\xce\xa9\xcd\x82", "", "\xce\xa9\xcd\x82"},
    {0x1FF7, "\xce\xa9\xcd\x82\xce\x99", "", "\xce\xa9\xcd\x82\xcd\x85"},
    {0x1FFC, "\xce\xa9\xce\x99", "", ""},
    {0xFB00, "\x46\x46", "", "\x46\x66"},
    {0xFB01, "\x46\x49", "", "\x46\x69"},
    {0xFB02, "\x46\x4c", "", "\x46\x6c"},
    {0xFB03, "\x46\x46\x49", "", "\x46\x66\x69"},
    {0xFB04, "\x46\x46\x4c", "", "\x46\x66\x6c"},
    {0xFB05, "\x53\x54", "", "\x53\x74"},
    {0xFB06, "\x53\x54", "", "\x53\x74"},
    {0xFB13, "\xd5\x84\xd5\x86", "", "\xd5\x84\xd5\xb6"},
    {0xFB14, "\xd5\x84\xd4\xb5", "", "\xd5\x84\xd5\xa5"},
    {0xFB15, "\xd5\x84\xd4\xbb", "", "\xd5\x84\xd5\xab"},
    {0xFB16, "\xd5\x8e\xd5\x86", "", "\xd5\x8e\xd5\xb6"},
    {0xFB17, "\xd5\x84\xd4\xbd", "", "\xd5\x84\xd5\xad"},
};

const SpecialCase* find(char32_t c) {
  const auto* it = std::lower_bound(std::begin(kSpecialCases), std::end(kSpecialCases), c,
                                    [](const SpecialCase& entry, char32_t value) { return entry.code_point < value; });
  return it != std::end(kSpecialCases) && it->code_point == c ? it : nullptr;
}

const char* non_empty(const char* mapping) { return mapping[0] ? mapping : nullptr; }

}  // namespace

const char* full_uppercase(char32_t c) {
  const SpecialCase* entry = find(c);
  return entry ? non_empty(entry->upper) : nullptr;
}

const char* full_lowercase(char32_t c) {
  const SpecialCase* entry = find(c);
  return entry ? non_empty(entry->lower) : nullptr;
}

const char* full_titlecase(char32_t c) {
  const SpecialCase* entry = find(c);
  return entry ? non_empty(entry->title) : nullptr;
}

}  // namespace moe::jinja::python_text
