// Tokenizer files the engine cannot use fail with an error that names the file and the unsupported
// thing, and lists what is supported.
#include <gtest/gtest.h>

#include "common/error.h"
#include "synthetic_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace moe::tokenizer::testing {
namespace {

// Loads `contents` as tokenizer.json and returns the error message (fails if it loads).
std::string load_error(const std::string& contents) {
  TempDir dir;
  try {
    Tokenizer::load(dir.write("tokenizer.json", contents));
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(dir.path() + "/tokenizer.json"), std::string::npos) << message;
    return message;
  }
  ADD_FAILURE() << "loaded without error";
  return "";
}

void expect_contains(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
}

TEST(BadTokenizerFiles, NotJson) {
  expect_contains(load_error("{\"model\": {\"type\": \"BPE\", "), "not valid JSON");
  expect_contains(load_error("[1, 2, 3]"), "no \"model\"");
}

TEST(BadTokenizerFiles, UnknownModelType) {
  nlohmann::json file = byte_level_tokenizer_json();
  file["model"]["type"] = "WordPiece";
  const std::string message = load_error(file.dump());
  expect_contains(message, "model type 'WordPiece'");
  expect_contains(message, "supported: BPE");
}

TEST(BadTokenizerFiles, UnknownPreTokenizer) {
  nlohmann::json file = byte_level_tokenizer_json();
  file["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "▁"}};
  const std::string message = load_error(file.dump());
  expect_contains(message, "pre_tokenizer type 'Metaspace'");
  expect_contains(message, "Split, ByteLevel, Sequence");
}

TEST(BadTokenizerFiles, PreTokenizerWithoutByteLevel) {
  nlohmann::json file = byte_level_tokenizer_json();
  file["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\s+"}}}, {"behavior", "Removed"}};
  expect_contains(load_error(file.dump()), "no ByteLevel step");
}

TEST(BadTokenizerFiles, UnknownNormalizerDecoderAndBehavior) {
  nlohmann::json file = byte_level_tokenizer_json();
  file["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Precompiled"}}}}};
  expect_contains(load_error(file.dump()), "normalizer type 'Precompiled'");
  file = byte_level_tokenizer_json();
  file["decoder"] = {{"type", "WordPiece"}};
  expect_contains(load_error(file.dump()), "decoder type 'WordPiece' (supported: ByteLevel)");
  file = byte_level_tokenizer_json();
  file["pre_tokenizer"] = {{"type", "Sequence"},
                           {"pretokenizers", {{{"type", "Split"}, {"pattern", {{"Regex", "x"}}}, {"behavior", "Sideways"}},
                                              {{"type", "ByteLevel"}}}}};
  expect_contains(load_error(file.dump()), "Split behavior 'Sideways'");
}

TEST(BadTokenizerFiles, BrokenVocabularyOrMerges) {
  nlohmann::json file = byte_level_tokenizer_json({}, {"a zz"});
  expect_contains(load_error(file.dump()), "uses 'zz', which is not in the vocabulary");
  file = byte_level_tokenizer_json();
  file["model"]["vocab"].erase("Ġ");
  expect_contains(load_error(file.dump()), "no token for byte 32");
  file = byte_level_tokenizer_json();
  file["model"]["vocab"] = "not an object";
  expect_contains(load_error(file.dump()), "malformed tokenizer.json");
}

// Found by fuzz_tokenizer_json: a vocabulary id near 2^31 sized the per-id tables at tens of
// gigabytes; a fractional or negative id was converted silently.
TEST(BadTokenizerFiles, VocabularyIdsOutOfRange) {
  for (const nlohmann::json& id : {nlohmann::json(1900000000), nlohmann::json(16777216), nlohmann::json(-3),
                                   nlohmann::json(2.5), nlohmann::json("7")}) {
    nlohmann::json file = byte_level_tokenizer_json();
    file["model"]["vocab"]["huge"] = id;
    const std::string message = load_error(file.dump());
    expect_contains(message, "token 'huge' has id " + id.dump());
    expect_contains(message, "[0, 16777216)");
  }
}

TEST(BadTokenizerFiles, MissingFile) {
  TempDir dir;
  EXPECT_THROW(Tokenizer::load(dir.path()), Error);
}

}  // namespace
}  // namespace moe::tokenizer::testing
