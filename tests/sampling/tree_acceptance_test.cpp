// Acceptance over a verified draft tree: greedy walks follow the argmax through matching children,
// sampled walks draw what non-speculative sampling draws at each output index.
#include <gtest/gtest.h>

#include <random>

#include "common/error.h"
#include "sampling/tree_acceptance.h"

namespace moe {
namespace {

constexpr int64_t kVocab = 16;

// One logits row per node, each peaked at `argmax[node]`.
std::vector<float> peaked_rows(const std::vector<int32_t>& argmax) {
  std::vector<float> rows(argmax.size() * kVocab, 0.0f);
  for (size_t n = 0; n < argmax.size(); ++n) rows[n * kVocab + argmax[n]] = 5.0f;
  return rows;
}

// root -> {3 (node 1), 4 (node 2)}; 3 -> 5 (node 3); 4 -> 6 (node 4).
const std::vector<int32_t> kTokens = {9, 3, 4, 5, 6};
const std::vector<int32_t> kParents = {-1, 0, 0, 1, 2};

// The greedy walk over kTokens' tree whose node n predicts argmax[n]: the drawn ids.
std::vector<int32_t> greedy_walk(const std::vector<int32_t>& argmax) {
  msg::TokenSampling greedy;
  greedy.temperature = 0.0f;
  const std::vector<float> rows = peaked_rows(argmax);
  std::vector<int32_t> ids;
  for (const SampledToken& t : accept_draft_tree(rows.data(), kVocab, kTokens, kParents, greedy)) ids.push_back(t.id);
  return ids;
}

TEST(TreeAcceptance, GreedyFollowsTheMatchingBranchThenAddsOneToken) {
  // The root predicts 4, node 2 (token 4) predicts 6, node 4 predicts 11: 4 and 6 accepted, then 11.
  EXPECT_EQ(greedy_walk({4, 0, 6, 0, 11}), (std::vector<int32_t>{4, 6, 11}));
  EXPECT_EQ(accepted_path(kTokens, kParents, std::vector<int32_t>{4, 6}), (std::vector<int32_t>{0, 2, 4}));
}

TEST(TreeAcceptance, NoMatchingChildKeepsOnlyTheRootsToken) {
  EXPECT_EQ(greedy_walk({7, 0, 0, 0, 0}), (std::vector<int32_t>{7}));
}

TEST(TreeAcceptance, SampledWalksDrawWhatEachOutputIndexDrawsAlone) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (uint64_t seed = 0; seed < 200; ++seed) {
    std::vector<float> rows(kTokens.size() * kVocab);
    for (float& v : rows) v = normal(rng);
    msg::TokenSampling sampling;
    sampling.temperature = 1.0f;
    sampling.seed = seed;
    sampling.step = 5;
    const auto drawn = accept_draft_tree(rows.data(), kVocab, kTokens, kParents, sampling);
    // Each drawn token is the plain draw of its node's row at its output index.
    int32_t node = 0;
    for (size_t j = 0; j < drawn.size(); ++j) {
      msg::TokenSampling alone = sampling;
      alone.step = sampling.step + j;
      EXPECT_EQ(drawn[j].id, sample_token(rows.data() + node * kVocab, kVocab, alone).id);
      for (size_t c = 0; c < kTokens.size(); ++c)
        if (kParents[c] == node && kTokens[c] == drawn[j].id) node = static_cast<int32_t>(c);
    }
  }
}

TEST(TreeAcceptance, PenaltiesCountTheAcceptedDraftsAndEachTokenHasItsAlternatives) {
  // root (9) -> node 1 (4) -> node 2 (4). The root's row favours 4; node 1's favours 4 over 2 by 0.5.
  const std::vector<int32_t> tokens = {9, 4, 4}, parents = {-1, 0, 1};
  std::vector<float> rows(3 * kVocab, 0.0f);
  rows[4] = 5.0f;
  rows[kVocab + 4] = 5.0f;
  rows[kVocab + 2] = 4.5f;
  msg::TokenSampling greedy;
  greedy.temperature = 0.0f;
  greedy.top_logprobs = 2;
  std::vector<int32_t> ids;
  for (const SampledToken& t : accept_draft_tree(rows.data(), kVocab, tokens, parents, greedy)) ids.push_back(t.id);
  EXPECT_EQ(ids, (std::vector<int32_t>{4, 4, 0}));
  // A presence penalty of 1 sees the accepted 4 when node 1 draws, as plain decoding would: 2 wins.
  msg::TokenSampling penalized = greedy;
  penalized.presence_penalty = 1.0f;
  const std::vector<SampledToken> drawn = accept_draft_tree(rows.data(), kVocab, tokens, parents, penalized);
  ASSERT_EQ(drawn.size(), 2u);
  EXPECT_EQ(drawn[0].id, 4);
  EXPECT_EQ(drawn[1].id, 2);
  msg::TokenSampling plain = penalized;
  plain.generated_ids = {4};
  const SampledToken alone = sample_token(rows.data() + kVocab, kVocab, plain);
  EXPECT_EQ(drawn[1].id, alone.id);
  EXPECT_EQ(drawn[1].top, alone.top);
  EXPECT_EQ(drawn[1].top.ids.size(), 2u);
  EXPECT_EQ(drawn[0].top.ids.size(), 2u);
}

TEST(TreeAcceptance, MalformedTreesAndResultsAreErrors) {
  msg::TokenSampling greedy;
  greedy.temperature = 0.0f;
  const std::vector<float> rows = peaked_rows({1, 1});
  EXPECT_THROW(accept_draft_tree(rows.data(), kVocab, std::vector<int32_t>{1, 2}, std::vector<int32_t>{0, 0}, greedy),
               Error);
  EXPECT_THROW(accepted_path(kTokens, kParents, std::vector<int32_t>{5}), Error);  // 5 is not a child of the root
}

}  // namespace
}  // namespace moe
