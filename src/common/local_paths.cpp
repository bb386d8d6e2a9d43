#include "common/local_paths.h"

#include <filesystem>
#include <regex>

#include "common/error.h"

namespace moe {
namespace {

// "Qwen/Qwen3-30B-A3B": one slash between two names of letters, digits, '.', '_' and '-'.
bool looks_like_hub_id(const std::string& path) {
  static const std::regex hub_id(R"([A-Za-z0-9_][A-Za-z0-9._-]*/[A-Za-z0-9_][A-Za-z0-9._-]*)");
  return std::regex_match(path, hub_id);
}

}  // namespace

void require_local_directory(const std::string& flag, const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) return;
  const std::string named = flag + " " + path;
  if (std::filesystem::exists(status)) throw Error(named + " is a file, not a directory");
  if (looks_like_hub_id(path)) {
    const std::string local = "./" + path.substr(path.find('/') + 1);
    throw Error(named + " does not exist: this engine reads local directories, not Hugging Face hub ids; download "
                "it first (huggingface-cli download " + path + " --local-dir " + local + ") and pass " + flag +
                " " + local);
  }
  throw Error(named + " does not exist");
}

std::string tokenizer_directory(const std::string& tokenizer_path, const std::string& model_path) {
  const bool own = !tokenizer_path.empty();
  const std::string flag = own ? "--tokenizer-path" : "--model-path";
  const std::string dir = own ? tokenizer_path : model_path;
  require_local_directory(flag, dir);
  if (std::filesystem::exists(std::filesystem::path(dir) / "tokenizer.json")) return dir;
  if (own) throw Error("--tokenizer-path " + dir + " has no tokenizer.json");
  throw Error("--model-path " + dir + " has no tokenizer.json: pass --tokenizer-path with the model's tokenizer directory");
}

}  // namespace moe
