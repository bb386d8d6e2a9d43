// The GPU model's weight source: a rank's block of a checkpoint tensor is the file's bytes at that
// block, and --load-format dummy's block made on the device is, bit for bit, the same block of the CPU's
// Checkpoint::dummy (moe-make-checkpoint's checkpoint of that seed). Skipped where no GPU is visible.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cuda/device.h"
#include "cuda/weight_source.h"
#include "model/model_config.h"
#include "model/safetensors.h"
#include "support/golden_support.h"

namespace moe::testing {
namespace {

std::vector<uint16_t> download(const cuda::DeviceMatrix& m) {
  std::vector<uint16_t> host(static_cast<size_t>(m.rows * m.cols));
  cuda::check(cudaMemcpy(host.data(), m.bf16.data(), host.size() * 2, cudaMemcpyDeviceToHost), "download");
  return host;
}

// The block [rows) × [cols) of the bf16 [?, full_cols] tensor t.
std::vector<uint16_t> block_of(const TensorInfo& t, int64_t full_cols, IndexRange rows, IndexRange cols) {
  std::vector<uint16_t> block;
  const auto* data = static_cast<const uint16_t*>(t.data);
  for (int64_t r = rows.begin; r < rows.begin + rows.count; ++r)
    block.insert(block.end(), data + r * full_cols + cols.begin, data + r * full_cols + cols.begin + cols.count);
  return block;
}

constexpr const char* kExpertDown = "model.layers.1.mlp.experts.3.down_proj.weight";

TEST(CudaWeightSource, ABlockOfTheCheckpointIsTheFilesBytesThere) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const Golden golden = load_golden("qwen3-moe-tiny");
  const ModelConfig config = load_model_config(golden.model_dir);
  const Checkpoint checkpoint = Checkpoint::open(golden.model_dir);
  const int64_t H = config.hidden_size, W = config.moe_intermediate_size;
  ASSERT_EQ(checkpoint.tensor(kExpertDown).dtype, DType::BF16);
  const cuda::WeightSource weights(checkpoint);
  const IndexRange rows{1, H - 3}, cols{W / 2, W / 2};
  EXPECT_EQ(download(weights.matrix(kExpertDown, H, W, rows, cols)),
            block_of(checkpoint.tensor(kExpertDown), W, rows, cols));
  EXPECT_EQ(download(weights.matrix(kExpertDown, H, W, rows)), block_of(checkpoint.tensor(kExpertDown), W, rows, {0, W}));
}

TEST(CudaWeightSource, DummyWeightsMadeOnTheDeviceAreTheCpusBitForBit) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const ModelConfig config = load_model_config(load_golden("qwen3-moe-tiny").model_dir);
  const int64_t H = config.hidden_size, W = config.moe_intermediate_size, V = config.vocab_size;
  for (const uint64_t seed : {uint64_t{0}, uint64_t{12345}}) {
    const Checkpoint cpu = Checkpoint::dummy(config, seed);
    const cuda::WeightSource gpu(config, seed);
    EXPECT_EQ(download(gpu.matrix(kExpertDown, H, W, {2, H - 5}, {3, W - 7})),
              block_of(cpu.tensor(kExpertDown), W, {2, H - 5}, {3, W - 7}));
    EXPECT_EQ(download(gpu.matrix("model.embed_tokens.weight", V, H)),
              block_of(cpu.tensor("model.embed_tokens.weight"), H, {0, V}, {0, H}));
    EXPECT_EQ(gpu.host_vector("model.norm.weight", H), cpu.floats("model.norm.weight", {H}));
    const cuda::HostBlock host = gpu.host_block(kExpertDown, H, W, {4, 6}, {1, 9});
    EXPECT_EQ(host.bf16, block_of(cpu.tensor(kExpertDown), W, {4, 6}, {1, 9}));
  }
  EXPECT_THROW(cuda::WeightSource(config, 1).matrix("model.no_such.weight", 4, 4), Error);
  EXPECT_THROW(cuda::WeightSource(config, 1).matrix(kExpertDown, H + 1, W), Error);  // another shape
}

}  // namespace
}  // namespace moe::testing
