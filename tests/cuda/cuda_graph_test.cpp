// CUDA graphs of decode steps: a model replaying graphs and one running every step uncaptured, fed
// the same decode batches, give the same logits and the same routing rows, while routing capture is
// switched on and off between replays (the capture flag and the capture buffer's address are part
// of a graph's key, never frozen into a graph used for another), and the graphed model captures far
// fewer graphs than it runs steps; the same over 2 expert-parallel shards (the graphs capture the
// sharded MoE layers). Skipped where no GPU is visible.
#include <cmath>

#include "capture/routed_experts_capturer.h"
#include "cuda/cuda_model.h"
#include "cuda/device.h"
#include "support/golden_support.h"

namespace moe::testing {
namespace {

constexpr int64_t kSlots = 1024;
constexpr int kSequences = 3;  // padded to a graph of 4
constexpr int kSteps = 24;

struct Runner {
  explicit Runner(const std::string& model_dir, bool graphs, int ep_size)
      : model(model_dir, options(graphs, ep_size)),
        kv(model.make_kv_cache(kSlots)),
        capturer(model.make_copy_engine({model.config().num_moe_layers(), 64, model.config().num_experts_per_tok, true},
                                        {})) {}

  static ModelOptions options(bool graphs, int ep_size) {
    ModelOptions o;
    o.device = Device::Cuda;
    o.cuda_graphs = graphs;
    o.ep_size = ep_size;
    return o;
  }

  // Runs the batch, with routing captured when `capture`; returns the step's rows (empty without).
  std::vector<int16_t> forward(const ForwardBatch& batch, bool capture) {
    if (!capture) {
      model.forward(batch, kv, logits, nullptr);
      return {};
    }
    capturer.begin_step(step, batch.num_tokens());
    model.forward(batch, kv, logits, &capturer);
    capturer.end_step();
    std::vector<StagedRouting> staged = capturer.drain();
    EXPECT_EQ(staged.size(), 1u);
    EXPECT_EQ(staged.at(0).step, step);
    ++step;
    return staged.at(0).ids;
  }

  cuda::CudaModel model;
  KvCache kv;
  RoutedExpertsCapturer capturer;
  uint64_t step = 0;
  std::vector<float> logits;
};

void expect_replays_match_uncaptured_steps(int ep_size) {
  const Golden golden = load_golden("qwen3-moe-tiny");
  Runner graphed(golden.model_dir, true, ep_size), eager(golden.model_dir, false, ep_size);

  // Each sequence: its golden prompt prefilled, then one decode token per step (its golden output
  // while it lasts, then token 100 + step: any ids do).
  std::vector<std::vector<int32_t>> tokens;
  ForwardBatch prefill;
  for (int s = 0; s < kSequences; ++s) {
    tokens.push_back(golden.cases.at(s).prompt_ids);
    std::vector<int32_t> slots;
    for (size_t p = 0; p < tokens[s].size(); ++p) slots.push_back(static_cast<int32_t>(s * 300 + p));
    prefill.add_sequence(tokens[s], slots, true);
  }
  graphed.forward(prefill, true);
  eager.forward(prefill, true);

  for (int step = 0; step < kSteps; ++step) {
    SCOPED_TRACE("decode step " + std::to_string(step));
    ForwardBatch decode;
    for (int s = 0; s < kSequences; ++s) {
      const GoldenCase& c = golden.cases.at(s);
      const size_t generated = tokens[s].size() - c.prompt_ids.size();
      tokens[s].push_back(generated < c.output_ids.size() ? c.output_ids[generated] : 100 + step);
      std::vector<int32_t> slots;
      for (size_t p = 0; p < tokens[s].size(); ++p) slots.push_back(static_cast<int32_t>(s * 300 + p));
      decode.add_sequence({tokens[s].back()}, slots, true);
    }
    // Capture on for two steps, off for one: each graph key is replayed after the other ran.
    const bool capture = step % 3 != 2;
    const std::vector<int16_t> rows = graphed.forward(decode, capture);
    EXPECT_EQ(rows, eager.forward(decode, capture));
    EXPECT_EQ(rows.empty(), !capture);
    ASSERT_EQ(graphed.logits.size(), eager.logits.size());
    for (size_t i = 0; i < eager.logits.size(); ++i)
      ASSERT_NEAR(graphed.logits[i], eager.logits[i], 1e-4f * std::max(1.0f, std::fabs(eager.logits[i])))
          << "logit " << i;
  }
  // Three keys (capture off, and each of the two capture buffers), each captured once unless a
  // buffer grew in between (which retires the graphs that name it): far fewer than the steps.
  EXPECT_GE(graphed.model.graphs_captured(), 1);
  EXPECT_LE(graphed.model.graphs_captured(), kSteps / 3);
  EXPECT_EQ(eager.model.graphs_captured(), 0);
}

TEST(CudaGraphTest, ReplaysMatchUncapturedStepsWhileCaptureIsSwitchedOnAndOff) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  expect_replays_match_uncaptured_steps(1);
}

TEST(CudaGraphTest, ReplaysOverTwoExpertShardsMatchUncapturedSteps) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  expect_replays_match_uncaptured_steps(2);
}

}  // namespace
}  // namespace moe::testing
