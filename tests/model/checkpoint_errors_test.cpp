// Every kind of broken checkpoint fails with an error naming the file and the tensor.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/error.h"
#include "model/random_checkpoint.h"
#include "model/safetensors.h"

namespace moe {
namespace {

namespace fs = std::filesystem;

class CheckpointErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("moe_ckpt_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string file() const { return (dir_ / "model.safetensors").string(); }

  void write_raw(const std::string& bytes) { std::ofstream(file(), std::ios::binary) << bytes; }

  // The message of the error opening the checkpoint (fails the test if it opens).
  std::string open_error() {
    try {
      Checkpoint::open(dir_.string());
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "checkpoint opened without error";
    return "";
  }

  fs::path dir_;
};

std::string header_file(const std::string& json, size_t data_bytes) {
  std::string out(8, '\0');
  const uint64_t len = json.size();
  std::memcpy(out.data(), &len, 8);
  return out + json + std::string(data_bytes, '\0');
}

TEST_F(CheckpointErrors, ValidFileRoundTrips) {
  write_safetensors(file(), {make_tensor("w", DType::BF16, {2, 3}, {1, 2, 3, 4, 5, 6.5f}),
                             make_tensor("b", DType::F32, {3}, {0.25f, -1, 7})});
  const Checkpoint ckpt = Checkpoint::open(dir_.string());
  const WeightView w = ckpt.matrix("w", 2, 3);
  EXPECT_EQ(w.dtype, DType::BF16);
  EXPECT_FLOAT_EQ(w.at(1, 2), 6.5f);
  EXPECT_EQ(ckpt.vector("b", 3), (VectorParam{0.25f, -1, 7}));
}

// Half-precision matrices come back tiled, once: a second request (a tied lm_head) shares the
// copy. Float32 ones stay where the file maps them.
TEST_F(CheckpointErrors, HalfPrecisionMatricesAreTiledOnce) {
  write_safetensors(file(), {make_tensor("w", DType::BF16, {5, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}),
                             make_tensor("f", DType::F32, {1, 2}, {0.5f, 2})});
  const Checkpoint ckpt = Checkpoint::open(dir_.string());
  const WeightView w = ckpt.matrix("w", 5, 3);
  EXPECT_EQ(w.layout, WeightLayout::Tiled);
  EXPECT_NE(w.data, ckpt.tensor("w").data);
  EXPECT_EQ(ckpt.matrix("w", 5, 3).data, w.data);
  std::vector<float> row(3);
  w.row_to_float(4, row.data());
  EXPECT_EQ(row, (std::vector<float>{13, 14, 15}));
  const WeightView f = ckpt.matrix("f", 1, 2);
  EXPECT_EQ(f.layout, WeightLayout::RowMajor);
  EXPECT_EQ(f.data, ckpt.tensor("f").data);
}

TEST_F(CheckpointErrors, TruncatedFileNamesFileAndTensor) {
  write_safetensors(file(), {make_tensor("model.norm.weight", DType::F32, {64}, std::vector<float>(64, 1.0f))});
  fs::resize_file(file(), fs::file_size(file()) - 10);
  const std::string msg = open_error();
  EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.norm.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST_F(CheckpointErrors, FileShorterThanItsHeaderLength) {
  write_raw(std::string("\xff\x00\x00\x00\x00\x00\x00\x00{}", 10));
  EXPECT_NE(open_error().find("truncated"), std::string::npos);
}

TEST_F(CheckpointErrors, HeaderThatIsNotJson) {
  write_raw(header_file("this is not json", 0));
  const std::string msg = open_error();
  EXPECT_NE(msg.find("not JSON"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
}

TEST_F(CheckpointErrors, UnsupportedDtypeNamesTensorAndDtype) {
  write_raw(header_file(R"({"lm_head.weight":{"dtype":"I8","shape":[2],"data_offsets":[0,2]}})", 2));
  const std::string msg = open_error();
  EXPECT_NE(msg.find("lm_head.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("I8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("BF16"), std::string::npos) << "lists the supported dtypes: " << msg;
}

TEST_F(CheckpointErrors, OffsetsThatDisagreeWithShape) {
  write_raw(header_file(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}})", 8));
  EXPECT_NE(open_error().find("'x'"), std::string::npos);
}

TEST_F(CheckpointErrors, MissingTensorAndWrongShape) {
  write_safetensors(file(), {make_tensor("present", DType::F32, {2, 2}, {1, 2, 3, 4})});
  const Checkpoint ckpt = Checkpoint::open(dir_.string());
  try {
    ckpt.matrix("absent.weight", 2, 2);
    FAIL() << "missing tensor accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("absent.weight"), std::string::npos) << e.what();
  }
  try {
    ckpt.matrix("present", 4, 1);
    FAIL() << "wrong shape accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("present"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 2]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
  }
}

TEST_F(CheckpointErrors, IndexListingATensorNoShardHolds) {
  write_safetensors((dir_ / "shard-1.safetensors").string(), {make_tensor("a", DType::F32, {1}, {1})});
  std::ofstream(dir_ / "model.safetensors.index.json")
      << R"({"weight_map": {"a": "shard-1.safetensors", "b": "shard-1.safetensors"}})";
  const std::string msg = open_error();
  EXPECT_NE(msg.find("'b'"), std::string::npos) << msg;
}

// A shape whose byte count wraps 64 bits (2^62 * 2^2 elements of 2 bytes = 2^65 = 0 mod 2^64) once
// matched data_offsets [0, 0] and gave a tensor that reads far past the file.
TEST_F(CheckpointErrors, ShapeWhoseByteCountOverflows) {
  write_raw(header_file(R"({"w": {"dtype": "BF16", "shape": [4611686018427387904, 4], "data_offsets": [0, 0]}})", 0));
  const std::string msg = open_error();
  EXPECT_NE(msg.find("'w'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("too large"), std::string::npos) << msg;
}

// An index may only name files inside the model directory: "../" or an absolute path is refused
// before anything is opened.
TEST_F(CheckpointErrors, IndexNamingAShardOutsideTheDirectory) {
  write_safetensors((dir_ / "shard-1.safetensors").string(), {make_tensor("a", DType::F32, {1}, {1})});
  for (const std::string shard : {"../shard-1.safetensors", "sub/../../x.safetensors", "/etc/passwd", ""}) {
    std::ofstream(dir_ / "model.safetensors.index.json") << R"({"weight_map": {"a": ")" + shard + R"("}})";
    const std::string msg = open_error();
    EXPECT_NE(msg.find("'" + shard + "' is not a file inside the model directory"), std::string::npos) << msg;
  }
  std::ofstream(dir_ / "model.safetensors.index.json") << R"({"weight_map": {"a": 7}})";
  EXPECT_NE(open_error().find("not a file name"), std::string::npos);
}

TEST_F(CheckpointErrors, NoCheckpointFiles) { EXPECT_NE(open_error().find("model.safetensors"), std::string::npos); }

}  // namespace
}  // namespace moe
