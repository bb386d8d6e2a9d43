#include "serving/load_generator.h"

#include <chrono>
#include <fmt/format.h>
#include <random>
#include <thread>
#include <unordered_set>

#include "common/error.h"

namespace moe::bench {
namespace {

using Clock = std::chrono::steady_clock;

Clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

BenchRequest random_request(const LoadOptions& options, std::mt19937_64& rng) {
  std::uniform_int_distribution<int32_t> token(0, options.vocab_size - 1);
  BenchRequest request;
  request.input_ids.resize(static_cast<size_t>(options.input_len));
  for (int32_t& id : request.input_ids) id = token(rng);
  request.output_len = options.output_len;
  request.temperature = options.temperature;
  request.return_routed_experts = options.return_routed_experts;
  return request;
}

// Sends `count` requests with ids first_id.. and records them until each has finished, failed or
// timed out; times are seconds since `start`.
class RequestDriver {
 public:
  RequestDriver(StreamingTransport& transport, const LoadOptions& options, int count, uint64_t first_id,
                Clock::time_point start)
      : transport_(transport),
        options_(options),
        first_id_(first_id),
        start_(start),
        records_(static_cast<size_t>(count)),
        deadlines_(static_cast<size_t>(count)),
        gap_(options.request_rate > 0 ? options.request_rate : 1.0),
        next_send_(start) {}

  std::vector<RequestRecord> run(std::mt19937_64& rng) {
    std::vector<StreamEvent> events;
    while (done_ < records_.size()) {
      const Clock::time_point now = Clock::now();
      fail_overdue(now);
      const bool can_send = sent_ < records_.size() && static_cast<int>(in_flight_.size()) < options_.concurrency;
      if (can_send && now >= next_send_) {
        send(now, rng);
        continue;
      }
      if (in_flight_.empty()) {
        if (can_send) std::this_thread::sleep_until(next_send_);  // Poisson mode, waiting for the next arrival
        continue;
      }
      Clock::time_point wake = can_send ? next_send_ : Clock::time_point::max();
      for (size_t request : in_flight_) wake = std::min(wake, deadlines_[request]);
      events.clear();
      transport_.wait(wake, events);
      for (const StreamEvent& event : events) record(event);
    }
    return std::move(records_);
  }

 private:
  double since_start(Clock::time_point t) const { return std::chrono::duration<double>(t - start_).count(); }

  void send(Clock::time_point now, std::mt19937_64& rng) {
    records_[sent_].sent = since_start(now);
    records_[sent_].prompt_tokens = options_.input_len;
    deadlines_[sent_] = now + to_duration(options_.request_timeout_s);
    transport_.send(first_id_ + sent_, random_request(options_, rng));
    in_flight_.insert(sent_++);
    if (options_.request_rate > 0) next_send_ += to_duration(gap_(rng));
  }

  // Requests past their deadline fail and free their slots.
  void fail_overdue(Clock::time_point now) {
    for (auto it = in_flight_.begin(); it != in_flight_.end();) {
      if (deadlines_[*it] > now) {
        ++it;
        continue;
      }
      transport_.cancel(first_id_ + *it);
      records_[*it].error = fmt::format("no answer within --request-timeout {:g} s", options_.request_timeout_s);
      records_[*it].finished = since_start(now);
      ++done_;
      it = in_flight_.erase(it);
    }
  }

  void record(const StreamEvent& event) {
    const auto request = in_flight_.find(static_cast<size_t>(event.request - first_id_));
    if (request == in_flight_.end()) return;  // transports send nothing after cancel(); this is a guard
    RequestRecord& record = records_[*request];
    record.token_times.insert(record.token_times.end(), static_cast<size_t>(event.new_tokens), since_start(event.at));
    if (!event.finished) return;
    record.error = event.error;
    record.finished = since_start(event.at);
    in_flight_.erase(request);
    ++done_;
  }

  StreamingTransport& transport_;
  const LoadOptions& options_;
  uint64_t first_id_;
  Clock::time_point start_;
  std::vector<RequestRecord> records_;
  std::vector<Clock::time_point> deadlines_;  // per request: when it fails unless finished
  std::unordered_set<size_t> in_flight_;     // indices into records_
  std::exponential_distribution<double> gap_;
  Clock::time_point next_send_;  // Poisson mode; the closed loop sends whenever a slot is free
  size_t sent_ = 0;
  size_t done_ = 0;
};

}  // namespace

std::vector<RequestRecord> run_load(StreamingTransport& transport, const LoadOptions& options,
                                    double& duration_seconds) {
  if (options.concurrency < 1) throw Error("moe-bench: --concurrency must be at least 1");
  if (options.request_timeout_s <= 0) throw Error("moe-bench: --request-timeout must be positive");
  std::mt19937_64 rng(options.seed);
  LoadOptions warmup = options;
  warmup.request_rate = 0;
  RequestDriver(transport, warmup, options.warmup_prompts, 0, Clock::now()).run(rng);
  const Clock::time_point start = Clock::now();
  std::vector<RequestRecord> records =
      RequestDriver(transport, options, options.num_prompts, static_cast<uint64_t>(options.warmup_prompts), start)
          .run(rng);
  duration_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return records;
}

}  // namespace moe::bench
