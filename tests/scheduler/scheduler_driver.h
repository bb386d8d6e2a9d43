#pragma once
// Test harness: runs a Scheduler to completion against a worker function, the way the scheduler
// actor will (schedule_step -> worker -> process_result), collecting every finished completion.
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/scheduler.h"

namespace moe::test {

// The worker: sampled ids for a batch (one per sequence that needs logits, in order).
using WorkerFn = std::function<std::vector<int32_t>(const ScheduledBatch&)>;

struct RunLog {
  std::map<std::pair<std::string, int>, FinishedRequest> finished;  // by (rid, index)
  std::vector<ScheduledBatch> batches;                              // every step, in order
};

// Steps until the scheduler has nothing unfinished; fails the test (throws) if it stalls or loops.
RunLog run_to_completion(Scheduler& scheduler, const WorkerFn& worker, int max_steps = 100000);

// A request as tests build them: greedy unless a seed is given, ignoring EOS.
Request make_request(std::string rid, std::vector<int32_t> prompt, int max_new_tokens,
                     std::optional<uint64_t> seed = std::nullopt, int n = 1);

// length consecutive token ids starting at first: distinct prompts for distinct `first`s.
std::vector<int32_t> prompt_of(int length, int32_t first);

// "r0", "r1", ...: rids for tests that add many requests.
std::string numbered_rid(int i);

}  // namespace moe::test
