#include "common/json_file.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"

namespace moe {
namespace {

template <typename Json>
Json parse_json_file(const std::string& path) {
  try {
    return Json::parse(read_text_file(path));
  } catch (const nlohmann::json::exception& e) {  // out_of_range too: a number beyond a double (1e999)
    throw Error(path + " is not valid JSON: " + e.what());
  }
}

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

nlohmann::json read_json_file(const std::string& path) { return parse_json_file<nlohmann::json>(path); }

nlohmann::ordered_json read_ordered_json_file(const std::string& path) {
  return parse_json_file<nlohmann::ordered_json>(path);
}

bool file_exists(const std::string& path) { return std::filesystem::is_regular_file(path); }

}  // namespace moe
