#include "scheduler_driver.h"

#include <deque>
#include <numeric>
#include <stdexcept>

namespace moe::test {

void join(const std::vector<CompletionRecord>& records, Replies& replies) {
  for (const CompletionRecord& record : records) {
    Reply& reply = replies[{record.rid, record.index}];
    if (reply.finished) throw std::runtime_error("a record of " + record.rid + " after its final one");
    reply.output_ids.insert(reply.output_ids.end(), record.output_ids.begin(), record.output_ids.end());
    reply.kv_slots.insert(reply.kv_slots.end(), record.row_slots.begin(), record.row_slots.end());
    if (record.finish_reason) {
      reply.finished = true;
      reply.reason = *record.finish_reason;
      reply.cached_tokens = record.cached_tokens;
    }
  }
}

RunLog run_to_completion(Scheduler& scheduler, const WorkerFn& worker, int max_steps) {
  RunLog log;
  for (int step = 0; scheduler.has_unfinished(); ++step) {
    if (step == max_steps) throw std::runtime_error("scheduler did not finish within the step limit");
    std::optional<ScheduledBatch> batch = scheduler.schedule_step();
    if (!batch) throw std::runtime_error("scheduler has unfinished requests but scheduled nothing");
    const std::vector<int32_t> sampled = worker(*batch);
    join(scheduler.process_result(*batch, sampled, {}), log.replies);
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
    join(scheduler.process_result(out.front().first, out.front().second, {}), log.replies);
    log.batches.push_back(std::move(out.front().first));
    out.pop_front();
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
