#pragma once
// Client-protocol frames written and read as JSON-shaped values, the way any msgpack client packs
// them (nlohmann's msgpack codec, independent of the engine's own).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moe::test {

inline std::string pack(const nlohmann::json& value) {
  const std::vector<uint8_t> bytes = nlohmann::json::to_msgpack(value);
  return std::string(bytes.begin(), bytes.end());
}

inline nlohmann::json unpack(const std::string& frame) { return nlohmann::json::from_msgpack(frame); }

}  // namespace moe::test
