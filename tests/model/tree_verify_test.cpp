// Tree verify in the forward: every node of a draft tree sees the prompt and its own ancestors
// only, so its logits and routing equal those of decoding its branch token by token; and expert
// limiting (max_tree_experts) confines a verify pass's tokens to a pool of experts per layer,
// taking effect on the very pass it is set for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.h"
#include "model/model.h"
#include "support/golden_support.h"
#include "support/recording_capture.h"

namespace moe::testing {
namespace {

// A tree of five nodes over a prompt: r -> a -> {b, d}, r -> c.
const std::vector<int32_t> kTreeTokens = {1000, 2000, 3000, 4000, 5000};
const std::vector<int32_t> kTreeParents = {-1, 0, 0, 1, 1};

class TreeVerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    golden_ = load_golden("qwen3-moe-tiny");
    model_ = Model::load(golden_.model_dir);
    prompt_ = golden_.cases[0].prompt_ids;
  }

  // Prefills the prompt into slots 1..P of kv.
  void prefill(KvCache& kv) {
    ForwardBatch batch;
    batch.add_sequence(prompt_, prompt_slots(), false);
    std::vector<float> logits;
    model_->forward(batch, kv, logits);
  }
  std::vector<int32_t> prompt_slots() const {
    std::vector<int32_t> slots(prompt_.size());
    std::iota(slots.begin(), slots.end(), 1);
    return slots;
  }
  // The tree after the prompt (slots P+1 ..), with logits for every node.
  ForwardBatch tree_batch(int32_t max_tree_experts) const {
    std::vector<int32_t> slots = prompt_slots();
    for (size_t i = 0; i < kTreeTokens.size(); ++i) slots.push_back(static_cast<int32_t>(prompt_.size() + 1 + i));
    ForwardBatch batch;
    batch.add_tree_sequence(kTreeTokens, slots, kTreeParents, true);
    batch.max_tree_experts = max_tree_experts;
    return batch;
  }

  Golden golden_;
  std::unique_ptr<Model> model_;
  std::vector<int32_t> prompt_;
};

TEST_F(TreeVerifyTest, PositionsFollowTheTreeDepths) {
  const ForwardBatch batch = tree_batch(0);
  const auto P = static_cast<int32_t>(prompt_.size());
  EXPECT_EQ(batch.positions, (std::vector<int32_t>{P, P + 1, P + 1, P + 2, P + 2}));
  EXPECT_EQ(batch.num_logit_rows(), 5);
  EXPECT_EQ(batch.sequences[0].visible_slots(3).back(), P + 4);
  EXPECT_EQ(batch.sequences[0].visible_slots(3)[P + 1], P + 2);  // its parent a, at depth 1
}

TEST_F(TreeVerifyTest, EachNodeMatchesDecodingItsBranch) {
  KvCache kv = model_->make_kv_cache(64);
  prefill(kv);
  std::vector<float> tree_logits;
  RecordingCapture tree_routing;
  model_->forward(tree_batch(0), kv, tree_logits, &tree_routing);
  const int64_t vocab = model_->config().vocab_size;

  // Each root-to-node path decoded one token at a time, in slots of its own (from 40 on).
  for (size_t node = 0; node < kTreeTokens.size(); ++node) {
    std::vector<int32_t> path;
    for (int32_t n = static_cast<int32_t>(node); n >= 0; n = kTreeParents[n]) path.insert(path.begin(), n);
    std::vector<int32_t> slots = prompt_slots();
    std::vector<float> logits;
    RecordingCapture routing;
    for (size_t d = 0; d < path.size(); ++d) {
      slots.push_back(static_cast<int32_t>(40 + d));
      ForwardBatch step;
      step.add_sequence({kTreeTokens[path[d]]}, slots, true);
      model_->forward(step, kv, logits, &routing);
    }
    SCOPED_TRACE("node " + std::to_string(node));
    float worst = 0.0f, largest = 0.0f;
    for (int64_t v = 0; v < vocab; ++v) {
      worst = std::max(worst, std::abs(logits[v] - tree_logits[node * vocab + v]));
      largest = std::max(largest, std::abs(logits[v]));
    }
    EXPECT_LE(worst, 1e-5f * std::max(1.0f, largest));
    EXPECT_EQ(routing.row(0), tree_routing.row(static_cast<int64_t>(node)));
  }
}

TEST_F(TreeVerifyTest, ExpertLimitKeepsAVerifyPassWithinThePool) {
  KvCache kv = model_->make_kv_cache(64);
  prefill(kv);
  std::vector<float> logits;
  RecordingCapture free, limited;
  model_->forward(tree_batch(0), kv, logits, &free);
  model_->forward(tree_batch(4), kv, logits, &limited);
  const std::vector<size_t> unlimited = free.distinct_experts(0, 5);
  EXPECT_GT(*std::max_element(unlimited.begin(), unlimited.end()), 4u);  // the limit has something to do
  for (size_t n : limited.distinct_experts(0, 5)) EXPECT_LE(n, 4u);
}

TEST_F(TreeVerifyTest, ExpertLimitOfEveryExpertEqualsNoLimit) {
  KvCache kv = model_->make_kv_cache(64);
  prefill(kv);
  std::vector<float> off_logits, all_logits;
  RecordingCapture off, all;
  model_->forward(tree_batch(0), kv, off_logits, &off);
  model_->forward(tree_batch(model_->config().num_experts), kv, all_logits, &all);
  EXPECT_EQ(off_logits, all_logits);
  EXPECT_EQ(off.layers, all.layers);
}

// The limit travels with each batch: changing it between two passes over the same model changes
// the routing of the second, and setting it back gives the first pass's routing again.
TEST_F(TreeVerifyTest, ChangingTheLimitBetweenPassesTakesEffect) {
  KvCache kv = model_->make_kv_cache(64);
  prefill(kv);
  std::vector<float> logits;
  RecordingCapture four, eight, four_again;
  model_->forward(tree_batch(4), kv, logits, &four);
  model_->forward(tree_batch(8), kv, logits, &eight);
  model_->forward(tree_batch(4), kv, logits, &four_again);
  for (size_t n : four.distinct_experts(0, 5)) EXPECT_LE(n, 4u);
  const std::vector<size_t> wider = eight.distinct_experts(0, 5);
  EXPECT_GT(*std::max_element(wider.begin(), wider.end()), 4u);
  for (size_t n : wider) EXPECT_LE(n, 8u);
  EXPECT_EQ(four.layers, four_again.layers);
}

// Tokens of sequences that are not trees route freely beside a limited verify pass.
TEST_F(TreeVerifyTest, ExpertLimitLeavesOtherSequencesAlone) {
  KvCache kv = model_->make_kv_cache(64);
  prefill(kv);
  const std::vector<int32_t> other = golden_.cases[1].prompt_ids;
  std::vector<int32_t> other_slots(other.size());
  std::iota(other_slots.begin(), other_slots.end(), 20);
  std::vector<float> logits;
  RecordingCapture alone, mixed;
  ForwardBatch solo;
  solo.add_sequence(other, other_slots, true);
  model_->forward(solo, kv, logits, &alone);
  ForwardBatch batch = tree_batch(4);
  batch.add_sequence(other, other_slots, true);
  model_->forward(batch, kv, logits, &mixed);
  for (size_t t = 0; t < other.size(); ++t) EXPECT_EQ(alone.row(static_cast<int64_t>(t)), mixed.row(static_cast<int64_t>(5 + t)));
  for (size_t n : mixed.distinct_experts(0, 5)) EXPECT_LE(n, 4u);
}

TEST_F(TreeVerifyTest, MalformedTreesAreRefused) {
  KvCache kv = model_->make_kv_cache(64);
  std::vector<float> logits;
  ForwardBatch forward_parent = tree_batch(0);
  forward_parent.sequences[0].tree_parents[1] = 3;  // a parent that comes later
  EXPECT_THROW(model_->forward(forward_parent, kv, logits), Error);
  ForwardBatch bad_position = tree_batch(0);
  bad_position.positions[2] += 1;  // not its depth
  EXPECT_THROW(model_->forward(bad_position, kv, logits), Error);
  ForwardBatch too_few_experts = tree_batch(2);  // fewer than top_k = 4
  EXPECT_THROW(model_->forward(too_few_experts, kv, logits), Error);
}

}  // namespace
}  // namespace moe::testing
