// The scheduler's side of STANDALONE speculation: a decoding request's step reserves a placeholder
// tree (the layer-by-layer shape the worker's draft model fills) bounded by num-steps, the request's
// tokens left and the free slots; the worker's drafted tree replaces the placeholders before the
// result is committed, and a drafted tree that does not fit is refused without changing the batch.
#include <gtest/gtest.h>

#include "common/error.h"
#include "scheduler/scheduler.h"
#include "scheduler/speculation.h"
#include "scheduler_driver.h"

namespace moe::test {
namespace {

SchedulerConfig standalone_config(int64_t slots = 64) {
  SchedulerConfig config;
  config.max_total_tokens = slots;
  config.enable_radix_cache = false;  // every slot a request holds shows in kv_slots_used
  config.speculative.algorithm = SpeculativeAlgorithm::Standalone;
  config.speculative.draft_model_path = "draft";
  config.speculative.num_steps = 3;
  config.speculative.eagle_topk = 2;
  config.speculative.num_draft_tokens = 8;
  return config;
}

// A request prefilled with 5 as its first output: its next step drafts below the root 5.
struct Prefilled {
  Scheduler scheduler;
  explicit Prefilled(int max_new_tokens = 8, int64_t slots = 64) : scheduler(standalone_config(slots), 1) {
    scheduler.add_request(make_request("r", {1, 2, 3, 4}, max_new_tokens, 1));
    const ScheduledBatch prefill = *scheduler.schedule_step();
    scheduler.process_result(prefill, std::vector<int32_t>{5}, {});
  }
};

TEST(StandaloneShape, LayersOfTopkNodesEachBelowTheFirstOfTheLayerAbove) {
  EXPECT_EQ(standalone_tree_shape(7, 2), (std::vector<int32_t>{-1, 0, 0, 1, 1, 3, 3}));
  EXPECT_EQ(standalone_tree_shape(4, 1), (std::vector<int32_t>{-1, 0, 1, 2}));
  EXPECT_EQ(standalone_tree_shape(6, 3), (std::vector<int32_t>{-1, 0, 0, 0, 1, 1}));
}

TEST(StandaloneScheduling, ADecodeReservesAPlaceholderTreeForTheDraftModel) {
  Prefilled p;
  const ScheduledBatch verify = *p.scheduler.schedule_step();
  ASSERT_EQ(verify.sequences.size(), 1u);
  EXPECT_EQ(verify.sequences[0].draft_topk, 2);
  // num_steps 3 x topk 2 drafts, the root 5 first; placeholders carry the root's token.
  EXPECT_EQ(verify.sequences[0].tree_parents, standalone_tree_shape(7, 2));
  EXPECT_EQ(verify.token_ids, (std::vector<int32_t>(7, 5)));
  EXPECT_EQ(verify.positions, (std::vector<int32_t>{4, 5, 5, 6, 6, 7, 7}));
  EXPECT_EQ(p.scheduler.stats().kv_slots_used, 4 + 7);
}

TEST(StandaloneScheduling, TheTreeIsCutByTokensLeftAndFreeSlots) {
  Prefilled few_tokens(3);  // one output so far, two more allowed: one layer
  EXPECT_EQ(few_tokens.scheduler.schedule_step()->sequences[0].tree_parents, standalone_tree_shape(3, 2));
  Prefilled few_slots(8, 8);  // 4 prompt slots + the root leave 3 drafts
  EXPECT_EQ(few_slots.scheduler.schedule_step()->sequences[0].tree_parents, standalone_tree_shape(4, 2));
}

TEST(StandaloneScheduling, TheDraftedTreeIsCommittedAndItsRejectedSlotsFreed) {
  Prefilled p;
  ScheduledBatch verify = *p.scheduler.schedule_step();
  ASSERT_EQ(verify.sequences[0].kept_slots, 4);  // the prompt's; the tree's 7 nodes' slots are sent
  const std::vector<int32_t> nodes = verify.sequences[0].new_slots;
  // The draft chose 6 and 7 below the root, 8 and 9 below 7, 10 and 11 below 9.
  const std::vector<int32_t> tokens = {5, 6, 7, 8, 9, 10, 11};
  const std::vector<int32_t> parents = {-1, 0, 0, 2, 2, 4, 4};
  verify.adopt_drafted_trees(tokens, parents);
  EXPECT_EQ(verify.token_ids, tokens);
  // 7 and 9 accepted, then 12 drawn instead of a draft below 9.
  const std::vector<CompletionRecord> records =
      p.scheduler.process_result(verify, std::vector<int32_t>{7, 9, 12}, {}, std::vector<int32_t>{3});
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].output_ids, (std::vector<int32_t>{7, 9, 12}));
  // The rows after the prompt's (which the prefill's record reported): the root's, 7's and 9's.
  EXPECT_EQ(records[0].row_slots, (std::vector<int32_t>{nodes[0], nodes[2], nodes[4]}));
  EXPECT_EQ(p.scheduler.stats().kv_slots_used, 7);
  EXPECT_EQ(p.scheduler.stats().accepted_drafts, 2);
  EXPECT_EQ(p.scheduler.stats().draft_tokens, 6);
  // Positions 5 and 6 now hold nodes 2 and 4, not the nodes the worker's table has there: it is
  // cut after the root, and the next step sends the rest.
  const ScheduledBatch next = *p.scheduler.schedule_step();
  EXPECT_EQ(next.sequences[0].kept_slots, 5);
  EXPECT_EQ(next.sequences[0].new_slots.front(), nodes[2]);
}

TEST(StandaloneScheduling, DraftedTreesThatDoNotFitAreRefusedAndChangeNothing) {
  Prefilled p;
  ScheduledBatch verify = *p.scheduler.schedule_step();
  const msg::WorkerBatch before = verify;
  const std::vector<int32_t> parents = {-1, 0, 0, 2, 2, 4, 4};
  // Too few nodes, another root, a node moved to another depth, tokens without parents.
  EXPECT_THROW(verify.adopt_drafted_trees(std::vector<int32_t>{5, 6, 7}, std::vector<int32_t>{-1, 0, 0}), Error);
  EXPECT_THROW(verify.adopt_drafted_trees(std::vector<int32_t>{4, 6, 7, 8, 9, 10, 11}, parents), Error);
  EXPECT_THROW(verify.adopt_drafted_trees(std::vector<int32_t>{5, 6, 7, 8, 9, 10, 11},
                                          std::vector<int32_t>{-1, 0, 0, 2, 2, 4, 0}),
               Error);
  EXPECT_THROW(verify.adopt_drafted_trees(std::vector<int32_t>{5, 6, 7, 8, 9, 10, 11}, std::vector<int32_t>{-1}),
               Error);
  EXPECT_EQ(verify.token_ids, before.token_ids);
  EXPECT_EQ(verify.sequences[0].tree_parents, before.sequences[0].tree_parents);
}

TEST(StandaloneScheduling, NgramBatchesTakeNoDraftedTrees) {
  SchedulerConfig config = standalone_config();
  config.speculative.algorithm = SpeculativeAlgorithm::Ngram;
  config.speculative.draft_model_path.clear();
  Scheduler scheduler(config, 1);
  scheduler.add_request(make_request("r", {1, 2, 1, 2}, 8, 1));
  ScheduledBatch prefill = *scheduler.schedule_step();
  EXPECT_NO_THROW(prefill.adopt_drafted_trees({}, {}));
  EXPECT_THROW(prefill.adopt_drafted_trees(std::vector<int32_t>{1}, std::vector<int32_t>{-1}), Error);
}

TEST(SpeculativeConfig, StandaloneNeedsADraftAndOnlyItTakesOne) {
  auto refused_naming = [](const SpeculativeConfig& config, const std::string& flag) {
    try {
      validate(config, 4, 1);
      ADD_FAILURE() << "accepted settings that should name " << flag;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(flag), std::string::npos) << e.what();
    }
  };
  SpeculativeConfig config = standalone_config().speculative;
  EXPECT_NO_THROW(validate(config, 4, 1));
  config.draft_model_path.clear();
  refused_naming(config, "--speculative-draft-model-path");
  config = standalone_config().speculative;
  config.algorithm = SpeculativeAlgorithm::Ngram;
  refused_naming(config, "--speculative-draft-model-path");
  config.algorithm = SpeculativeAlgorithm::None;
  refused_naming(config, "--speculative-draft-model-path");
  config = standalone_config().speculative;
  config.eagle_topk = 21;
  refused_naming(config, "--speculative-eagle-topk");
  config = standalone_config().speculative;
  config.draft_quantization = Quantization::Int4;
  EXPECT_NO_THROW(validate(config, 4, 1));
  config.algorithm = SpeculativeAlgorithm::Ngram;
  config.draft_model_path.clear();
  refused_naming(config, "--speculative-draft-model-quantization");
  config.algorithm = SpeculativeAlgorithm::None;
  refused_naming(config, "--speculative-draft-model-quantization");
}

TEST(SpeculativeConfig, DraftQuantizationIsTheTargetsUnlessGivenAndNamesItsFlagWhenBad) {
  EXPECT_EQ(parse_draft_quantization(""), std::nullopt);
  EXPECT_EQ(parse_draft_quantization("unquant"), Quantization::None);
  EXPECT_EQ(parse_draft_quantization("int8"), Quantization::Int8);
  EXPECT_EQ(parse_draft_quantization("int4"), Quantization::Int4);
  // "none" would read as "not given" or as "unquantized": SGLang's unquant says which.
  for (const std::string bad : {"none", "int2", "INT4", "fp8"}) {
    try {
      parse_draft_quantization(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--speculative-draft-model-quantization '" + bad + "'"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("unquant, int8 or int4"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace moe::test
