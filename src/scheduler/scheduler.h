#pragma once
// Continuous batching: waiting and running queues, a token budget per step
// that mixes decodes (first) with prefill chunks, admission when KV slots are available (evicting
// cached prefixes first), preemption by recompute when they run out, abort, stop conditions and
// n > 1 completions sharing their prompt's KV through the prefix cache. No sockets, no event loop:
// the scheduler actor feeds it requests and worker results and sends out what it returns.
//
// Use: add_request() any time; schedule_step() -> send the batch to the worker ->
// process_result() with its sampled ids; repeat. Up to max_batches_in_flight() batches are in flight
// at once: one per pipeline stage, so the stages overlap, where a request is never in two of them;
// or, with overlap, two, the second feeding requests the tokens the first samples.
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "scheduler/kv_manager.h"
#include "scheduler/request.h"
#include "scheduler/speculation.h"

namespace moe {

// The scheduler's knobs, named after SGLang's server flags.
struct SchedulerConfig {
  int64_t max_total_tokens = 0;         // KV slot pool capacity in tokens (--max-total-tokens)
  int max_running_requests = 256;       // --max-running-requests
  int64_t chunked_prefill_size = 8192;  // tokens per step, decodes included; <= 0 = no limit
  bool enable_radix_cache = true;       // --disable-radix-cache clears it
  int64_t context_length = 0;           // the model's max positions; 0 = only the KV pool limits
  std::vector<int32_t> eos_token_ids;   // the model's end-of-sequence ids
  SpeculativeConfig speculative;        // off unless --speculative-algorithm
  // Batches planned before the first comes back (--pp-size): each step then takes about
  // 1/max_in_flight of the requests, so that every stage has a micro-batch to run.
  int max_in_flight = 1;
  // Overlapped scheduling (without pipeline stages or speculation): step n+1 is planned and sent
  // while step n runs, feeding each decoding request the token step n samples for it, unseen (the
  // worker fills it in). So two steps are in flight, and a request may be in both.
  bool overlap = false;
  // Prompt tokens per step (prefill chunks, new requests' and running ones') beside decodes
  // (--max-prefill-tokens): a step with decodes carries at most this much prefill, which bounds how
  // long a prompt's chunk stalls every decoding request; a step without takes chunked_prefill_size.
  // <= 0 = only chunked_prefill_size limits.
  int64_t max_prefill_tokens = 0;
};

// Counters for metrics and tests.
struct SchedulerStats {
  int64_t num_running = 0;
  int64_t num_waiting = 0;       // parked n > 1 completions included
  int64_t kv_slots_used = 0;     // by requests and the prefix cache
  int64_t kv_slots_total = 0;
  int64_t radix_cached_tokens = 0;
  int64_t cache_hit_tokens = 0;  // since start
  int64_t num_preemptions = 0;   // since start
  // Speculative decoding, since start: draft trees verified, their draft tokens, and the drafts
  // kept (each verify also adds one token of its own).
  int64_t verify_passes = 0;
  int64_t draft_tokens = 0;
  int64_t accepted_drafts = 0;
  // Distinct experts the verifying steps' tree tokens used, summed over those steps and MoE layers,
  // and how many (step, layer) pairs that sums (filled by the scheduler service, which sees them).
  int64_t verify_distinct_experts = 0;
  int64_t verify_layer_passes = 0;
  // Overlapped scheduling, since start: decode tokens sent as future tokens (planned before the
  // step that samples them came back).
  int64_t overlapped_tokens = 0;
};

class Scheduler {
 public:
  // seed_source draws the seeds of requests that bring none.
  explicit Scheduler(const SchedulerConfig& config, uint64_t seed_source = std::random_device{}());

  // Queues a request's n completions. The front door (RequestPreparer) has validated it against
  // max_sequence_len(); a request it would have refused is a std::logic_error here. max_new_tokens
  // is clamped so that prompt + output fits. Without a seed, one is drawn now, so a preempted and
  // recomputed request samples the same tokens; completion i uses seed + i.
  void add_request(Request request);
  // Plans the next step, or nullopt when there is nothing to run; none may be asked while
  // max_batches_in_flight() are in flight (std::logic_error). Requests in flight are left out, but
  // for overlapped decodes.
  std::optional<ScheduledBatch> schedule_step();
  int64_t batches_in_flight() const { return static_cast<int64_t>(in_flight_steps_.size()); }
  int max_batches_in_flight() const { return config_.overlap ? 2 : config_.max_in_flight; }
  // Applies the worker's result for `batch`: sampled ids (and logprobs and top alternatives, or none
  // of them) of each sequence that needs_logits, in batch order: sampled_counts[i] of them for the
  // i-th (a draft tree's accepted drafts and one more), one each when sampled_counts is empty. A
  // route_last_token request that meets its stop condition finishes one step later, once its last
  // token has been fed without sampling.
  // `prompt` holds the logprobs of every sequence's prompt_logprob_ids, in batch order (and their
  // top alternatives, or none); a completion's first token's record carries them all.
  // Returns one record per completion that gained tokens or finished.
  struct PromptRows {
    std::span<const float> logprobs;
    std::span<const msg::TokenAlternatives> top;
  };
  std::vector<CompletionRecord> process_result(const ScheduledBatch& batch, std::span<const int32_t> sampled_ids,
                                             std::span<const float> logprobs,
                                             std::span<const int32_t> sampled_counts = {},
                                             std::span<const msg::TokenAlternatives> top = {},
                                             PromptRows prompt = {});
  // Ends every completion of rid, waiting or running, freeing its slots; their final records.
  // Unknown rid: none.
  std::vector<CompletionRecord> abort(const std::string& rid, const std::string& message);
  // Whether rid names a live request (a new request may not reuse it until it has ended).
  bool has_request(const std::string& rid) const { return groups_.count(rid) > 0; }
  // Whether live request rid asked for its last token's routing (routed_experts_include_last).
  bool routes_last_token(const std::string& rid) const;
  // The live requests a step has run for: a completion is running, holds output, or has ended.
  // Their replies would mix two models' tokens if new weights continued them. With `all`, every
  // live request (also those only queued, which new weights would serve whole).
  std::vector<std::string> begun_requests(bool all) const;
  // A stop string ended completion (rid, index) at its kept_outputs-th output token: later tokens
  // are dropped. A route_last_token completion whose kept last token was not fed yet finishes
  // through process_result once it has been (nullopt now); any other ends at once.
  std::optional<CompletionRecord> stop_at_output(const std::string& rid, int index, int64_t kept_outputs,
                                                 msg::FinishReason reason);
  // Retracts every running request (a paused engine's retract mode): each gives its KV back as a
  // preemption does (computed positions to the prefix cache, the rest to the pool) and waits at the
  // head of the queue, in admission order, to be recomputed. Only with no batch in flight
  // (std::logic_error otherwise). Returns how many were retracted.
  int64_t retract_running();
  // The batches in flight will never come back (a worker died): forget them, so that planning can go on.
  void abandon_in_flight();
  // Evicts every cached prefix no running request uses.
  void flush_cache() { kv_.flush_cache(); }

  bool has_unfinished() const { return !groups_.empty(); }
  SchedulerStats stats() const;
  // Slots the worker's KV cache must have (the pool plus its padding slot).
  int64_t kv_cache_slots() const { return kv_.pool().num_slots(); }
  // Longest prompt + output a request may reach, from the context and the pool.
  int64_t max_sequence_len() const;

 private:
  // The live request a batch entry names, or nullptr if it finished since.
  Request* find(const std::string& rid, int index, uint64_t uid);

  // --- Planning one step (scheduler_step.cpp).
  // Decodes, then continuing prefill chunks, of the running requests.
  void schedule_running(ScheduledBatch& batch, int64_t& budget, int64_t& prefill_budget, bool& preempted);
  // Moves waiting requests into the batch while budget, max_running_requests and KV allow.
  void admit_waiting(ScheduledBatch& batch, int64_t& budget, int64_t& prefill_budget);
  // Slots for a running request's next tokens, preempting others if needed; 0 if it was preempted.
  int64_t grant_slots(Request& request, int64_t want, bool accept_fewer, const ScheduledBatch& batch,
                      bool& preempted);
  // The latest admitted running request, other than requester, not already in this step nor in a
  // step in flight (whose KV a stage may be writing).
  Request* pick_victim(const Request& requester, uint64_t step);
  // Frees a running request's KV and puts it back at the head of the waiting queue.
  void preempt(Request& request);
  // Whether the step being planned holds its share of the requests already.
  bool full(const ScheduledBatch& batch) const;
  // Appends the request's next num_new_tokens (slots already granted) to the batch.
  void add_to_batch(ScheduledBatch& batch, Request& request, int64_t num_new_tokens);
  // Overlap: whether a request in flight may also feed, in this step, the token its step in flight
  // samples, and if so adds it (a future token) with one new slot; never preempts for it.
  bool add_overlapped(ScheduledBatch& batch, Request& request, int64_t& budget);
  // Records that the request is in the step being planned, feeding positions up to end.
  void mark_in_flight(const ScheduledBatch& batch, Request& request, int64_t end) const;

  // --- Speculative decoding (scheduler_speculation.cpp).
  // Adds a decoding request's next token with a draft tree after it, when a tree is proposed and
  // fits the budget and the pool without preempting anyone; false otherwise (it decodes as usual).
  bool add_speculative(ScheduledBatch& batch, Request& request, int64_t& budget);
  // A verified tree's result: the tokens drawn along the accepted path, then one more.
  struct VerifiedTokens {
    std::span<const int32_t> ids;
    std::span<const float> logprobs;              // aligned with ids, or empty
    std::span<const msg::TokenAlternatives> top;  // aligned with ids, or empty
  };
  // Applies a verified tree's drawn tokens to its request: keeps tokens up to a stop condition, the
  // KV slots of the accepted path (the others go back to the pool) and reports what was kept.
  void commit_verified(const msg::WorkerSequence& seq, std::span<const int32_t> node_tokens, Request& request,
                       VerifiedTokens drawn, std::vector<CompletionRecord>& records);

  // --- Lifecycle.
  // The record of request's result in this step, started (with its options on the completion's
  // first record) unless it is the last of `records` already.
  static CompletionRecord& record_of(Request& request, std::vector<CompletionRecord>& records);
  // Adds the KV slots of the positions request computed since its previous record to `record`.
  static void report_rows(Request& request, CompletionRecord& record);
  // Appends a sampled token to request's output and record; the reason to stop after it, if any.
  std::optional<msg::FinishReason> append_output(Request& request, int32_t token, float logprob,
                                                 msg::TokenAlternatives top,
                                                 std::vector<CompletionRecord>& records) const;
  // Ends a request that met its stop condition (destroying it), or, when its reply includes the last
  // token's routing, marks it to finish once that token has been fed.
  void stop(Request& request, msg::FinishReason reason, std::vector<CompletionRecord>& records);
  // Removes a request from wherever it is, frees its KV and ends its record with `reason`.
  void finish(Request& request, msg::FinishReason reason, std::vector<CompletionRecord>& records);
  // Frees a request's KV (KvManager::release); the worker's copy of its slot table goes with the next step.
  void release_kv(Request& request);
  // The part of request's slot table, positions [0, end), that the worker does not hold yet, into
  // `sequence` (id, kept_slots, new_slots); always at least the slots of the last num_new_tokens.
  void send_slots(Request& request, int64_t end, int64_t num_new_tokens, msg::WorkerSequence& sequence);
  // Moves rid's parked completions to the head of the waiting queue.
  void unpark_siblings(const std::string& rid);

  SchedulerConfig config_;
  KvManager kv_;
  std::mt19937_64 seed_rng_;
  // Every live request, by rid; the vector holds its n completions (nullptr once finished).
  std::unordered_map<std::string, std::vector<std::unique_ptr<Request>>> groups_;
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;  // in admission order: the last admitted is preempted first
  // This scheduler's id on its steps (WorkerBatch::scheduler_instance); request uids (the worker's
  // sequence ids) and step ids count from a random start, never from 0: see scheduler.cpp.
  uint64_t instance_;
  uint64_t next_uid_;
  uint64_t last_step_id_;
  // Sequences whose worker-side slot tables the next step tells the worker to drop.
  std::vector<uint64_t> ended_on_worker_;
  std::set<uint64_t> in_flight_steps_;
  int64_t step_sequence_cap_ = 0;  // sequences the step being planned may still take
  int64_t cache_hit_tokens_ = 0;
  int64_t num_preemptions_ = 0;
  int64_t verify_passes_ = 0;
  int64_t draft_tokens_ = 0;
  int64_t accepted_drafts_ = 0;
  int64_t overlapped_tokens_ = 0;
};

}  // namespace moe
