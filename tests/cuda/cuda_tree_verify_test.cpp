// Draft trees through the CUDA model against the CPU model (whose tree verify
// tests/model/tree_verify_test.cpp checks against decoding each branch): the same tree beside a
// plain sequence gives the same logits and the same routing rows, with and without an expert limit
// (--max-tree-experts 4 keeps each layer of the pass within 4 experts, as the CPU's pool does, and
// leaves the plain sequence alone); a limit of every expert is no limit; a tree fed in two forwards
// (its first nodes' K/V already stored, as a STANDALONE draft grows one) equals the whole tree; and
// no tree batch ever runs as a CUDA graph. Skipped where no GPU is visible.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <optional>

#include "common/error.h"
#include "cuda/cuda_model.h"
#include "cuda/device.h"
#include "support/golden_support.h"
#include "support/recording_capture.h"

namespace moe::testing {
namespace {

// A tree of five nodes over a prompt: r -> a -> {b, d}, r -> c.
const std::vector<int32_t> kTreeTokens = {1000, 2000, 3000, 4000, 5000};
const std::vector<int32_t> kTreeParents = {-1, 0, 0, 1, 1};
constexpr int64_t kSlots = 64;
constexpr int32_t kOtherSlots = 30;  // the plain sequence's first slot

struct Pass {
  std::vector<float> logits;
  RecordingCapture routing;
};

class CudaTreeVerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
    golden_ = load_golden("qwen3-moe-tiny");
    cpu_ = Model::load(golden_.model_dir);
    ModelOptions options;
    options.device = Device::Cuda;
    gpu_ = std::make_unique<cuda::CudaModel>(golden_.model_dir, options);
    cpu_kv_.emplace(cpu_->make_kv_cache(kSlots));
    gpu_kv_.emplace(gpu_->make_kv_cache(kSlots));
    prompt_ = golden_.cases[0].prompt_ids;
    ForwardBatch prefill;
    prefill.add_sequence(prompt_, prompt_slots(), false);
    Pass ignored;
    run_both(prefill, ignored, ignored);
  }

  std::vector<int32_t> prompt_slots() const {
    std::vector<int32_t> slots(prompt_.size());
    std::iota(slots.begin(), slots.end(), 1);
    return slots;
  }
  // The prompt's slots, then one per tree node.
  std::vector<int32_t> tree_slots() const {
    std::vector<int32_t> slots = prompt_slots();
    for (size_t i = 0; i < kTreeTokens.size(); ++i) slots.push_back(static_cast<int32_t>(prompt_.size() + 1 + i));
    return slots;
  }
  // The tree after the prompt, logits for every node, then (with_other) case 1's prompt as a plain
  // sequence from slot kOtherSlots.
  ForwardBatch tree_batch(int32_t max_tree_experts, bool with_other) const {
    ForwardBatch batch;
    batch.add_tree_sequence(kTreeTokens, tree_slots(), kTreeParents, true);
    if (with_other) {
      const std::vector<int32_t>& other = golden_.cases[1].prompt_ids;
      std::vector<int32_t> slots(other.size());
      std::iota(slots.begin(), slots.end(), kOtherSlots);
      batch.add_sequence(other, slots, true);
    }
    batch.max_tree_experts = max_tree_experts;
    return batch;
  }
  void run_gpu(const ForwardBatch& batch, Pass& pass) { gpu_->forward(batch, *gpu_kv_, pass.logits, &pass.routing); }
  void run_both(const ForwardBatch& batch, Pass& cpu, Pass& gpu) {
    cpu_->forward(batch, *cpu_kv_, cpu.logits, &cpu.routing);
    run_gpu(batch, gpu);
  }

  Golden golden_;
  std::unique_ptr<Model> cpu_;
  std::unique_ptr<cuda::CudaModel> gpu_;
  std::optional<KvCache> cpu_kv_, gpu_kv_;
  std::vector<int32_t> prompt_;
};

TEST_F(CudaTreeVerifyTest, TreeBesideAPlainSequenceMatchesTheCpuModel) {
  Pass cpu, gpu;
  run_both(tree_batch(0, true), cpu, gpu);
  expect_logits_close(cpu.logits, gpu.logits);
  EXPECT_EQ(cpu.routing.layers, gpu.routing.layers);
  EXPECT_EQ(gpu_->graphs_captured(), 0);
}

TEST_F(CudaTreeVerifyTest, ExpertLimitRoutesAsTheCpuModelDoes) {
  Pass free_cpu, free_gpu, cpu, gpu;
  run_both(tree_batch(0, true), free_cpu, free_gpu);
  run_both(tree_batch(4, true), cpu, gpu);
  const int64_t nodes = static_cast<int64_t>(kTreeTokens.size());
  const std::vector<size_t> unlimited = free_gpu.routing.distinct_experts(0, nodes);
  EXPECT_GT(*std::max_element(unlimited.begin(), unlimited.end()), 4u);  // the limit has something to do
  for (size_t n : gpu.routing.distinct_experts(0, nodes)) EXPECT_LE(n, 4u);
  EXPECT_EQ(cpu.routing.layers, gpu.routing.layers);
  expect_logits_close(cpu.logits, gpu.logits);
  // The plain sequence routes freely beside the limited pass.
  for (int64_t t = nodes; t < nodes + static_cast<int64_t>(golden_.cases[1].prompt_ids.size()); ++t)
    EXPECT_EQ(gpu.routing.row(t), free_gpu.routing.row(t)) << "token " << t;
}

TEST_F(CudaTreeVerifyTest, ALimitOfEveryExpertIsNoLimit) {
  Pass off, all;
  run_gpu(tree_batch(0, false), off);
  run_gpu(tree_batch(gpu_->config().num_experts, false), all);
  EXPECT_EQ(off.logits, all.logits);
  EXPECT_EQ(off.routing.layers, all.routing.layers);
}

TEST_F(CudaTreeVerifyTest, LimitsBelowTopKAreRefused) {
  std::vector<float> logits;
  EXPECT_THROW(gpu_->forward(tree_batch(gpu_->config().num_experts_per_tok - 1, false), *gpu_kv_, logits, nullptr), Error);
}

// Nodes r, a, c first, then b and d over them (their K/V already stored): b and d get the logits
// and routing of the whole tree's pass.
TEST_F(CudaTreeVerifyTest, ATreeFedInTwoForwardsEqualsTheWholeTree) {
  Pass whole, first, second;
  run_gpu(tree_batch(0, false), whole);
  ForwardBatch start;
  const std::vector<int32_t> slots = tree_slots();
  start.add_tree_sequence({kTreeTokens[0], kTreeTokens[1], kTreeTokens[2]}, {slots.begin(), slots.end() - 2},
                          {-1, 0, 0}, true);
  run_gpu(start, first);
  ForwardBatch rest;
  const auto P = static_cast<int32_t>(prompt_.size());
  rest.token_ids = {kTreeTokens[3], kTreeTokens[4]};
  rest.positions = {P + 2, P + 2};
  rest.sequences.push_back({2, slots, true, kTreeParents, 0});
  run_gpu(rest, second);
  const int64_t vocab = gpu_->config().vocab_size;
  expect_logits_close({whole.logits.begin() + 3 * vocab, whole.logits.end()}, second.logits);
  EXPECT_EQ(second.routing.row(0), whole.routing.row(3));
  EXPECT_EQ(second.routing.row(1), whole.routing.row(4));
}

// A one-node tree is shaped like a decode step, but its routing is limited: never a graph.
TEST_F(CudaTreeVerifyTest, OneNodeTreesNeverRunAsGraphs) {
  Pass cpu, gpu;
  ForwardBatch root;
  std::vector<int32_t> slots = prompt_slots();
  slots.push_back(static_cast<int32_t>(prompt_.size() + 1));
  root.add_tree_sequence({kTreeTokens[0]}, slots, {-1}, true);
  root.max_tree_experts = 4;
  std::vector<float> logits;
  for (int i = 0; i < 3; ++i) gpu_->forward(root, *gpu_kv_, logits, nullptr);
  EXPECT_EQ(gpu_->graphs_captured(), 0);
  run_both(root, cpu, gpu);
  EXPECT_EQ(cpu.routing.layers, gpu.routing.layers);
  for (size_t n : gpu.routing.distinct_experts(0, 1)) EXPECT_LE(n, 4u);
}

}  // namespace
}  // namespace moe::testing
