// The CPU and CUDA models, given the same forward batches, route every token of every MoE layer the
// same way (ids equal but for near-ties, weights within 1e-4) and produce the same logits. The
// batches mix a whole prompt with a partial one, then a decode token beside a prompt's remainder
// and a new prompt whose slots run backwards. Skipped where no GPU is visible.
#include <algorithm>
#include <cmath>
#include <map>

#include "cuda/device.h"
#include "support/golden_support.h"
#include "worker/load_model.h"

namespace moe::testing {
namespace {

constexpr int64_t kSlots = 256;
constexpr int32_t kSlotsPerCase = 64;

// One forward's routing, layer by layer, as the model handed it to the capture hook.
struct RecordedRouting final : RoutingCapture {
  struct Layer {
    int64_t tokens = 0;
    int top_k = 0;
    std::vector<int32_t> ids;
    std::vector<float> weights;
  };
  std::map<int, Layer> layers;

  void on_routing(int layer, int64_t num_tokens, int top_k, const int32_t* ids, const float* weights) override {
    const int64_t n = num_tokens * top_k;
    layers[layer] = {num_tokens, top_k, {ids, ids + n}, {weights, weights + n}};
  }
};

// A model with its own KV cache, fed the same batches as the other.
struct Runner {
  explicit Runner(std::unique_ptr<Model> loaded) : model(std::move(loaded)), kv(model->make_kv_cache(kSlots)) {}

  void forward(const ForwardBatch& batch) {
    routing.layers.clear();
    model->forward(batch, kv, logits, &routing);
  }

  std::unique_ptr<Model> model;
  KvCache kv;
  RecordedRouting routing;
  std::vector<float> logits;
};

// Rank k of a token may hold another expert only at a near-tie: the CPU's weights of ranks k and
// k ± 1 within 1e-4 (an order swap), or k the last rank (the k-th and (k+1)-th experts tie: the
// weights then still agree).
void expect_same_routing(const RecordedRouting& cpu, const RecordedRouting& cuda) {
  ASSERT_EQ(cpu.layers.size(), cuda.layers.size());
  for (const auto& [layer, want] : cpu.layers) {
    const RecordedRouting::Layer& got = cuda.layers.at(layer);
    ASSERT_EQ(got.tokens, want.tokens);
    ASSERT_EQ(got.top_k, want.top_k);
    const int K = want.top_k;
    for (int64_t i = 0; i < want.tokens * K; ++i) {
      EXPECT_NEAR(got.weights[i], want.weights[i], 1e-4) << "layer " << layer << " pair " << i;
      if (got.ids[i] == want.ids[i]) continue;
      const int k = static_cast<int>(i % K);
      const bool tie_before = k > 0 && std::fabs(want.weights[i] - want.weights[i - 1]) < 1e-4f;
      const bool tie_after = k + 1 < K && std::fabs(want.weights[i] - want.weights[i + 1]) < 1e-4f;
      EXPECT_TRUE(tie_before || tie_after || k == K - 1)
          << "layer " << layer << " token " << i / K << " rank " << k << ": CUDA routed to expert " << got.ids[i]
          << ", the CPU to " << want.ids[i];
    }
  }
}

void expect_same_logits(const std::vector<float>& cpu, const std::vector<float>& cuda) {
  ASSERT_EQ(cpu.size(), cuda.size());
  float worst = 0.0f;
  for (size_t i = 0; i < cpu.size(); ++i) worst = std::max(worst, std::fabs(cpu[i] - cuda[i]));
  EXPECT_LT(worst, 1e-3f);
}

// The slots of case c's positions 0 .. count - 1: ascending, or backwards through its range.
std::vector<int32_t> slots(int c, size_t count, bool backwards = false) {
  std::vector<int32_t> out;
  for (size_t p = 0; p < count; ++p) {
    const auto offset = static_cast<int32_t>(p);
    out.push_back(c * kSlotsPerCase + (backwards ? kSlotsPerCase - 1 - offset : offset));
  }
  return out;
}

class CudaCpuAgreementTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(CudaCpuAgreementTest, SameRoutingAndLogitsForMixedBatches) {
  const Golden golden = load_golden(GetParam());
  ASSERT_GE(golden.cases.size(), 3u);
  const auto& p0 = golden.cases[0].prompt_ids;
  const auto& p1 = golden.cases[1].prompt_ids;
  const auto& p2 = golden.cases[2].prompt_ids;
  ModelOptions cuda_options;
  cuda_options.device = Device::Cuda;
  Runner cpu(Model::load(golden.model_dir)), gpu(load_model(golden.model_dir, cuda_options));

  // Step 1: case 0's whole prompt (sampled), the first half of case 1's (not sampled).
  const size_t half = p1.size() / 2;
  ForwardBatch first;
  first.add_sequence(p0, slots(0, p0.size()), true);
  first.add_sequence({p1.begin(), p1.begin() + half}, slots(1, half), false);
  cpu.forward(first);
  gpu.forward(first);
  expect_same_routing(cpu.routing, gpu.routing);
  expect_same_logits(cpu.logits, gpu.logits);

  // Step 2: a decode token of case 0, the rest of case 1's prompt, case 2's prompt on backward slots.
  ForwardBatch second;
  second.add_sequence({golden.cases[0].output_ids[0]}, slots(0, p0.size() + 1), true);
  second.add_sequence({p1.begin() + half, p1.end()}, slots(1, p1.size()), true);
  second.add_sequence(p2, slots(2, p2.size(), true), true);
  cpu.forward(second);
  gpu.forward(second);
  expect_same_routing(cpu.routing, gpu.routing);
  expect_same_logits(cpu.logits, gpu.logits);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaCpuAgreementTest, ::testing::ValuesIn(kGoldenFixtures), fixture_test_name);

}  // namespace
}  // namespace moe::testing
