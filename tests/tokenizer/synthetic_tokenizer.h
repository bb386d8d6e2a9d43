#pragma once
// Small tokenizer.json files written into a temporary folder, to test one feature at a time. The
// base vocabulary gives byte b the id b, so without merges a text encodes to its own bytes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>
#include <string>

#include "tokenizer/pre_tokenizer.h"

namespace moe::tokenizer::testing {

// A byte-level BPE tokenizer.json: the 256 byte tokens, then `extra_tokens` from id 256 on.
inline nlohmann::json byte_level_tokenizer_json(const std::vector<std::string>& extra_tokens = {},
                                                const nlohmann::json& merges = nlohmann::json::array()) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) {
    std::string spelled;
    ByteLevelAlphabet::instance().encode(std::string(1, static_cast<char>(b)), spelled);
    vocab[spelled] = b;
  }
  for (size_t i = 0; i < extra_tokens.size(); ++i) vocab[extra_tokens[i]] = 256 + static_cast<int>(i);
  return {
      {"version", "1.0"},
      {"added_tokens", nlohmann::json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
  };
}

// An "added_tokens" entry with the given flags (all false unless named).
inline nlohmann::json added_token(int id, const std::string& content, bool special,
                                  std::initializer_list<const char*> flags = {}) {
  nlohmann::json token = {{"id", id},           {"content", content}, {"special", special}, {"lstrip", false},
                          {"rstrip", false},    {"single_word", false}, {"normalized", false}};
  for (const char* flag : flags) token[flag] = true;
  return token;
}

// A temporary folder removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("moe_tok_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }

  // Writes `contents` to NAME in the folder and returns the folder.
  std::string write(const std::string& name, const std::string& contents) const {
    std::ofstream(path_ / name, std::ios::binary) << contents;
    return path_.string();
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace moe::tokenizer::testing
