// Pipeline stages each send the routing rows of their own MoE layers: the tracker puts every slice
// at its layers in the host cache, and releases a reply only once every layer of its step arrived,
// and, with an MoE STANDALONE draft, the draft's rows of the step too (kept in a cache of their own).
#include <gtest/gtest.h>

#include "common/error.h"
#include "serving/routing_rows_tracker.h"

namespace moe::testing {
namespace {

// Rows of `tokens` tokens for MoE layers [first, first + layers), top-2: id = 10 * layer + token.
msg::StepRouting slice(uint64_t step, int first, int layers, int tokens) {
  msg::StepRouting routing;
  routing.step = step;
  routing.first_layer = first;
  routing.rows.num_layers = layers;
  routing.rows.top_k = 2;
  for (int t = 0; t < tokens; ++t)
    for (int l = first; l < first + layers; ++l)
      for (int k = 0; k < 2; ++k) routing.rows.expert_ids.push_back(static_cast<int16_t>(10 * l + t));
  return routing;
}

TEST(RoutingSlices, ARowIsReleasedOnlyWhenEveryStagesSliceHasArrived) {
  RoutingRowsTracker tracker(8, 4, 2, false);
  tracker.step_scheduled(1, {5, 2});
  tracker.rows_arrived(slice(1, 3, 1, 2));  // the last stage's layer first
  EXPECT_FALSE(tracker.rows_stored_through(1));
  tracker.rows_arrived(slice(1, 0, 2, 2));
  EXPECT_FALSE(tracker.rows_stored_through(1));
  tracker.rows_arrived(slice(1, 2, 1, 2));
  EXPECT_TRUE(tracker.rows_stored_through(1));
  const int32_t slots[] = {5, 2};
  const msg::RoutingRows rows = tracker.gather(slots, 2, false);
  EXPECT_EQ(rows.expert_ids, (std::vector<int16_t>{0, 0, 10, 10, 20, 20, 30, 30, 1, 1, 11, 11, 21, 21, 31, 31}));
}

TEST(RoutingSlices, LaterStepsWaitForEarlierStepsMissingSlices) {
  std::vector<int> order;  // the steps through which rows are stored, after each step stored
  RoutingRowsTracker* stored = nullptr;
  RoutingRowsTracker tracker(8, 2, 2, false, {}, [&] { order.push_back(stored->rows_stored_through(2) ? 2 : 1); });
  stored = &tracker;
  tracker.step_scheduled(1, {0});
  tracker.step_scheduled(2, {1});
  tracker.rows_arrived(slice(2, 0, 2, 1));  // step 2 whole (a single-stage worker), step 1 half
  tracker.rows_arrived(slice(1, 1, 1, 1));
  EXPECT_TRUE(order.empty());
  tracker.rows_arrived(slice(1, 0, 1, 1));
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

// A request finished in step 1 freed slot 0, step 2 reuses it, and stage 0 answers step 2 before the
// last stage answers step 1: step 1's reply must still gather step 1's rows.
TEST(RoutingSlices, ALaterStepsSliceDoesNotOverwriteASlotBeforeTheEarlierStepsReplyGathered) {
  std::vector<int16_t> gathered;
  RoutingRowsTracker* stored = nullptr;
  RoutingRowsTracker tracker(8, 2, 2, false, {}, [&] {
    const int32_t slot = 0;
    if (gathered.empty()) gathered = stored->gather(&slot, 1, false).expert_ids;  // once step 1 is stored
  });
  stored = &tracker;
  tracker.step_scheduled(1, {0});
  tracker.step_scheduled(2, {0});
  tracker.rows_arrived(slice(1, 0, 1, 1));
  msg::StepRouting later = slice(2, 0, 1, 1);
  for (int16_t& id : later.rows.expert_ids) id = 99;
  tracker.rows_arrived(later);
  tracker.rows_arrived(slice(1, 1, 1, 1));
  EXPECT_EQ(gathered, (std::vector<int16_t>{0, 0, 10, 10}));
}

TEST(RoutingSlices, ASliceTwiceOrOutsideTheModelIsRefused) {
  RoutingRowsTracker tracker(8, 4, 2, false);
  tracker.step_scheduled(1, {0, 1});
  tracker.rows_arrived(slice(1, 0, 2, 2));
  EXPECT_THROW(tracker.rows_arrived(slice(1, 1, 1, 2)), Error);  // layer 1 again
  EXPECT_THROW(tracker.rows_arrived(slice(1, 3, 2, 2)), Error);  // layers 3..4 of a 4-layer model
  EXPECT_THROW(tracker.rows_arrived(slice(1, -1, 1, 2)), Error);
}

// The draft model's rows of a step of `tokens` tokens, 3 layers, top-1: id = 50 + token.
msg::RoutingRows draft_rows(int tokens) {
  msg::RoutingRows rows;
  rows.num_layers = 3;
  rows.top_k = 1;
  for (int t = 0; t < tokens; ++t)
    for (int l = 0; l < 3; ++l) rows.expert_ids.push_back(static_cast<int16_t>(50 + t));
  return rows;
}

TEST(DraftRoutingRows, AStepWaitsForTheDraftsRowsWhichGoToTheirOwnCache) {
  RoutingRowsTracker tracker(8, 2, 2, false, DraftRowShape{3, 1});
  tracker.step_scheduled(1, {4, 6});
  tracker.rows_arrived(slice(1, 0, 2, 2));
  EXPECT_FALSE(tracker.rows_stored_through(1));
  tracker.draft_rows_arrived(1, draft_rows(2));
  EXPECT_TRUE(tracker.rows_stored_through(1));
  const int32_t slots[] = {6, 4};
  EXPECT_EQ(tracker.gather(slots, 2, false).expert_ids, (std::vector<int16_t>{1, 1, 11, 11, 0, 0, 10, 10}));
  const msg::RoutingRows draft = tracker.gather_draft(slots, 2);
  EXPECT_EQ(draft.num_layers, 3);
  EXPECT_EQ(draft.top_k, 1);
  EXPECT_EQ(draft.expert_ids, (std::vector<int16_t>{51, 51, 51, 50, 50, 50}));
}

TEST(DraftRoutingRows, DraftRowsFirstThenTheTargetsReleaseTheStepToo) {
  RoutingRowsTracker tracker(8, 2, 2, false, DraftRowShape{3, 1});
  tracker.step_scheduled(1, {0});
  tracker.draft_rows_arrived(1, draft_rows(1));
  EXPECT_FALSE(tracker.rows_stored_through(1));
  tracker.rows_arrived(slice(1, 0, 2, 1));
  EXPECT_TRUE(tracker.rows_stored_through(1));
}

TEST(DraftRoutingRows, WithoutADraftShapeDraftRowsAreIgnoredAndNoneCanBeGathered) {
  RoutingRowsTracker tracker(8, 2, 2, false);
  tracker.step_scheduled(1, {0});
  tracker.draft_rows_arrived(1, {});
  tracker.rows_arrived(slice(1, 0, 2, 1));
  EXPECT_TRUE(tracker.rows_stored_through(1));
  const int32_t slot = 0;
  EXPECT_THROW(tracker.gather_draft(&slot, 1), Error);
}

TEST(DraftRoutingRows, RowsOfAnotherShapeOrCountOrTwiceAreRefused) {
  RoutingRowsTracker tracker(8, 2, 2, false, DraftRowShape{3, 1});
  tracker.step_scheduled(1, {0, 1});
  EXPECT_THROW(tracker.draft_rows_arrived(1, draft_rows(1)), Error);  // one row for two tokens
  msg::RoutingRows wide = draft_rows(2);
  wide.num_layers = 1;
  wide.top_k = 3;
  EXPECT_THROW(tracker.draft_rows_arrived(1, wide), Error);
  EXPECT_THROW(tracker.draft_rows_arrived(2, draft_rows(2)), Error);  // a step never scheduled
  tracker.draft_rows_arrived(1, draft_rows(2));
  EXPECT_THROW(tracker.draft_rows_arrived(1, draft_rows(2)), Error);
}

}  // namespace
}  // namespace moe::testing
