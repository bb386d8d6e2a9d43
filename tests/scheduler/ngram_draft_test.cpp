// The NGRAM drafter: prompt lookup over a request's own tokens, merged into a tree.
#include <gtest/gtest.h>

#include "common/error.h"
#include "scheduler/speculation.h"

namespace moe {
namespace {

TEST(NgramDraft, TheLongestMatchedSuffixProposesWhatFollowedIt) {
  // ... 5 6 7 8 9 ... 6 7 | root 7: "6 7" matched, followed by 8 9.
  const std::vector<int32_t> context = {1, 5, 6, 7, 8, 9, 2, 6, 7};
  const DraftTree tree = ngram_draft(context, 8, 3, 1);
  EXPECT_EQ(tree.tokens, (std::vector<int32_t>{8, 9, 2}));
  EXPECT_EQ(tree.parents, (std::vector<int32_t>{-1, 0, 1}));
}

TEST(NgramDraft, DifferentContinuationsBranchMostRecentFirst) {
  // "0 3" occurred once before (then 6 7): the longest match wins, one continuation.
  const DraftTree longest = ngram_draft(std::vector<int32_t>{3, 4, 5, 0, 3, 6, 7, 0, 3}, 8, 2, 2);
  EXPECT_EQ(longest.tokens, (std::vector<int32_t>{6, 7}));
  // "2 3" never occurred before; "3" was followed by 4 5, later by 6 7: two branches, later first.
  const DraftTree branched = ngram_draft(std::vector<int32_t>{3, 4, 5, 1, 3, 6, 7, 2, 3}, 8, 2, 2);
  EXPECT_EQ(branched.tokens, (std::vector<int32_t>{6, 7, 4, 5}));
  EXPECT_EQ(branched.parents, (std::vector<int32_t>{-1, 0, -1, 2}));
}

TEST(NgramDraft, LimitsOnNodesDepthAndChildrenHold) {
  const std::vector<int32_t> context = {3, 4, 5, 1, 3, 6, 7, 2, 3, 8, 9, 2, 3};
  const DraftTree one_child = ngram_draft(context, 8, 2, 1);  // "2 3" last followed by 8 9
  EXPECT_EQ(one_child.tokens, (std::vector<int32_t>{8, 9}));
  const DraftTree shallow = ngram_draft(std::vector<int32_t>{3, 4, 5, 1, 3, 6, 7, 0, 3}, 8, 1, 2);
  EXPECT_EQ(shallow.tokens, (std::vector<int32_t>{6, 4}));
  EXPECT_EQ(shallow.parents, (std::vector<int32_t>{-1, -1}));
  const DraftTree few = ngram_draft(std::vector<int32_t>{3, 4, 5, 1, 3, 6, 7, 0, 3}, 3, 2, 2);
  EXPECT_EQ(few.tokens, (std::vector<int32_t>{6, 7, 4}));
}

TEST(NgramDraft, TheMatchWindowBoundsTheSuffixesTried) {
  // Only "3" occurred before (followed by 4 5, later by 6 7): a one-token match, refused from 2 up.
  const std::vector<int32_t> single = {3, 4, 5, 1, 3, 6, 7, 2, 3};
  EXPECT_EQ(ngram_draft(single, 8, 2, 2, {1, 4}).size(), 4u);
  EXPECT_EQ(ngram_draft(single, 8, 2, 2, {2, 4}).size(), 0u);
  // "1 2 3" was followed by 9, the shorter "2 3" last by 8: the longest suffix within the window wins.
  const std::vector<int32_t> nested = {1, 2, 3, 9, 0, 2, 3, 8, 1, 2, 3};
  EXPECT_EQ(ngram_draft(nested, 8, 1, 1, {2, 3}).tokens, (std::vector<int32_t>{9}));
  EXPECT_EQ(ngram_draft(nested, 8, 1, 1, {2, 2}).tokens, (std::vector<int32_t>{8}));
  EXPECT_EQ(ngram_draft(nested, 8, 1, 1, {4, 8}).size(), 0u);
}

TEST(NgramDraft, NothingMatchesNothingIsProposed) {
  EXPECT_EQ(ngram_draft(std::vector<int32_t>{1, 2, 3, 4}, 8, 4, 2).size(), 0u);
  EXPECT_EQ(ngram_draft(std::vector<int32_t>{1}, 8, 4, 2).size(), 0u);
  EXPECT_EQ(ngram_draft(std::vector<int32_t>{1, 1}, 0, 4, 2).size(), 0u);
}

TEST(SpeculativeConfig, AlgorithmNamesAndBadSettings) {
  EXPECT_EQ(parse_speculative_algorithm("ngram"), SpeculativeAlgorithm::Ngram);
  EXPECT_EQ(parse_speculative_algorithm(""), SpeculativeAlgorithm::None);
  // EAGLE is SGLang's other name for drafting with the checkpoint's MTP layer; EAGLE3 drafts with a head.
  EXPECT_EQ(parse_speculative_algorithm("nextn"), SpeculativeAlgorithm::Nextn);
  EXPECT_EQ(parse_speculative_algorithm("EAGLE"), SpeculativeAlgorithm::Nextn);
  EXPECT_EQ(parse_speculative_algorithm("eagle3"), SpeculativeAlgorithm::Eagle3);
  EXPECT_THROW(parse_speculative_algorithm("EAGLE2"), Error);
  SpeculativeConfig config;
  config.algorithm = SpeculativeAlgorithm::Ngram;
  EXPECT_NO_THROW(validate(config, 4, 1));
  config.max_tree_experts = 2;
  EXPECT_THROW(validate(config, 4, 1), Error);
  config.max_tree_experts = 0;
  config.ngram_min_match = 0;
  EXPECT_THROW(validate(config, 4, 1), Error);
  config.ngram_min_match = 5;  // above the longest window
  try {
    validate(config, 4, 1);
    ADD_FAILURE() << "a minimum window above the maximum was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--speculative-ngram-min-match-window-size"), std::string::npos) << e.what();
  }
}

TEST(SpeculativeConfig, RefusesPipelineStagesNamingBothFlags) {
  SpeculativeConfig config;
  EXPECT_NO_THROW(validate(config, 4, 2));  // no speculation: any --pp-size
  config.algorithm = SpeculativeAlgorithm::Ngram;
  try {
    validate(config, 4, 2);
    FAIL() << "speculation with two pipeline stages was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--speculative-algorithm"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--pp-size 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moe
