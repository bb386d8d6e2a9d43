#include "scheduler/scheduler.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "common/error.h"

namespace moe {

namespace {

template <typename Queue>
void erase_from(Queue& queue, const Request* request) {
  queue.erase(std::remove(queue.begin(), queue.end(), request), queue.end());
}

}  // namespace

namespace {

// A model worker outlives the front that started it (a front killed and restarted against a worker
// that stayed up): it looks up the tokens earlier steps sampled by step id, and results and routing
// rows of the old front's last steps may still be queued to the new one. Were step ids counted from 0
// by every scheduler, a new front's step could take an old step's samples or rows; from a random
// start no two schedulers' steps meet. Sequence ids (request uids) likewise: the worker keeps each
// live sequence's KV slot table by that id, and a new front's sequence must never continue an old
// front's table. Two bits are left free so the count never wraps.
uint64_t random_start() {
  std::random_device device;
  const uint64_t high = device(), low = device();
  return ((high << 32) | low) >> 2;
}

}  // namespace

Scheduler::Scheduler(const SchedulerConfig& config, uint64_t seed_source)
    : config_(config),
      kv_(config.max_total_tokens, config.enable_radix_cache),
      seed_rng_(seed_source),
      instance_(random_start()),
      next_uid_(random_start()),
      last_step_id_(random_start()) {
  if (config.max_running_requests < 1)
    throw Error("max_running_requests must be at least 1, got " + std::to_string(config.max_running_requests));
}

int64_t Scheduler::max_sequence_len() const {
  const int64_t pool = kv_.pool().capacity();
  return config_.context_length > 0 ? std::min(pool, config_.context_length) : pool;
}

void Scheduler::add_request(Request request) {
  // The last output token is never fed, so prompt + max_new_tokens - 1 positions must fit (all
  // prompt + max_new_tokens when it is fed for its routing).
  const int64_t room = max_sequence_len() - request.prompt_len() + (request.routing.routes_last_token() ? 0 : 1);
  if (groups_.count(request.rid) || request.input_ids.empty() || room < 1 || request.sampling.max_new_tokens < 1 ||
      request.sampling.n < 1 || request.logprob_start_len < -1 ||
      (request.return_logprob && request.logprob_start_len >= request.prompt_len()))
    throw std::logic_error("Scheduler::add_request: request '" + request.rid +
                           "' should have been refused at the front door");
  request.sampling.max_new_tokens = static_cast<int32_t>(std::min<int64_t>(request.sampling.max_new_tokens, room));
  const uint64_t seed = request.sampling.seed ? *request.sampling.seed : seed_rng_();
  auto& group = groups_[request.rid];
  for (int i = 0; i < request.sampling.n; ++i) {
    auto completion = std::make_unique<Request>(request);
    completion->index = i;
    completion->uid = next_uid_++;
    completion->sampling.seed = seed + static_cast<uint64_t>(i);
    // Later completions wait until the first one's prompt is in the prefix cache, then share it.
    completion->state = i == 0 ? RequestState::Waiting : RequestState::Parked;
    if (i == 0) waiting_.push_back(completion.get());
    group.push_back(std::move(completion));
  }
}

Request* Scheduler::find(const std::string& rid, int index, uint64_t uid) {
  auto it = groups_.find(rid);
  if (it == groups_.end() || index < 0 || index >= static_cast<int>(it->second.size())) return nullptr;
  Request* request = it->second[index].get();
  return request != nullptr && request->uid == uid ? request : nullptr;
}

bool Scheduler::routes_last_token(const std::string& rid) const {
  const auto it = groups_.find(rid);
  if (it == groups_.end()) return false;
  for (const auto& completion : it->second)
    if (completion) return completion->routing.routes_last_token();
  return false;
}

std::vector<CompletionRecord> Scheduler::process_result(const ScheduledBatch& batch,
                                                        std::span<const int32_t> sampled_ids,
                                                        std::span<const float> logprobs,
                                                        std::span<const int32_t> sampled_counts,
                                                        std::span<const msg::TokenAlternatives> top,
                                                        PromptRows prompt) {
  if (!in_flight_steps_.count(batch.step))
    throw std::logic_error("Scheduler::process_result: not a batch in flight");
  size_t num_samplers = 0, num_sampled = 0;
  for (const msg::WorkerSequence& seq : batch.sequences) num_samplers += seq.needs_logits ? 1 : 0;
  if (!sampled_counts.empty() && sampled_counts.size() != num_samplers)
    throw Error("worker result counts the tokens of " + std::to_string(sampled_counts.size()) +
                " sequences for a batch that samples " + std::to_string(num_samplers));
  size_t sampler = 0;
  for (const msg::WorkerSequence& seq : batch.sequences) {
    if (!seq.needs_logits) continue;
    const int64_t count = sampled_counts.empty() ? 1 : sampled_counts[sampler];
    ++sampler;
    if (count < 1 || count > (seq.tree_parents.empty() ? 1 : seq.num_new_tokens))
      throw Error("worker result samples " + std::to_string(count) + " tokens for a sequence of " +
                  std::to_string(seq.num_new_tokens) + " new tokens");
    num_sampled += static_cast<size_t>(count);
  }
  if (sampled_ids.size() != num_sampled || (!logprobs.empty() && logprobs.size() != num_sampled) ||
      (!top.empty() && top.size() != num_sampled))
    throw Error("worker result has " + std::to_string(sampled_ids.size()) + " sampled ids, " +
                std::to_string(logprobs.size()) + " logprobs and " + std::to_string(top.size()) +
                " top logprob lists for a batch that samples " + std::to_string(num_sampled) + " tokens");
  size_t num_prompt_rows = 0;
  for (const msg::WorkerSequence& seq : batch.sequences) num_prompt_rows += seq.prompt_logprob_ids.size();
  if (prompt.logprobs.size() != num_prompt_rows || (!prompt.top.empty() && prompt.top.size() != num_prompt_rows))
    throw Error("worker result has " + std::to_string(prompt.logprobs.size()) + " prompt logprobs and " +
                std::to_string(prompt.top.size()) + " top logprob lists for a batch with " +
                std::to_string(num_prompt_rows) + " prompt logprob rows");
  in_flight_steps_.erase(batch.step);

  std::vector<CompletionRecord> records;
  size_t sample = 0, prompt_row = 0;
  sampler = 0;
  int64_t first_token = 0;
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const msg::WorkerSequence& seq = batch.sequences[i];
    const SequenceOwner& owner = batch.owners[i];
    const size_t row = sample;
    const size_t count = !seq.needs_logits ? 0 : sampled_counts.empty() ? 1 : static_cast<size_t>(sampled_counts[sampler]);
    sampler += seq.needs_logits ? 1 : 0;
    sample += count;
    const std::span<const int32_t> node_tokens(batch.token_ids.data() + first_token,
                                               static_cast<size_t>(seq.num_new_tokens));
    first_token += seq.num_new_tokens;
    const size_t prompt_rows = seq.prompt_logprob_ids.size();
    const size_t first_prompt_row = std::exchange(prompt_row, prompt_row + prompt_rows);
    Request* request = find(owner.rid, owner.index, seq.id);
    if (request == nullptr) continue;  // finished or aborted while the batch was in flight
    if (prompt_rows > 0) {
      const auto rows = prompt.logprobs.subspan(first_prompt_row, prompt_rows);
      request->input_row_logprobs.insert(request->input_row_logprobs.end(), rows.begin(), rows.end());
      if (!prompt.top.empty()) {
        const auto tops = prompt.top.subspan(first_prompt_row, prompt_rows);
        request->input_row_top.insert(request->input_row_top.end(), tops.begin(), tops.end());
      }
    }
    --request->steps_in_flight;
    const bool tree = !seq.tree_parents.empty();
    if (seq.needs_logits && !tree) --request->pending_outputs;
    if (tree) {
      commit_verified(seq, node_tokens, *request,
                      {sampled_ids.subspan(row, count), logprobs.empty() ? logprobs : logprobs.subspan(row, count),
                       top.empty() ? top : top.subspan(row, count)},
                      records);
      continue;
    }

    request->num_computed += seq.num_new_tokens;
    if (request->num_computed <= request->prefill_end) kv_.cache_progress(*request);
    if (request->index == 0 && request->num_computed >= request->prompt_len()) unpark_siblings(request->rid);
    if (request->finishing && request->num_computed == request->total_len()) {
      finish(*request, std::move(*request->finishing), records);
      continue;
    }
    if (!seq.needs_logits) continue;

    const int32_t token = sampled_ids[row];
    const float logprob = logprobs.empty() ? 0.0f : logprobs[row];
    std::optional<msg::FinishReason> reason =
        append_output(*request, token, logprob, top.empty() ? msg::TokenAlternatives{} : top[row], records);
    report_rows(*request, records.back());
    if (reason) stop(*request, std::move(*reason), records);
  }
  return records;
}

CompletionRecord& Scheduler::record_of(Request& request, std::vector<CompletionRecord>& records) {
  if (!records.empty() && records.back().index == request.index && records.back().rid == request.rid)
    return records.back();
  CompletionRecord& record = records.emplace_back();
  record.rid = request.rid;
  record.index = request.index;
  record.prompt_tokens = static_cast<int32_t>(request.prompt_len());
  record.routing = request.routing;
  if (!std::exchange(request.options_reported, true)) record.options = static_cast<const msg::RequestOptions&>(request);
  return record;
}

void Scheduler::report_rows(Request& request, CompletionRecord& record) {
  // Positions a stop string dropped, or a recompute computed again, were reported already.
  const int64_t from = std::min(request.rows_reported, request.num_computed);
  record.row_slots.insert(record.row_slots.end(), request.slot_table.begin() + from,
                          request.slot_table.begin() + request.num_computed);
  request.rows_reported = std::max(request.rows_reported, request.num_computed);
}

std::optional<msg::FinishReason> Scheduler::append_output(Request& request, int32_t token, float logprob,
                                                          msg::TokenAlternatives top,
                                                          std::vector<CompletionRecord>& records) const {
  request.output_ids.push_back(token);
  CompletionRecord& record = record_of(request, records);
  record.output_ids.push_back(token);
  if (request.return_logprob) {
    record.output_logprobs.push_back(logprob);
    if (request.top_logprobs_num > 0) record.output_top_logprobs.push_back(std::move(top));
    if (request.wants_input_logprobs() && !request.input_logprobs_sent) request.take_input_logprobs(record);
  }
  return request.stop_reason(config_.eos_token_ids);
}

void Scheduler::stop(Request& request, msg::FinishReason reason, std::vector<CompletionRecord>& records) {
  if (request.routing.routes_last_token())
    request.finishing = std::move(reason);  // the next step feeds the token, then it finishes
  else
    finish(request, std::move(reason), records);
}

int64_t Scheduler::retract_running() {
  if (!in_flight_steps_.empty()) throw std::logic_error("Scheduler::retract_running: batches are in flight");
  const std::vector<Request*> running = running_;
  // The latest admitted first: each goes to the head of the queue, so the earliest ends up first.
  for (auto it = running.rbegin(); it != running.rend(); ++it) preempt(**it);
  return static_cast<int64_t>(running.size());
}

void Scheduler::abandon_in_flight() {
  in_flight_steps_.clear();
  for (auto& [rid, group] : groups_)
    for (auto& request : group)
      if (request) {
        request->steps_in_flight = 0;
        request->pending_outputs = 0;
        request->in_flight_end = request->num_computed;
      }
}

std::vector<CompletionRecord> Scheduler::abort(const std::string& rid, const std::string& message) {
  std::vector<CompletionRecord> records;
  auto it = groups_.find(rid);
  if (it == groups_.end()) return records;
  std::vector<Request*> live;
  for (auto& completion : it->second)
    if (completion) live.push_back(completion.get());
  for (Request* request : live) finish(*request, msg::FinishReason::abort(message), records);
  return records;
}

std::vector<std::string> Scheduler::begun_requests(bool all) const {
  std::vector<std::string> rids;
  for (const auto& [rid, group] : groups_) {
    const bool begun = std::any_of(group.begin(), group.end(), [](const std::unique_ptr<Request>& r) {
      return r == nullptr || r->state == RequestState::Running || !r->output_ids.empty();
    });
    if (all || begun) rids.push_back(rid);
  }
  return rids;
}

std::optional<CompletionRecord> Scheduler::stop_at_output(const std::string& rid, int index, int64_t kept_outputs,
                                                          msg::FinishReason reason) {
  auto it = groups_.find(rid);
  if (it == groups_.end() || index < 0 || index >= static_cast<int>(it->second.size()) || !it->second[index])
    return std::nullopt;
  Request& request = *it->second[index];
  // Positions the prefix cache already owns stay (a recomputed request's cached outputs).
  const auto kept = static_cast<size_t>(
      std::max<int64_t>(kept_outputs, request.num_cache_owned - request.prompt_len()));
  if (kept < request.output_ids.size()) request.output_ids.resize(kept);
  // The dropped tokens' KV goes back to the pool with the rest when the request is released.
  request.num_computed = std::min(request.num_computed, request.total_len());
  if (request.routing.routes_last_token() && request.num_computed < request.total_len()) {
    request.finishing = std::move(reason);
    return std::nullopt;
  }
  std::vector<CompletionRecord> records;
  finish(request, std::move(reason), records);
  return std::move(records.front());
}

void Scheduler::finish(Request& request, msg::FinishReason reason, std::vector<CompletionRecord>& records) {
  CompletionRecord& record = record_of(request, records);
  report_rows(request, record);
  record.finish_reason = std::move(reason);
  record.cached_tokens = static_cast<int32_t>(request.cached_tokens);
  const std::string rid = request.rid;
  const int index = request.index;
  switch (request.state) {
    case RequestState::Running:
      release_kv(request);
      erase_from(running_, &request);
      break;
    case RequestState::Waiting:
      erase_from(waiting_, &request);
      break;
    case RequestState::Parked:
      break;
  }
  // A first completion that ends before its prompt was cached must not strand its siblings.
  if (index == 0) unpark_siblings(rid);

  auto group = groups_.find(rid);
  group->second[static_cast<size_t>(index)].reset();  // destroys request
  if (std::none_of(group->second.begin(), group->second.end(), [](const auto& r) { return r != nullptr; }))
    groups_.erase(group);
}

void Scheduler::unpark_siblings(const std::string& rid) {
  auto& group = groups_.at(rid);
  // Pushed to the front in reverse so they keep their order, ahead of requests that came later.
  for (auto it = group.rbegin(); it != group.rend(); ++it) {
    if (*it && (*it)->state == RequestState::Parked) {
      (*it)->state = RequestState::Waiting;
      waiting_.push_front(it->get());
    }
  }
}

SchedulerStats Scheduler::stats() const {
  int64_t parked = 0;
  for (const auto& [rid, group] : groups_)
    for (const auto& r : group) parked += r && r->state == RequestState::Parked ? 1 : 0;
  // The verify expert counts are the scheduler service's to fill (it sees the worker's results).
  return {.num_running = static_cast<int64_t>(running_.size()),
          .num_waiting = static_cast<int64_t>(waiting_.size()) + parked,
          .kv_slots_used = kv_.pool().num_used(),
          .kv_slots_total = kv_.pool().capacity(),
          .radix_cached_tokens = kv_.cached_tokens(),
          .cache_hit_tokens = cache_hit_tokens_,
          .num_preemptions = num_preemptions_,
          .verify_passes = verify_passes_,
          .draft_tokens = draft_tokens_,
          .accepted_drafts = accepted_drafts_,
          .overlapped_tokens = overlapped_tokens_};
}

}  // namespace moe
