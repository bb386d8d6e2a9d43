#pragma once
// Reads a JSON file into nlohmann::json, failing with a moe::Error that names the file.
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace moe {

nlohmann::json read_json_file(const std::string& path);
bool file_exists(const std::string& path);

}  // namespace moe
