// The CPU and CUDA models, given the same forward batches, route every token of every MoE layer the
// same way (ids equal but for near-ties, weights within 1e-4; each model captures through its own
// copy engine, so the CUDA rows come out of its device buffer) and produce the same logits. The
// batches mix a whole prompt with a partial one, then a decode token beside a prompt's remainder
// and a new prompt whose slots run backwards. The fixtures run with their golden prompts; random
// checkpoints of each architecture add what the fixtures lack: head_dim 64 to 256, a dense layer,
// a 300-token prompt. Both again over expert-parallel shards of one random placement (the CPU's
// grouped runner against the GPU's shards). Skipped where no GPU is visible.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <string>
#include <nlohmann/json.hpp>
#include <random>

#include "capture/routed_experts_capturer.h"
#include "common/json_file.h"
#include "cuda/device.h"
#include "model/random_checkpoint.h"
#include "moe/expert_placement.h"
#include "support/golden_support.h"
#include "support/placement_file.h"
#include "worker/load_model_on_device.h"

namespace moe::testing {
namespace {

constexpr int32_t kSlotsPerCase = 512;
constexpr int64_t kSlots = 3 * kSlotsPerCase;

// A model with its own KV cache and routing capture (its own copy engine, router weights kept), fed
// the same batches as the other.
struct Runner {
  explicit Runner(std::unique_ptr<Model> loaded)
      : model(std::move(loaded)),
        kv(model->make_kv_cache(kSlots)),
        capturer(model->make_copy_engine(
            {model->config().num_moe_layers(), kSlots, model->config().num_experts_per_tok, true}, {})) {}

  void forward(const ForwardBatch& batch) {
    capturer.begin_step(step, batch.num_tokens());
    model->forward(batch, kv, logits, &capturer);
    capturer.end_step();
    std::vector<StagedRouting> staged = capturer.drain();
    ASSERT_EQ(staged.size(), 1u);
    ASSERT_EQ(staged[0].step, step++);
    routing = std::move(staged[0]);
  }

  std::unique_ptr<Model> model;
  KvCache kv;
  RoutedExpertsCapturer capturer;
  uint64_t step = 0;
  StagedRouting routing;  // the last forward's rows [T, L, K]
  std::vector<float> logits;
};

// Rank k of a token may hold another expert only at a near-tie: the CPU's weights of ranks k and
// k ± 1 within 1e-4 (an order swap), or k the last rank (the k-th and (k+1)-th experts tie: the
// weights then still agree).
void expect_same_routing(const StagedRouting& cpu, const StagedRouting& cuda) {
  ASSERT_EQ(cpu.num_tokens, cuda.num_tokens);
  ASSERT_EQ(cpu.num_moe_layers, cuda.num_moe_layers);
  ASSERT_EQ(cpu.top_k, cuda.top_k);
  ASSERT_EQ(cpu.ids.size(), cuda.ids.size());
  ASSERT_EQ(cuda.weights.size(), cuda.ids.size());
  const int L = cpu.num_moe_layers, K = cpu.top_k;
  for (size_t i = 0; i < cpu.ids.size(); ++i) {
    const int64_t row = static_cast<int64_t>(i) / K;
    const int k = static_cast<int>(i % K);
    const std::string where =
        "token " + std::to_string(row / L) + " layer " + std::to_string(row % L) + " rank " + std::to_string(k);
    EXPECT_NEAR(cuda.weights[i], cpu.weights[i], 1e-4) << where;
    if (cuda.ids[i] == cpu.ids[i]) continue;
    const bool tie_before = k > 0 && std::fabs(cpu.weights[i] - cpu.weights[i - 1]) < 1e-4f;
    const bool tie_after = k + 1 < K && std::fabs(cpu.weights[i] - cpu.weights[i + 1]) < 1e-4f;
    EXPECT_TRUE(tie_before || tie_after || k == K - 1)
        << where << ": CUDA routed to expert " << cuda.ids[i] << ", the CPU to " << cpu.ids[i];
  }
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

// Feeds both models of `model_dir` the same two steps and compares each. Step 1: prompt 0 whole
// (sampled), the first half of prompt 1 (not sampled). Step 2: `decode` as prompt 0's next token,
// the rest of prompt 1, prompt 2 on backward slots. `options` (the expert shards) go to both models.
void expect_models_agree(const std::string& model_dir, const std::array<std::vector<int32_t>, 3>& prompts,
                         int32_t decode, const ModelOptions& options = {}) {
  ModelOptions cuda_options = options;
  cuda_options.device = Device::Cuda;
  Runner cpu(Model::load(model_dir, options)), gpu(load_model_on_device(model_dir, cuda_options));
  const auto& [p0, p1, p2] = prompts;
  const size_t half = p1.size() / 2;
  ForwardBatch first;
  first.add_sequence(p0, slots(0, p0.size()), true);
  first.add_sequence({p1.begin(), p1.begin() + half}, slots(1, half), false);
  ForwardBatch second;
  second.add_sequence({decode}, slots(0, p0.size() + 1), true);
  second.add_sequence({p1.begin() + half, p1.end()}, slots(1, p1.size()), true);
  second.add_sequence(p2, slots(2, p2.size(), true), true);
  for (const ForwardBatch* batch : {&first, &second}) {
    ASSERT_NO_FATAL_FAILURE(cpu.forward(*batch));
    ASSERT_NO_FATAL_FAILURE(gpu.forward(*batch));
    expect_same_routing(cpu.routing, gpu.routing);
    expect_logits_close(cpu.logits, gpu.logits);
  }
}

class CudaCpuAgreementTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

// ep_size shards of a random placement of the model's experts, written where both models read it.
struct RandomShards {
  RandomShards(const std::string& model_dir, int ep_size)
      : file(ExpertPlacement::random(load_model_config(model_dir).num_experts, ep_size, 31 + ep_size),
             "agreement") {
    options.ep_size = ep_size;
    options.expert_placement_file = file.path();
  }
  PlacementFile file;
  ModelOptions options;
};

TEST_P(CudaCpuAgreementTest, FixtureOnMixedBatches) {
  const Golden golden = load_golden(GetParam());
  ASSERT_GE(golden.cases.size(), 3u);
  const std::array<std::vector<int32_t>, 3> prompts = {golden.cases[0].prompt_ids, golden.cases[1].prompt_ids,
                                                       golden.cases[2].prompt_ids};
  expect_models_agree(golden.model_dir, prompts, golden.cases[0].output_ids[0]);
  for (int ep : {2, 4}) {
    SCOPED_TRACE("ep " + std::to_string(ep));
    const RandomShards shards(golden.model_dir, ep);
    expect_models_agree(golden.model_dir, prompts, golden.cases[0].output_ids[0], shards.options);
  }
}

// The fixture's config at larger shapes: 8 query heads over 2 KV heads of head_dim 64 (Qwen3-MoE),
// 256 (Mixtral) or 128 (Qwen2-MoE), 16 experts, and for the Qwen families a dense middle layer.
nlohmann::json larger_config(const std::string& fixture) {
  nlohmann::json config = read_json_file(std::string(MOE_TEST_DATA_DIR) + "/" + fixture + "/config.json");
  const bool mixtral = config["architectures"][0] == "MixtralForCausalLM";
  const bool qwen2 = config["architectures"][0] == "Qwen2MoeForCausalLM";
  config["vocab_size"] = 1024;
  config["hidden_size"] = 256;
  config["num_attention_heads"] = 8;
  config["num_key_value_heads"] = 2;
  config["head_dim"] = mixtral ? 256 : qwen2 ? 128 : 64;
  config["num_experts"] = 16;
  config["num_experts_per_tok"] = 4;
  config["intermediate_size"] = 384;
  config["moe_intermediate_size"] = 128;
  if (qwen2) config["shared_expert_intermediate_size"] = 192;
  if (!mixtral) config["mlp_only_layers"] = {1};
  return config;
}

TEST_P(CudaCpuAgreementTest, RandomCheckpointAtLargerShapes) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("moe_cuda_agreement_" + std::to_string(::getpid()));
  RandomCheckpointOptions options;
  options.seed = 11;
  write_random_checkpoint(larger_config(GetParam()), dir.string(), options);
  std::mt19937 random(5);
  std::uniform_int_distribution<int32_t> token(0, 1023);
  std::array<std::vector<int32_t>, 3> prompts;
  const std::array<size_t, 3> lengths = {300, 41, 77};
  for (size_t i = 0; i < prompts.size(); ++i)
    for (size_t t = 0; t < lengths[i]; ++t) prompts[i].push_back(token(random));
  const int32_t decode = token(random);
  expect_models_agree(dir.string(), prompts, decode);
  {
    SCOPED_TRACE("ep 4");
    const RandomShards shards(dir.string(), 4);
    expect_models_agree(dir.string(), prompts, decode, shards.options);
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaCpuAgreementTest, ::testing::ValuesIn(kGoldenFixtures), fixture_test_name);

}  // namespace
}  // namespace moe::testing
