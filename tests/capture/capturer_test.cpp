// The capturer on the real model: rows land in the host cache by KV slot and equal the goldens; the
// copy of step n overlaps the forward of step n+1; nothing stale ever comes back.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "capture/routed_experts_capturer.h"
#include "capture/routing_host_cache.h"
#include "capture/thread_copy_engine.h"
#include "model/model.h"
#include "sampling/sampler.h"
#include "support/capture_run.h"

namespace moe {
namespace {

using testing::CaptureRun;
using testing::expect_rows_match;
using testing::Golden;
using testing::GoldenCase;

class CapturerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    golden_ = testing::load_golden("qwen3-moe-tiny");
    model_ = Model::load(golden_.model_dir);
    L_ = model_->config().num_moe_layers();
    K_ = model_->config().num_experts_per_tok;
  }
  Golden golden_;
  std::unique_ptr<Model> model_;
  int L_ = 0, K_ = 0;
};

TEST_F(CapturerTest, RowsByKvSlotEqualGoldensWithNoSentinelLeft) {
  RoutingHostCache host(8192, L_, K_, false);
  host.fill(-7);
  for (int chunk : {1, 7, 1000}) {
    RoutedExpertsCapturer capturer(std::make_unique<ThreadCopyEngine>(RoutingBufferShape{L_, 4096, K_, false}));
    CaptureRun run{*model_, capturer, host, chunk == 7 ? 2048 : 0};  // later runs reuse freed slots
    const auto tokens = run.run(golden_.cases, chunk, 24);
    for (size_t r = 0; r < golden_.cases.size(); ++r) {
      const GoldenCase& c = golden_.cases[r];
      SCOPED_TRACE("chunk " + std::to_string(chunk) + " case " + std::to_string(r));
      EXPECT_EQ(std::vector<int32_t>(tokens[r].begin() + c.prompt_ids.size(), tokens[r].end()), c.output_ids);
      std::vector<int16_t> rows;
      host.gather(run.slot_tables[r].data(), static_cast<int64_t>(tokens[r].size() - 1), rows, nullptr);
      EXPECT_EQ(std::count(rows.begin(), rows.end(), int16_t{-7}), 0);
      expect_rows_match(golden_, c, rows, static_cast<int64_t>(tokens[r].size() - 1));
    }
  }
}

// A copy engine slowed to 30 ms per copy: the next forward starts long before the copy ends,
// and the rows still arrive complete, exact and in step order.
TEST_F(CapturerTest, CopyOfStepNOverlapsForwardOfStepNPlus1) {
  std::atomic<int> copies_done{0};
  RoutedExpertsCapturer capturer(std::make_unique<ThreadCopyEngine>(RoutingBufferShape{L_, 4096, K_, true},
                                                                    [&] { ++copies_done; }, std::chrono::milliseconds(30)));
  RoutingHostCache host(4096, L_, K_, true);
  const GoldenCase& one = golden_.cases[2];
  std::vector<int32_t> slots;
  for (int32_t i = 0; i < 64; ++i) slots.push_back(i);
  KvCache kv = model_->make_kv_cache(64);
  std::vector<float> logits;
  std::vector<int32_t> tokens = one.prompt_ids;
  int overlapped = 0;
  size_t fed = 0;
  for (uint64_t step = 0; step < 6; ++step) {
    ForwardBatch batch;
    std::vector<int32_t> part(tokens.begin() + fed, tokens.end());
    batch.add_sequence(part, {slots.begin(), slots.begin() + tokens.size()}, true);
    const int before = copies_done.load();
    capturer.begin_step(step, batch.num_tokens());
    model_->forward(batch, kv, logits, &capturer);
    capturer.end_step();
    if (step > 0 && before < static_cast<int>(step)) ++overlapped;  // copy of step-1 not done when step began
    fed = tokens.size();
    tokens.push_back(sample_token(logits.data(), model_->config().vocab_size, msg::TokenSampling{{0.0f, 1.0f, -1, 0.0f}, 0, 0, false}).id);
  }
  EXPECT_GE(overlapped, 4);
  const auto staged = capturer.drain();
  ASSERT_EQ(staged.size(), 6u);
  for (size_t i = 0; i < staged.size(); ++i) {
    EXPECT_EQ(staged[i].step, i);
    EXPECT_EQ(staged[i].weights.size(), staged[i].ids.size());
  }
  // Step 0 held the prompt, steps 1..5 one token each: the rows of positions 0..P+4.
  std::vector<int32_t> token_slots(slots.begin(), slots.begin() + one.prompt_ids.size());
  host.store(staged[0], token_slots);
  for (size_t i = 1; i < staged.size(); ++i) host.store(staged[i], {static_cast<int32_t>(one.prompt_ids.size() + i - 1)});
  std::vector<int16_t> rows;
  host.gather(slots.data(), static_cast<int64_t>(one.prompt_ids.size() + 5), rows, nullptr);
  expect_rows_match(golden_, one, rows, static_cast<int64_t>(one.prompt_ids.size() + 5));
}

}  // namespace
}  // namespace moe
