#include "capture/routing_encoding.h"

#include <immintrin.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "common/error.h"

namespace moe {

RoutedExpertsDtype resolve_routed_experts_dtype(RoutedExpertsDtype requested, int num_experts) {
  if (requested == RoutedExpertsDtype::Auto)
    return num_experts <= 256 ? RoutedExpertsDtype::Uint8 : RoutedExpertsDtype::Int16;
  if (requested == RoutedExpertsDtype::Uint8 && num_experts > 256)
    throw Error("uint8 cannot hold the ids of a model with " + std::to_string(num_experts) +
                " experts; use int16, int32 or auto");
  return requested;
}

std::string pack_routed_experts(const int16_t* ids, size_t count, RoutedExpertsDtype dtype) {
  std::string out;
  switch (dtype) {
    case RoutedExpertsDtype::Int16:
      out.assign(reinterpret_cast<const char*>(ids), count * 2);  // x86-64 is little-endian
      break;
    case RoutedExpertsDtype::Int32:
      out.resize(count * 4);
      for (size_t i = 0; i < count; ++i) {
        const int32_t v = ids[i];
        std::memcpy(out.data() + 4 * i, &v, 4);
      }
      break;
    case RoutedExpertsDtype::Uint8:
      out.resize(count);
      for (size_t i = 0; i < count; ++i) out[i] = static_cast<char>(static_cast<uint8_t>(ids[i]));
      break;
    case RoutedExpertsDtype::Auto:
      throw Error("pack_routed_experts: resolve the dtype first");
  }
  return out;
}

std::string pack_router_weights(const float* weights, size_t count, RouterWeightsDtype dtype) {
  if (dtype == RouterWeightsDtype::Float32) return std::string(reinterpret_cast<const char*>(weights), count * 4);
  std::string out(count * 2, '\0');
  for (size_t i = 0; i < count; ++i) {
    const uint16_t h = _cvtss_sh(weights[i], _MM_FROUND_TO_NEAREST_INT);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Two output characters for every 12-bit value: each 3-byte group is two table lookups.
const std::array<uint16_t, 4096>& pair_table() {
  static const std::array<uint16_t, 4096> table = [] {
    std::array<uint16_t, 4096> t{};
    for (int v = 0; v < 4096; ++v) {
      const unsigned char pair[2] = {static_cast<unsigned char>(kAlphabet[v >> 6]),
                                     static_cast<unsigned char>(kAlphabet[v & 63])};
      std::memcpy(&t[v], pair, 2);
    }
    return t;
  }();
  return table;
}

int decode_char(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

void base64_encode_append(std::string_view bytes, std::string& out) {
  const auto& table = pair_table();
  const size_t n = bytes.size(), full = n / 3;
  const size_t start = out.size();
  out.resize(start + (n + 2) / 3 * 4);
  const auto* in = reinterpret_cast<const unsigned char*>(bytes.data());
  char* dst = out.data() + start;
  for (size_t g = 0; g < full; ++g, in += 3, dst += 4) {
    const uint32_t v = (uint32_t{in[0]} << 16) | (uint32_t{in[1]} << 8) | in[2];
    std::memcpy(dst, &table[v >> 12], 2);
    std::memcpy(dst + 2, &table[v & 0xfff], 2);
  }
  const size_t rest = n - full * 3;
  if (rest == 0) return;
  const uint32_t v = (uint32_t{in[0]} << 16) | (rest == 2 ? uint32_t{in[1]} << 8 : 0);
  dst[0] = kAlphabet[(v >> 18) & 63];
  dst[1] = kAlphabet[(v >> 12) & 63];
  dst[2] = rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
  dst[3] = '=';
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  base64_encode_append(bytes, out);
  return out;
}

std::string base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) throw Error("base64: length " + std::to_string(text.size()) + " is not a multiple of 4");
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = text[i + j];
      if (c == '=' && i + 4 == text.size() && j >= 2) {
        v[j] = 0;
        ++pad;
      } else if ((v[j] = decode_char(c)) < 0 || pad) {
        throw Error("base64: invalid character at offset " + std::to_string(i + j));
      }
    }
    const uint32_t bits = (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    out.push_back(static_cast<char>(bits >> 16));
    if (pad < 2) out.push_back(static_cast<char>((bits >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(bits & 0xff));
  }
  return out;
}

}  // namespace moe
