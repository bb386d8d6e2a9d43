#pragma once
// Reads whole files — text, or JSON into nlohmann::json — failing with a moe::Error naming the file.
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace moe {

std::string read_text_file(const std::string& path);
nlohmann::json read_json_file(const std::string& path);
// Keeps object keys in file order (what a chat template's tojson must reproduce).
nlohmann::ordered_json read_ordered_json_file(const std::string& path);
bool file_exists(const std::string& path);

}  // namespace moe
