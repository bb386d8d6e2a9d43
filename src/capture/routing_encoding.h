#pragma once
// How routing leaves the engine: a flat little-endian array of the requested dtype (ids) or float
// type (weights), shipped as base64 text or raw bytes, with its shape [rows, num_moe_layers, K].
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "moe/messages.h"

namespace moe {

using msg::RoutedExpertsDtype;
using msg::RouterWeightsDtype;

// The concrete dtype for a model of num_experts experts: auto = the smallest that fits; uint8 for
// a model of more than 256 experts is a moe::Error (the front door's check, RequestPreparer).
RoutedExpertsDtype resolve_routed_experts_dtype(RoutedExpertsDtype requested, int num_experts);

// Packs ids into little-endian bytes of a concrete dtype (not Auto).
std::string pack_routed_experts(const int16_t* ids, size_t count, RoutedExpertsDtype dtype);
std::string pack_router_weights(const float* weights, size_t count, RouterWeightsDtype dtype);

// Standard base64 (RFC 4648, with '=' padding), fast enough to encode routing at > 1.5 GB/s.
std::string base64_encode(std::string_view bytes);
// Appends the encoding of `bytes` to `out`.
void base64_encode_append(std::string_view bytes, std::string& out);
// Decodes; throws moe::Error on a character outside the alphabet or a bad length.
std::string base64_decode(std::string_view text);

}  // namespace moe
