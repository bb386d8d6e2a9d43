// Scheduler::schedule_step and its helpers: how one step's batch is chosen.
#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>

#include "sampling/logit_adjustments.h"
#include "scheduler/scheduler.h"

namespace moe {

std::optional<ScheduledBatch> Scheduler::schedule_step() {
  if (batches_in_flight() >= max_batches_in_flight())
    throw std::logic_error("Scheduler::schedule_step: max_batches_in_flight() are in flight already");
  ScheduledBatch batch;
  // With several micro-batches in flight, each takes its share of the requests, so the next one
  // finds requests that are not in flight.
  const auto live = static_cast<int64_t>(running_.size() + waiting_.size());
  step_sequence_cap_ = config_.max_in_flight > 1 ? std::max<int64_t>(1, (live + config_.max_in_flight - 1) / config_.max_in_flight)
                                                 : std::numeric_limits<int64_t>::max();
  batch.step = ++last_step_id_;
  batch.scheduler_instance = instance_;
  batch.max_tree_experts = config_.speculative.max_tree_experts;
  int64_t budget = config_.chunked_prefill_size > 0 ? config_.chunked_prefill_size
                                                    : std::numeric_limits<int64_t>::max();
  int64_t prefill_budget = config_.max_prefill_tokens > 0 ? config_.max_prefill_tokens
                                                          : std::numeric_limits<int64_t>::max();
  bool preempted = false;
  schedule_running(batch, budget, prefill_budget, preempted);
  // After a preemption the pool is short: admitting now would only preempt again next step.
  if (!preempted) admit_waiting(batch, budget, prefill_budget);
  if (batch.sequences.empty()) return std::nullopt;
  batch.ended_sequences = std::exchange(ended_on_worker_, {});
  in_flight_steps_.insert(batch.step);
  return batch;
}

// Running requests go first, in admission order: decodes (one pending token, or with overlap the
// token a step in flight samples) in a first pass, then the chunks of prompts still being prefilled.
// Prompt chunks also spend prefill_budget, which holds only where the step has decodes.
void Scheduler::schedule_running(ScheduledBatch& batch, int64_t& budget, int64_t& prefill_budget, bool& preempted) {
  for (const bool decode_pass : {true, false}) {
    // A step with no decodes stalls nobody: its prefill is limited by the step's budget alone.
    if (!decode_pass && batch.sequences.empty()) prefill_budget = std::numeric_limits<int64_t>::max();
    const std::vector<Request*> candidates = running_;  // preemption edits running_
    for (Request* request : candidates) {
      if (budget == 0 || (!decode_pass && prefill_budget == 0) || full(batch)) return;
      if (request->state != RequestState::Running || request->scheduled_step == batch.step) continue;
      if (request->steps_in_flight > 0) {
        if (decode_pass) add_overlapped(batch, *request, budget);
        continue;
      }
      const int64_t pending = request->total_len() - request->num_computed;
      if ((pending == 1) != decode_pass) continue;
      if (decode_pass && add_speculative(batch, *request, budget)) continue;
      const int64_t room = decode_pass ? budget : std::min(budget, prefill_budget);
      const int64_t granted =
          grant_slots(*request, std::min({pending, room, request->step_token_limit()}), !decode_pass, batch, preempted);
      if (granted == 0) continue;  // the request was preempted itself, or waits for the steps in flight
      add_to_batch(batch, *request, granted);
      budget -= granted;
      if (!decode_pass) prefill_budget -= granted;
    }
  }
}

// New requests, first come first served, while the budget, max_running_requests and the KV pool allow.
void Scheduler::admit_waiting(ScheduledBatch& batch, int64_t& budget, int64_t& prefill_budget) {
  while (budget > 0 && prefill_budget > 0 && !waiting_.empty() && !full(batch) &&
         static_cast<int64_t>(running_.size()) < config_.max_running_requests) {
    Request& request = *waiting_.front();
    const int64_t hit = kv_.attach_prefix(request);
    const int64_t pending = request.total_len() - request.num_computed;
    // Room for the whole remaining prefill, and one more token for every running request's next
    // decode, so that admitting does not immediately force a preemption.
    if (kv_.available() < pending + static_cast<int64_t>(running_.size())) {
      release_kv(request);
      return;
    }
    const int64_t chunk = std::min({pending, budget, prefill_budget, request.step_token_limit()});
    kv_.extend(request, chunk);
    waiting_.pop_front();
    request.state = RequestState::Running;
    request.prefill_end = request.total_len();
    request.cached_tokens += hit;
    cache_hit_tokens_ += hit;
    running_.push_back(&request);
    add_to_batch(batch, request, chunk);
    budget -= chunk;
    prefill_budget -= chunk;
  }
}

// Gives a running request `want` new slots (or fewer, down to one, when accept_fewer), preempting
// the latest admitted requests not yet in this batch (nor in flight) until they fit. If none is left
// to preempt and this batch is empty while steps are in flight, 0 is returned (it waits for them);
// otherwise the request preempts itself and 0 is returned. A request alone always fits: add_request capped its
// length at the pool's capacity.
int64_t Scheduler::grant_slots(Request& request, int64_t want, bool accept_fewer, const ScheduledBatch& batch,
                               bool& preempted) {
  while (true) {
    const int64_t available = kv_.available();
    if (available >= want || (accept_fewer && available > 0)) {
      const int64_t granted = std::min(want, available);
      kv_.extend(request, granted);
      return granted;
    }
    Request* victim = pick_victim(request, batch.step);
    // What the steps in flight hold comes back with them: wait for it rather than preempt.
    if (victim == nullptr && batch.sequences.empty() && !in_flight_steps_.empty()) {
      preempted = true;  // the pool is short: admit nobody either
      return 0;
    }
    if (victim == nullptr) {
      if (batch.sequences.empty())
        throw std::logic_error("Scheduler: a lone request does not fit in the KV pool");
      victim = &request;
    }
    preempt(*victim);
    preempted = true;
    if (victim == &request) return 0;
  }
}

Request* Scheduler::pick_victim(const Request& requester, uint64_t step) {
  for (auto it = running_.rbegin(); it != running_.rend(); ++it)
    if (*it != &requester && (*it)->scheduled_step != step && (*it)->steps_in_flight == 0) return *it;
  return nullptr;
}

// Preemption by recompute: the request's computed KV goes to the prefix cache (where a later
// admission may find it again), everything else is freed, and it waits at the head of the queue
// to prefill its prompt and the tokens it generated so far.
void Scheduler::preempt(Request& request) {
  release_kv(request);
  running_.erase(std::find(running_.begin(), running_.end(), &request));
  request.state = RequestState::Waiting;
  waiting_.push_front(&request);
  ++num_preemptions_;
}

void Scheduler::release_kv(Request& request) {
  kv_.release(request);
  if (request.on_worker) ended_on_worker_.push_back(request.uid);
  request.on_worker = false;
  request.worker_slots = 0;
}

void Scheduler::send_slots(Request& request, int64_t end, int64_t num_new_tokens, msg::WorkerSequence& sequence) {
  const int64_t kept = request.on_worker ? std::min(request.worker_slots, end - num_new_tokens) : 0;
  sequence.id = request.uid;
  sequence.kept_slots = static_cast<int32_t>(kept);
  sequence.new_slots.assign(request.slot_table.begin() + kept, request.slot_table.begin() + end);
  request.on_worker = true;
  request.worker_slots = end;
}

void Scheduler::add_to_batch(ScheduledBatch& batch, Request& request, int64_t num_new_tokens) {
  const int64_t end = request.num_computed + num_new_tokens;
  // A finishing request feeds its last token only for the routing: nothing more to sample.
  const bool samples = end == request.total_len() && !request.finishing;
  if (samples) {
    request.pending_outputs = 1;
    request.pending_sample_step = batch.step;
    request.pending_sample_index = batch.num_samplers();
  }
  std::vector<int32_t> prompt_targets = request.input_logprob_targets(request.num_computed, end);
  // Their rows are the chunk's last ones (before the sampled token): the model computes logits for
  // a suffix of each sequence's new tokens.
  if (!prompt_targets.empty() && std::min(end, request.prompt_len() - 1) != end - (samples ? 1 : 0))
    throw std::logic_error("Scheduler: prompt logprob rows that do not end a step's chunk");
  msg::WorkerSequence sequence;
  send_slots(request, end, num_new_tokens, sequence);
  sequence.needs_logits = samples;
  sequence.sampling = token_sampling(request, config_.eos_token_ids);
  sequence.prompt_logprob_ids = std::move(prompt_targets);
  batch.add_sequence(request, request.tokens(request.num_computed, end), std::move(sequence));
  mark_in_flight(batch, request, end);
}

bool Scheduler::add_overlapped(ScheduledBatch& batch, Request& request, int64_t& budget) {
  // Only a request whose one step in flight feeds all its known tokens and samples the next, which
  // will not be its last by length: feeding that token is then this request's next work whatever it
  // is (an EOS drawn there makes this step's work for it wasted, never returned). Penalties need
  // the token itself; a finishing request has nothing more to sample.
  const auto outputs = static_cast<int64_t>(request.output_ids.size());
  if (!config_.overlap || budget < 1 || request.steps_in_flight != 1 || request.pending_outputs != 1 ||
      request.in_flight_end != request.total_len() || request.finishing || penalizes(request.sampling) ||
      outputs + 1 >= request.sampling.max_new_tokens)
    return false;
  if (static_cast<int64_t>(request.slot_table.size()) != request.total_len())
    throw std::logic_error("Scheduler: an overlapped request's slots do not end at its last token");
  // A slot for the future token if the pool has one: a request in flight is never preempted, nor
  // preempts anyone; short of slots, it waits for its step as without overlap.
  if (kv_.available() < 1 || !kv_.extend(request, 1)) return false;
  const int64_t end = request.total_len() + 1;
  batch.future_tokens.push_back({static_cast<int32_t>(batch.token_ids.size()), request.pending_sample_step,
                                 request.pending_sample_index});
  msg::WorkerSequence sequence;
  send_slots(request, end, 1, sequence);
  sequence.needs_logits = true;
  sequence.sampling = token_sampling(request, config_.eos_token_ids, 1);
  request.pending_outputs = 2;
  request.pending_sample_step = batch.step;
  request.pending_sample_index = batch.num_samplers();
  batch.add_sequence(request, {msg::kFutureTokenId}, std::move(sequence));
  mark_in_flight(batch, request, end);
  ++overlapped_tokens_;
  budget -= 1;
  return true;
}

void Scheduler::mark_in_flight(const ScheduledBatch& batch, Request& request, int64_t end) const {
  request.scheduled_step = batch.step;
  ++request.steps_in_flight;
  request.in_flight_end = end;
}

bool Scheduler::full(const ScheduledBatch& batch) const {
  return static_cast<int64_t>(batch.sequences.size()) >= step_sequence_cap_;
}

}  // namespace moe
