#pragma once
// Test harness: runs a Scheduler to completion against a worker function, the way the scheduler
// actor will (schedule_step -> worker -> process_result), joining every completion's records into
// its reply.
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/scheduler.h"

namespace moe::test {

// The worker: sampled ids for a batch (one per sequence that needs logits, in order).
using WorkerFn = std::function<std::vector<int32_t>(const ScheduledBatch&)>;

// A completion's records joined, as a client's reply joins them.
struct Reply {
  std::vector<int32_t> output_ids;
  std::vector<int32_t> kv_slots;  // every record's row_slots, in order: the slots of the rows the reply covers
  bool finished = false;
  msg::FinishReason reason;       // once finished
  int64_t cached_tokens = 0;      // once finished
};
using Replies = std::map<std::pair<std::string, int>, Reply>;  // by (rid, index)

// Adds each record to its completion's reply.
void join(const std::vector<CompletionRecord>& records, Replies& replies);

struct RunLog {
  Replies replies;                      // every completion's, finished once the run ends
  std::vector<ScheduledBatch> batches;  // every step, in order
};

// Steps until the scheduler has nothing unfinished; fails the test (throws) if it stalls or loops.
RunLog run_to_completion(Scheduler& scheduler, const WorkerFn& worker, int max_steps = 100000);

// The same with up to scheduler.max_batches_in_flight() steps out: the worker runs each step when
// it is planned (as a worker runs steps in the order they were sent) and its result is applied after
// those of the steps planned before it. `between` runs before each result is applied, with the
// replies so far (to abort or stop requests while steps are in flight).
using BetweenFn = std::function<void(Scheduler&, RunLog&)>;
RunLog run_in_flight(Scheduler& scheduler, const WorkerFn& worker, const BetweenFn& between = {});

// A request as tests build them: greedy unless a seed is given, ignoring EOS.
Request make_request(std::string rid, std::vector<int32_t> prompt, int max_new_tokens,
                     std::optional<uint64_t> seed = std::nullopt, int n = 1);

// length consecutive token ids starting at first: distinct prompts for distinct `first`s.
std::vector<int32_t> prompt_of(int length, int32_t first);

// "r0", "r1", ...: rids for tests that add many requests.
std::string numbered_rid(int i);

}  // namespace moe::test
