// The capturer on the real model: rows land in the host cache by KV slot and equal the goldens; the
// copy of step n overlaps the forward of step n+1; nothing stale ever comes back.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>

#include "capture/routed_experts_capturer.h"
#include "capture/routing_host_cache.h"
#include "model/model.h"
#include "sampling/sampler.h"
#include "support/golden_support.h"

namespace moe {
namespace {

using testing::Golden;
using testing::GoldenCase;

// Runs every case to completion in one batch (prompts in chunks of `chunk`), capturing through
// `capturer` into `host` with each case on its own slot range starting at slot_base.
struct CaptureRun {
  Model& model;
  RoutedExpertsCapturer& capturer;
  RoutingHostCache& host;
  int32_t slot_base = 0;
  uint64_t step = 0;
  std::vector<std::vector<int32_t>> slot_tables{};

  std::vector<std::vector<int32_t>> run(const std::vector<GoldenCase>& cases, int chunk, int new_tokens) {
    KvCache kv = model.make_kv_cache(slot_base + 4096);
    std::vector<std::vector<int32_t>> tokens;
    std::vector<size_t> fed(cases.size(), 0);
    slot_tables.assign(cases.size(), {});
    int32_t next = slot_base;
    for (const GoldenCase& c : cases) {
      tokens.push_back(c.prompt_ids);
      for (size_t i = 0; i < c.prompt_ids.size() + new_tokens; ++i) slot_tables[tokens.size() - 1].push_back(next++);
    }
    std::map<uint64_t, std::vector<int32_t>> step_slots;
    std::vector<float> logits;
    for (;;) {
      ForwardBatch batch;
      std::vector<size_t> owners;
      std::vector<int32_t> token_slots;
      for (size_t r = 0; r < cases.size(); ++r) {
        const size_t target = cases[r].prompt_ids.size() + new_tokens - 1;  // the last token is never fed
        if (fed[r] >= target) continue;
        size_t n = std::min(tokens[r].size() - fed[r], static_cast<size_t>(chunk));
        std::vector<int32_t> part(tokens[r].begin() + fed[r], tokens[r].begin() + fed[r] + n);
        batch.add_sequence(part, {slot_tables[r].begin(), slot_tables[r].begin() + fed[r] + n},
                           fed[r] + n == tokens[r].size());
        for (size_t i = 0; i < n; ++i) token_slots.push_back(slot_tables[r][fed[r] + i]);
        owners.push_back(r);
      }
      if (owners.empty()) break;
      capturer.begin_step(step, batch.num_tokens());
      model.forward(batch, kv, logits, &capturer);
      capturer.end_step();
      step_slots[step++] = token_slots;
      for (const StagedRouting& staged : capturer.take_ready()) host.store(staged, step_slots.at(staged.step));
      int64_t row = 0;
      for (size_t i = 0; i < owners.size(); ++i) {
        fed[owners[i]] += batch.sequences[i].num_new_tokens;
        if (!batch.sequences[i].needs_logits) continue;
        const msg::TokenSampling greedy{{0.0f, 1.0f, -1, 0.0f}, 0, 0, false};
        tokens[owners[i]].push_back(
            sample_token(logits.data() + row++ * model.config().vocab_size, model.config().vocab_size, greedy).id);
      }
    }
    for (const StagedRouting& staged : capturer.drain()) host.store(staged, step_slots.at(staged.step));
    return tokens;
  }
};

// The first `count` rows captured for case c equal its golden rows.
void expect_rows_match(const Golden& golden, const GoldenCase& c, const std::vector<int16_t>& rows, int64_t count) {
  testing::expect_routing_matches_golden(golden, c, std::vector<int32_t>(rows.begin(), rows.end()), count);
}

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
    RoutedExpertsCapturer capturer(L_, 4096, K_, false, std::make_unique<ThreadCopyEngine>());
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
  RoutedExpertsCapturer capturer(L_, 4096, K_, true,
                                 std::make_unique<ThreadCopyEngine>([&] { ++copies_done; }, std::chrono::milliseconds(30)));
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
