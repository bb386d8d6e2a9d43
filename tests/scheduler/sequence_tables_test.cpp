// The worker's side of a sequence's KV slot table: built from the changes each step carries,
// trimmed where the scheduler rewrote it, dropped when the sequence ends, and a step that names a
// table the worker does not hold refused without changing anything.
#include <gtest/gtest.h>

#include "common/error.h"
#include "worker/sequence_tables.h"

namespace moe {
namespace {

msg::WorkerSequence change(uint64_t id, int32_t kept, std::vector<int32_t> added) {
  msg::WorkerSequence s;
  s.id = id;
  s.num_new_tokens = 1;
  s.kept_slots = kept;
  s.new_slots = std::move(added);
  return s;
}

msg::WorkerBatch step(uint64_t n, std::vector<msg::WorkerSequence> sequences, std::vector<uint64_t> ended = {}) {
  msg::WorkerBatch batch;
  batch.step = n;
  batch.sequences = std::move(sequences);
  batch.ended_sequences = std::move(ended);
  return batch;
}

std::vector<int32_t> held(const SequenceTables& tables, uint64_t id) {
  const std::span<const int32_t> table = tables.table(id);
  return {table.begin(), table.end()};
}

TEST(SequenceTables, AppendsTrimsAndStartsAnew) {
  SequenceTables tables;
  tables.apply(step(1, {change(7, 0, {40, 41, 42}), change(9, 0, {5})}));  // new, a cached prefix included
  tables.apply(step(2, {change(7, 3, {43})}));                              // a decode
  EXPECT_EQ(held(tables, 7), (std::vector<int32_t>{40, 41, 42, 43}));
  tables.apply(step(3, {change(7, 4, {50, 51, 52})}));  // a draft tree's nodes
  tables.apply(step(4, {change(7, 5, {52, 60})}));      // node 0 kept in place, node 2 moved after it
  EXPECT_EQ(held(tables, 7), (std::vector<int32_t>{40, 41, 42, 43, 50, 52, 60}));
  tables.apply(step(5, {change(9, 0, {8, 9})}));  // re-admitted after a preemption: a new table
  EXPECT_EQ(held(tables, 9), (std::vector<int32_t>{8, 9}));
  EXPECT_EQ(tables.size(), 2u);
}

TEST(SequenceTables, EndedSequencesAreDroppedBeforeTheStepsSequences) {
  SequenceTables tables;
  tables.apply(step(1, {change(7, 0, {1, 2}), change(8, 0, {3})}));
  tables.apply(step(2, {change(7, 0, {4})}, {7, 8, 99}));  // 7 preempted and back in one step; 99 unknown
  EXPECT_EQ(held(tables, 7), std::vector<int32_t>{4});
  EXPECT_THROW(tables.table(8), Error);
  EXPECT_EQ(tables.size(), 1u);
}

TEST(SequenceTables, AStepNamingATableTheWorkerLacksIsRefusedAndChangesNothing) {
  SequenceTables tables;
  tables.apply(step(1, {change(7, 0, {1, 2, 3})}));
  // An unknown sequence (a restarted worker), more kept slots than held, one ended in the same step,
  // and one sequence twice: each refused, naming the sequence, with the good change beside it unapplied.
  const auto refused = [&](msg::WorkerBatch batch, const std::string& says) {
    batch.sequences.insert(batch.sequences.begin(), change(7, 3, {4}));
    try {
      tables.apply(batch);
      ADD_FAILURE() << "accepted: " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
    EXPECT_EQ(held(tables, 7), (std::vector<int32_t>{1, 2, 3}));
  };
  refused(step(2, {change(11, 2, {9})}), "sequence 11 is not known to this worker");
  refused(step(2, {change(12, 0, {1}), change(12, 1, {2})}), "sequence 12 appears twice");
  tables.apply(step(2, {change(13, 0, {20})}));
  refused(step(3, {change(13, 2, {21})}), "keeps 2 KV slots of a table of 1");
  refused(step(3, {change(13, 1, {21})}, {13}), "sequence 13 is not known");
  EXPECT_EQ(held(tables, 13), std::vector<int32_t>{20});
}

// A front that restarts has a new scheduler, which never ends its predecessor's sequences: the
// worker drops their tables at that scheduler's first step, and keeps none of them for it.
TEST(SequenceTables, AnotherSchedulersStepDropsThePreviousSchedulersTables) {
  SequenceTables tables;
  tables.apply(step(1, {change(7, 0, {1, 2}), change(8, 0, {3})}));
  msg::WorkerBatch continued = step(2, {change(7, 2, {4})});
  continued.scheduler_instance = 42;
  EXPECT_THROW(tables.apply(continued), Error);  // the old table is not the new scheduler's
  EXPECT_EQ(held(tables, 7), (std::vector<int32_t>{1, 2}));
  msg::WorkerBatch fresh = step(2, {change(9, 0, {5})});
  fresh.scheduler_instance = 42;
  tables.apply(fresh);
  EXPECT_EQ(tables.size(), 1u);
  EXPECT_EQ(held(tables, 9), std::vector<int32_t>{5});
  msg::WorkerBatch next = step(3, {change(9, 1, {6})});
  next.scheduler_instance = 42;
  tables.apply(next);
  EXPECT_EQ(held(tables, 9), (std::vector<int32_t>{5, 6}));
}

}  // namespace
}  // namespace moe
