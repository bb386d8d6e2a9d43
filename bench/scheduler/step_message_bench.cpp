// The bytes of a decode step's WorkerBatch (the scheduler → worker message, as the ZeroMQ codec
// encodes it) at rollout scale: 256 sequences each with 2,048 tokens of context. A step carries each
// sequence's KV slots that the worker does not hold yet (SequenceTables); "full_tables" is the same
// step with every sequence's whole table in it, as a sequence's first step carries it (and as every
// step carried it before protocol version 20).
#include <benchmark/benchmark.h>

#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "moe/messages.h"
#include "scheduler/scheduler.h"
#include "transport/message_codec.h"

namespace moe {
namespace {

constexpr int kSequences = 256;
constexpr int kContext = 2048;

SchedulerConfig rollout_config() {
  SchedulerConfig config;
  config.max_total_tokens = int64_t{kSequences} * (kContext + 64);
  config.max_running_requests = kSequences;
  config.enable_radix_cache = false;
  config.chunked_prefill_size = 0;  // every prompt in one step: the decode after it is every sequence's first
  return config;
}

// Adds kSequences requests of kContext prompt tokens and runs their prefill and first sample: the
// scheduler's next step is a decode of every sequence.
void prefill(Scheduler& scheduler) {
  for (int s = 0; s < kSequences; ++s) {
    Request request;
    request.rid = "r" + std::to_string(s);
    request.input_ids.resize(kContext);
    std::iota(request.input_ids.begin(), request.input_ids.end(), s * kContext);
    request.sampling.max_new_tokens = 1024;
    request.sampling.temperature = 0.0f;
    scheduler.add_request(std::move(request));
  }
  // Prefill steps until every request has sampled its first token.
  std::set<std::string> sampled;
  while (sampled.size() < kSequences) {
    const std::optional<ScheduledBatch> batch = scheduler.schedule_step();
    const std::vector<int32_t> ids(static_cast<size_t>(batch->num_samplers()), 7);
    for (const CompletionRecord& record : scheduler.process_result(*batch, ids, {}))
      if (!record.output_ids.empty()) sampled.insert(record.rid);
  }
}

void BM_DecodeStepMessage(benchmark::State& state) {
  Scheduler scheduler(rollout_config(), 1);
  prefill(scheduler);
  const ScheduledBatch step = *scheduler.schedule_step();
  const msg::WorkerBatch& delta = step;
  // The same step with every table whole (a slot list is one bin of 4 bytes a slot, whatever the
  // values: the kept entries are written as zeros).
  msg::WorkerBatch full = delta;
  for (msg::WorkerSequence& s : full.sequences) {
    std::vector<int32_t> table(static_cast<size_t>(s.kept_slots), 0);
    table.insert(table.end(), s.new_slots.begin(), s.new_slots.end());
    s.kept_slots = 0;
    s.new_slots = std::move(table);
  }
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string encoded = transport::encode_message(delta);
    bytes = encoded.size();
    benchmark::DoNotOptimize(encoded.data());
  }
  state.counters["sequences"] = static_cast<double>(step.sequences.size());
  state.counters["step_bytes"] = static_cast<double>(bytes);
  state.counters["full_tables_bytes"] = static_cast<double>(transport::encode_message(full).size());
}
BENCHMARK(BM_DecodeStepMessage)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace moe
