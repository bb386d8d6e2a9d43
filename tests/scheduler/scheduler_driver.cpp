#include "scheduler_driver.h"

#include <deque>
#include <numeric>
#include <stdexcept>

namespace moe::test {

RunLog run_to_completion(Scheduler& scheduler, const WorkerFn& worker, int max_steps) {
  RunLog log;
  for (int step = 0; scheduler.has_unfinished(); ++step) {
    if (step == max_steps) throw std::runtime_error("scheduler did not finish within the step limit");
    std::optional<ScheduledBatch> batch = scheduler.schedule_step();
    if (!batch) throw std::runtime_error("scheduler has unfinished requests but scheduled nothing");
    const std::vector<int32_t> sampled = worker(*batch);
    StepOutcome outcome = scheduler.process_result(*batch, sampled, {});
    for (FinishedRequest& done : outcome.finished) {
      auto key = std::make_pair(done.rid, done.index);
      log.finished.emplace(std::move(key), std::move(done));
    }
    log.batches.push_back(std::move(*batch));
  }
  return log;
}

RunLog run_in_flight(Scheduler& scheduler, const WorkerFn& worker, const BetweenFn& between) {
  RunLog log;
  std::deque<std::pair<ScheduledBatch, std::vector<int32_t>>> out;
  for (int round = 0; scheduler.has_unfinished() || !out.empty(); ++round) {
    if (round > 100000) throw std::runtime_error("the run with steps in flight does not end");
    while (scheduler.batches_in_flight() < scheduler.max_batches_in_flight()) {
      std::optional<ScheduledBatch> batch = scheduler.schedule_step();
      if (!batch) break;
      std::vector<int32_t> sampled = worker(*batch);
      out.emplace_back(std::move(*batch), std::move(sampled));
    }
    if (out.empty()) throw std::runtime_error("nothing in flight and nothing planned, yet requests remain");
    if (between) between(scheduler, log);
    StepOutcome outcome = scheduler.process_result(out.front().first, out.front().second, {});
    log.batches.push_back(std::move(out.front().first));
    out.pop_front();
    for (FinishedRequest& done : outcome.finished)
      log.finished.emplace(std::make_pair(done.rid, done.index), std::move(done));
  }
  return log;
}

Request make_request(std::string rid, std::vector<int32_t> prompt, int max_new_tokens,
                     std::optional<uint64_t> seed, int n) {
  Request request;
  request.rid = std::move(rid);
  request.input_ids = std::move(prompt);
  request.sampling.max_new_tokens = max_new_tokens;
  request.sampling.ignore_eos = true;
  request.sampling.temperature = 0.0f;
  request.sampling.seed = seed;
  request.sampling.n = n;
  return request;
}

std::vector<int32_t> prompt_of(int length, int32_t first) {
  std::vector<int32_t> prompt(static_cast<size_t>(length));
  std::iota(prompt.begin(), prompt.end(), first);
  return prompt;
}

std::string numbered_rid(int i) {
  std::string rid = "r";
  rid += std::to_string(i);
  return rid;
}

}  // namespace moe::test
