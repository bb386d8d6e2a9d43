// Micro-batches for pipeline parallelism: with max_in_flight = N the scheduler plans up to N steps
// before the first comes back, never puts a request in two steps in flight, splits the requests
// between the micro-batches, never preempts a request whose step is in flight, and every output
// still equals the reference (the fake worker checks every slot it reads).
#include <gtest/gtest.h>

#include <deque>
#include <set>

#include "fake_worker.h"
#include "scheduler_driver.h"

namespace moe::test {
namespace {

struct PipelinedRun {
  Replies replies;
  size_t most_in_flight = 0;
  int64_t preemptions = 0;
};

// Keeps up to max_in_flight steps out; the fake worker runs a step when it is planned (the stages
// run micro-batches in the order they were sent, so KV is written in that order) and its result
// comes back after the steps planned before it.
PipelinedRun run_pipelined(Scheduler& scheduler, FakeWorker& worker, int max_in_flight) {
  PipelinedRun run;
  std::deque<std::pair<ScheduledBatch, std::vector<int32_t>>> out;
  for (int round = 0; scheduler.has_unfinished(); ++round) {
    if (round > 100000) throw std::runtime_error("the pipelined run does not end");
    while (scheduler.batches_in_flight() < max_in_flight) {
      std::optional<ScheduledBatch> batch = scheduler.schedule_step();
      if (!batch) break;
      std::set<uint64_t> in_flight;
      for (const auto& [b, ids] : out)
        for (const msg::WorkerSequence& s : b.sequences) in_flight.insert(s.id);
      for (size_t i = 0; i < batch->sequences.size(); ++i)
        EXPECT_FALSE(in_flight.count(batch->sequences[i].id)) << batch->owners[i].rid << " is in two steps in flight";
      std::vector<int32_t> ids = worker.run(*batch);
      out.emplace_back(std::move(*batch), std::move(ids));
    }
    run.most_in_flight = std::max(run.most_in_flight, out.size());
    if (out.empty()) throw std::runtime_error("nothing in flight and nothing planned, yet requests remain");
    join(scheduler.process_result(out.front().first, out.front().second, {}), run.replies);
    out.pop_front();
  }
  run.preemptions = scheduler.stats().num_preemptions;
  return run;
}

SchedulerConfig pipelined(int64_t pool, int64_t chunk, int max_in_flight) {
  SchedulerConfig config;
  config.max_total_tokens = pool;
  config.chunked_prefill_size = chunk;
  config.max_in_flight = max_in_flight;
  return config;
}

TEST(SchedulerPipeline, UpToNStepsInFlightEveryOutputMatchesTheReference) {
  for (const int stages : {2, 3}) {
    for (const int64_t chunk : {7, 0}) {
      SCOPED_TRACE("stages " + std::to_string(stages) + ", chunk " + std::to_string(chunk));
      Scheduler scheduler(pipelined(4096, chunk, stages));
      FakeWorker worker(scheduler.kv_cache_slots());
      for (int i = 0; i < 8; ++i)
        scheduler.add_request(make_request(numbered_rid(i), prompt_of(3 + 9 * i, 100 * i), 5 + i, 77 + i));
      const PipelinedRun run = run_pipelined(scheduler, worker, stages);
      EXPECT_EQ(run.most_in_flight, static_cast<size_t>(stages));
      ASSERT_EQ(run.replies.size(), 8u);
      for (int i = 0; i < 8; ++i)
        EXPECT_EQ(run.replies.at({numbered_rid(i), 0}).output_ids,
                  reference_output(prompt_of(3 + 9 * i, 100 * i), 77 + i, 5 + i));
    }
  }
}

TEST(SchedulerPipeline, DecodesAreSplitBetweenTheMicroBatches) {
  Scheduler scheduler(pipelined(4096, 0, 2));
  FakeWorker worker(scheduler.kv_cache_slots());
  for (int i = 0; i < 6; ++i) scheduler.add_request(make_request(numbered_rid(i), prompt_of(4, 10 * i), 20, 1 + i));
  // Two prefills of three requests each, then each micro-batch decodes its own three.
  for (int step = 0; step < 6; ++step) {
    std::optional<ScheduledBatch> a = scheduler.schedule_step();
    std::optional<ScheduledBatch> b = scheduler.schedule_step();
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->sequences.size(), 3u);
    EXPECT_EQ(b->sequences.size(), 3u);
    EXPECT_THROW(scheduler.schedule_step(), std::logic_error);  // two in flight already
    const std::vector<int32_t> a_ids = worker.run(*a), b_ids = worker.run(*b);
    scheduler.process_result(*a, a_ids, {});
    scheduler.process_result(*b, b_ids, {});
  }
}

TEST(SchedulerPipeline, ASmallPoolPreemptsOnlyRequestsNotInFlightAndStaysExact) {
  for (const int stages : {2, 3}) {
    SCOPED_TRACE("stages " + std::to_string(stages));
    // The longest request needs 3 + 63 + 12 slots; all eight at once need far more than 96.
    Scheduler scheduler(pipelined(96, 7, stages));
    FakeWorker worker(scheduler.kv_cache_slots());
    for (int i = 0; i < 8; ++i)
      scheduler.add_request(make_request(numbered_rid(i), prompt_of(3 + 9 * i, 100 * i), 5 + i, 77 + i));
    const PipelinedRun run = run_pipelined(scheduler, worker, stages);
    EXPECT_GT(run.preemptions, 0);
    ASSERT_EQ(run.replies.size(), 8u);
    for (int i = 0; i < 8; ++i)
      EXPECT_EQ(run.replies.at({numbered_rid(i), 0}).output_ids,
                reference_output(prompt_of(3 + 9 * i, 100 * i), 77 + i, 5 + i));
  }
}

}  // namespace
}  // namespace moe::test
