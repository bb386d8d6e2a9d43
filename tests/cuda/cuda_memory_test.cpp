// The CUDA model's memory at start: a KV pool or a step workspace larger than the device can hold
// is refused when it is made, naming the sizes and the device's free memory, and once the
// workspace of a step size is reserved, steps up to that size (prefill, mixed, decode) allocate no
// device memory; one slot's bytes, which the pool's sizing divides by, are a key and a value row per
// layer. Skipped where no GPU is visible.
#include <cuda_runtime_api.h>

#include <numeric>
#include <utility>

#include "common/error.h"
#include "cuda/cuda_model.h"
#include "cuda/device.h"
#include "model/kv_row_width.h"
#include "support/golden_support.h"

namespace moe::testing {
namespace {

class CudaMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
    golden_ = load_golden("qwen3-moe-tiny");
    size_t free = 0;
    cuda::check(cudaMemGetInfo(&free, &total_bytes_), "cudaMemGetInfo");
  }

  std::unique_ptr<cuda::CudaModel> load(KernelDType products) const {
    ModelOptions options;
    options.device = Device::Cuda;
    options.kernel_dtype = products;
    return std::make_unique<cuda::CudaModel>(golden_.model_dir, options);
  }

  Golden golden_;
  size_t total_bytes_ = 0;
};

TEST_F(CudaMemoryTest, APoolLargerThanTheDeviceIsRefusedWithTheNumbers) {
  const auto model = load(KernelDType::F32);
  const ModelConfig& c = model->config();
  const int64_t slot_bytes = int64_t{2} * c.num_hidden_layers * c.num_key_value_heads * c.head_dim * 4;
  const int64_t too_many = 2 * static_cast<int64_t>(total_bytes_) / slot_bytes;
  try {
    model->make_kv_cache(too_many);
    FAIL() << "a pool of twice the device's memory was made";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("KV pool of " + std::to_string(too_many) + " token slots"), std::string::npos) << message;
    EXPECT_NE(message.find("float32"), std::string::npos) << message;
    EXPECT_NE(message.find("were free"), std::string::npos) << message;
  }
  // The model still makes a pool that fits, and runs on it.
  KvCache kv = model->make_kv_cache(64);
  model->reserve_step_workspace(64);
  const std::vector<int32_t>& prompt = golden_.cases.at(0).prompt_ids;
  std::vector<int32_t> slots(prompt.size());
  std::iota(slots.begin(), slots.end(), 0);
  ForwardBatch batch;
  batch.add_sequence(prompt, slots, true);
  std::vector<float> logits;
  model->forward(batch, kv, logits, nullptr);
  EXPECT_EQ(logits.size(), static_cast<size_t>(c.vocab_size));
}

// The pool --mem-fraction-static sizes is divided by what one slot takes: a GQA layer's key and value
// row, in the products' K/V dtype (the padding slot is the pool's, not each slot's).
TEST_F(CudaMemoryTest, ASlotTakesOneKeyAndValueRowPerLayer) {
  for (const auto [products, element_bytes] : {std::pair{KernelDType::F32, 4}, std::pair{KernelDType::BF16, 2}}) {
    const auto model = load(products);
    EXPECT_EQ(model->device_memory()->kv_bytes_per_token, kv_bytes_per_token(model->config(), element_bytes));
  }
}

TEST_F(CudaMemoryTest, AWorkspaceLargerThanTheDeviceIsRefusedWithTheNumbers) {
  const auto model = load(KernelDType::BF16);
  model->make_kv_cache(64);
  // Logits alone for this many rows take the device's memory.
  const int64_t tokens = static_cast<int64_t>(total_bytes_) / (model->config().vocab_size * 4) + 1;
  try {
    model->reserve_step_workspace(tokens);
    FAIL() << "a workspace larger than the device was reserved";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("workspace of a " + std::to_string(tokens) + "-token step"), std::string::npos) << message;
    EXPECT_NE(message.find("64 token slots"), std::string::npos) << message;
  }
}

// Bf16 and float32 alike (their steps take different kernels and buffers): after the reserve, a
// prefill of the reserved size, a mixed step and decode steps leave the allocation count alone.
TEST_F(CudaMemoryTest, StepsUpToTheReservedSizeAllocateNothing) {
  constexpr int64_t kMaxTokens = 300;  // above the grouped kernels' 256: the large-step path
  for (const KernelDType products : {KernelDType::F32, KernelDType::BF16}) {
    SCOPED_TRACE(kernel_dtype_name(products));
    const auto model = load(products);
    KvCache kv = model->make_kv_cache(1024);
    model->reserve_step_workspace(kMaxTokens);
    const uint64_t allocations = cuda::device_allocation_count();
    std::vector<int32_t> prompt, slots;
    for (int32_t p = 0; p < kMaxTokens; ++p) {
      prompt.push_back(golden_.cases.at(0).prompt_ids.at(p % golden_.cases.at(0).prompt_ids.size()));
      slots.push_back(p);
    }
    std::vector<float> logits;
    ForwardBatch prefill;
    prefill.add_sequence(prompt, slots, true);
    model->forward(prefill, kv, logits, nullptr);
    for (int step = 0; step < 4; ++step) {
      ForwardBatch decode;
      for (int s = 0; s < 3; ++s) {
        std::vector<int32_t> own(slots.begin(), slots.begin() + 10 + step);
        own.back() = static_cast<int32_t>(400 + s * 10 + step);
        decode.add_sequence({prompt[static_cast<size_t>(step)]}, own, true);
      }
      model->forward(decode, kv, logits, nullptr);
    }
    EXPECT_EQ(cuda::device_allocation_count(), allocations);
  }
}

}  // namespace
}  // namespace moe::testing
