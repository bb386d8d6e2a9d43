// Differential test against Hugging Face tokenizers 0.23.2: hf_differential.json (made by
// make_hf_differential.py) holds its encodings (special tokens parsed and split) and decodings of
// random texts and ids, for the real Qwen3 tokenizer and for tokenizer.json variants exercising other
// normalizers, pre-tokenizers, Split behaviors, added-token flags and ignore_merges.
#include <gtest/gtest.h>

#include <filesystem>

#include "qwen3_fixture.h"
#include "synthetic_tokenizer.h"

namespace moe::tokenizer::testing {
namespace {

using Ids = std::vector<int32_t>;

const nlohmann::json& differential() {
  static const nlohmann::json data =
      // Located through the data directory's absolute path, not __FILE__, which a compiler
      // cache may rewrite to a relative one.
      read_json_file((std::filesystem::path(MOE_TEST_DATA_DIR).parent_path() / "tokenizer" /
                      "hf_differential.json")
                         .string());
  return data;
}

// Checks every encode and decode case of `cases` on `tok`; `label` names the tokenizer in failures.
void expect_matches(const Tokenizer& tok, const nlohmann::json& cases, const std::string& label) {
  ASSERT_FALSE(cases.at("encode").empty());
  for (const auto& c : cases.at("encode")) {
    const std::string text = c.at("text");
    EXPECT_EQ(tok.encode(text), c.at("ids").get<Ids>()) << label << " text: " << nlohmann::json(text).dump();
    EXPECT_EQ(tok.encode(text, /*parse_special=*/false), c.at("ids_split_special").get<Ids>())
        << label << " (split special) text: " << nlohmann::json(text).dump();
  }
  for (const auto& c : cases.at("decode")) {
    const Ids ids = c.at("ids");
    EXPECT_EQ(tok.decode(ids), c.at("decoded").get<std::string>()) << label << " ids: " << c.at("ids").dump();
    EXPECT_EQ(tok.decode(ids, /*skip_special=*/true), c.at("decoded_skip_special").get<std::string>())
        << label << " ids: " << c.at("ids").dump();
  }
}

TEST(HfDifferential, Qwen3RandomTextsAndIds) { expect_matches(qwen3_tokenizer(), differential().at("qwen3"), "qwen3"); }

TEST(HfDifferential, TokenizerVariants) {
  const nlohmann::json& data = differential();
  ASSERT_GE(data.at("variants").size(), 5u);
  for (const auto& variant : data.at("variants")) {
    nlohmann::json model = data.at("base_model");
    model.update(variant.at("model_fields"));
    const nlohmann::json file = {{"added_tokens", variant.at("added_tokens")},
                                 {"normalizer", variant.at("normalizer")},
                                 {"pre_tokenizer", variant.at("pre_tokenizer")},
                                 {"decoder", {{"type", "ByteLevel"}}},
                                 {"model", model}};
    TempDir dir;
    const Tokenizer tok = Tokenizer::load(dir.write("tokenizer.json", file.dump()));
    expect_matches(tok, variant, variant.at("name").get<std::string>());
  }
}

}  // namespace
}  // namespace moe::tokenizer::testing
