#include "common/utf8.h"

namespace moe {
namespace {

// Allowed range of the second byte after a lead byte (Unicode Table 3-7): excludes overlong
// forms, surrogates and code points past U+10FFFF.
struct LeadByteRule {
  size_t length;
  unsigned char second_low, second_high;
};

LeadByteRule lead_byte_rule(unsigned char lead) {
  if (lead < 0x80) return {1, 0, 0};
  if (lead >= 0xC2 && lead <= 0xDF) return {2, 0x80, 0xBF};
  if (lead == 0xE0) return {3, 0xA0, 0xBF};
  if (lead == 0xED) return {3, 0x80, 0x9F};
  if (lead >= 0xE1 && lead <= 0xEF) return {3, 0x80, 0xBF};
  if (lead == 0xF0) return {4, 0x90, 0xBF};
  if (lead >= 0xF1 && lead <= 0xF3) return {4, 0x80, 0xBF};
  if (lead == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};  // a continuation byte or a byte that never occurs in UTF-8
}

}  // namespace

Utf8Sequence scan_utf8_sequence(std::string_view bytes) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(bytes[i]); };
  const LeadByteRule rule = lead_byte_rule(byte(0));
  if (rule.length == 0) return {1, false, false};
  if (rule.length == 1) return {1, true, false};
  size_t i = 1;
  for (; i < rule.length; ++i) {
    if (i >= bytes.size()) return {i, false, true};
    const unsigned char low = i == 1 ? rule.second_low : 0x80;
    const unsigned char high = i == 1 ? rule.second_high : 0xBF;
    if (byte(i) < low || byte(i) > high) return {i, false, false};
  }
  return {rule.length, true, false};
}

bool is_valid_utf8(std::string_view bytes) {
  for (size_t pos = 0; pos < bytes.size();) {
    const Utf8Sequence seq = scan_utf8_sequence(bytes.substr(pos));
    if (!seq.valid) return false;
    pos += seq.length;
  }
  return true;
}

size_t append_complete_utf8_lossy(std::string_view bytes, std::string& out) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    const Utf8Sequence seq = scan_utf8_sequence(bytes.substr(pos));
    if (seq.truncated) break;
    if (seq.valid)
      out.append(bytes.substr(pos, seq.length));
    else
      out.append(kReplacementCharacter);
    pos += seq.length;
  }
  return pos;
}

void append_utf8_lossy(std::string_view bytes, std::string& out) {
  const size_t consumed = append_complete_utf8_lossy(bytes, out);
  // A truncated sequence at the very end is one maximal ill-formed subpart.
  if (consumed < bytes.size()) out.append(kReplacementCharacter);
}

char32_t decode_code_point(std::string_view bytes, size_t length) {
  auto byte = [&](size_t i) { return static_cast<char32_t>(static_cast<unsigned char>(bytes[i])); };
  if (length == 1) return byte(0);
  static constexpr char32_t kLeadMask[] = {0, 0, 0x1F, 0x0F, 0x07};
  char32_t code_point = byte(0) & kLeadMask[length];
  for (size_t i = 1; i < length; ++i) code_point = (code_point << 6) | (byte(i) & 0x3F);
  return code_point;
}

void append_code_point(char32_t code_point, std::string& out) {
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

}  // namespace moe
