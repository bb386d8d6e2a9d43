// A checkpoint's fingerprint (model/model_fingerprint.h) follows its bytes, not only its files' names
// and sizes: two checkpoints of one shape and equal file sizes whose weights differ (successive
// training checkpoints) have different fingerprints; copies of one checkpoint have the same.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "common/error.h"
#include "model/model_fingerprint.h"
#include "model/random_checkpoint.h"

namespace moe {
namespace {

namespace fs = std::filesystem;

// A checkpoint directory of one safetensors file: an embedding of `rows` x 512 float32 values (2 KiB a
// row, so a large one is sampled, not read whole) and a small norm.
class FingerprintDir {
 public:
  explicit FingerprintDir(const std::string& name)
      : dir_(fs::temp_directory_path() / ("moe_fingerprint_" + name + "_" + std::to_string(::getpid()))) {
    fs::create_directories(dir_);
    std::ofstream(dir_ / "config.json") << R"({"hidden_size": 512})";
  }
  ~FingerprintDir() { fs::remove_all(dir_); }
  // Weights whose every value is `value`, but values[changed] (-1: none) is `other`.
  void write(int64_t rows, float value, int64_t changed = -1, float other = 0.0f,
             const std::string& norm = "model.norm.weight") const {
    std::vector<float> embedding(static_cast<size_t>(rows * 512), value);
    if (changed >= 0) embedding.at(static_cast<size_t>(changed)) = other;
    write_safetensors((dir_ / "model.safetensors").string(),
                      {make_tensor("model.embed_tokens.weight", DType::F32, {rows, 512}, embedding),
                       make_tensor(norm, DType::F32, {512}, std::vector<float>(512, 1.0f))});
  }
  uint64_t fingerprint() const { return model_fingerprint(dir_.string()); }
  const fs::path& path() const { return dir_; }

 private:
  fs::path dir_;
};

TEST(ModelFingerprint, CopiesOfOneCheckpointHaveOneFingerprint) {
  const FingerprintDir a("copy_a"), b("copy_b");
  a.write(4, 0.5f);
  b.write(4, 0.5f);
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  EXPECT_EQ(a.fingerprint(), a.fingerprint());
  std::ofstream(a.path() / "notes.txt") << "not a weight file";
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
}

TEST(ModelFingerprint, EqualSizesWithOtherWeightsGiveAnotherFingerprint) {
  const FingerprintDir a("weights_a"), b("weights_b");
  a.write(4, 0.5f);
  b.write(4, 0.5f, 777, 0.25f);  // one value of a small tensor (read whole)
  ASSERT_EQ(fs::file_size(a.path() / "model.safetensors"), fs::file_size(b.path() / "model.safetensors"));
  EXPECT_NE(a.fingerprint(), b.fingerprint());
  b.write(4, 0.5000001f);  // every value, by one float32 step: a training step
  EXPECT_NE(a.fingerprint(), b.fingerprint());
}

// A 4 MiB tensor is sampled (its first and last 4 KiB, and 4 KiB at every MiB): a step that changes
// every value is seen, as is a change in a sample; the samples keep the cost bounded.
TEST(ModelFingerprint, ALargeTensorIsToldApartByItsSamples) {
  const FingerprintDir a("large_a"), b("large_b");
  const int64_t rows = 2048;  // 4 MiB
  a.write(rows, 0.5f);
  b.write(rows, 0.5f);
  ASSERT_EQ(a.fingerprint(), b.fingerprint());
  b.write(rows, 0.5000001f);
  EXPECT_NE(a.fingerprint(), b.fingerprint());
  const int64_t second_mib = (int64_t{1} << 20) / 4;  // a float32 in the sample at 1 MiB
  for (const int64_t changed : {int64_t{0}, second_mib, rows * 512 - 1}) {
    b.write(rows, 0.5f, changed, 0.25f);
    EXPECT_NE(a.fingerprint(), b.fingerprint()) << "value " << changed;
  }
}

TEST(ModelFingerprint, TheHeaderAndConfigCount) {
  const FingerprintDir a("header_a"), b("header_b");
  a.write(4, 0.5f);
  b.write(4, 0.5f, -1, 0.0f, "model.norm.weighu");  // a name of the same length
  ASSERT_EQ(fs::file_size(a.path() / "model.safetensors"), fs::file_size(b.path() / "model.safetensors"));
  EXPECT_NE(a.fingerprint(), b.fingerprint());
  b.write(4, 0.5f);
  ASSERT_EQ(a.fingerprint(), b.fingerprint());
  std::ofstream(b.path() / "config.json") << R"({"hidden_size": 513})";
  EXPECT_NE(a.fingerprint(), b.fingerprint());
}

TEST(ModelFingerprint, AMissingConfigOrABrokenWeightFileIsAnError) {
  const FingerprintDir a("broken");
  std::ofstream(a.path() / "model.safetensors") << "0123456789";
  EXPECT_THROW(a.fingerprint(), Error);
  fs::remove(a.path() / "config.json");
  EXPECT_THROW(a.fingerprint(), Error);
}

}  // namespace
}  // namespace moe
