#pragma once
// The scheduler's vocabulary: a request with its scheduling state, the batch one step runs, and
// what a step's result (or an abort) reports back. A request is the client's TokenizedRequest
// itself, extended with state: its sampling, stop and output settings are read where they are
// used, never copied into scheduler-side fields.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "moe/messages.h"
#include "scheduler/radix_cache.h"

namespace moe {

// Where a request is: Parked = a completion of an n > 1 request waiting for its first sibling's
// prompt to reach the prefix cache; Waiting/Running = the scheduler's two queues.
enum class RequestState { Parked, Waiting, Running };

// The most prompt logprob rows one step computes for a request: their logits are rows x vocabulary
// floats (156 MB for 256 rows of a 152k vocabulary), so a long prompt's come over several chunks.
inline constexpr int64_t kMaxPromptLogprobRowsPerStep = 256;

struct Request : msg::TokenizedRequest {
  // sampling.seed is the effective seed once added (drawn by the scheduler when the client gave
  // none, so a preempted and recomputed request samples the same tokens; completion i uses seed + i),
  // and sampling.max_new_tokens is clamped to what the context and the KV pool leave room for.

  // --- Filled in by the scheduler.
  int index = 0;     // which of the n completions this is
  uint64_t uid = 0;  // unique over the scheduler's life, so a stale batch entry never hits a new request
  RequestState state = RequestState::Waiting;
  std::vector<int32_t> output_ids;
  std::vector<int32_t> slot_table;  // req_to_token: KV slot of position i (prompt then output)
  // The model worker's copy of slot_table (its SequenceTables entry, keyed by uid): whether it holds
  // one, and how many leading entries of it still equal slot_table's, as the steps sent so far left
  // it; the next step sends only the entries after those.
  bool on_worker = false;
  int64_t worker_slots = 0;
  int64_t num_computed = 0;         // positions [0, num_computed) have their KV in slot_table
  int64_t num_cache_owned = 0;      // positions [0, num_cache_owned) use slots the radix cache owns
  RadixCache::Node* cache_node = nullptr;  // the locked radix node covering those positions
  int64_t prefill_end = 0;          // total_len() when last admitted: chunks below it are prefill
  uint64_t scheduled_step = 0;      // the last step that included this request
  int steps_in_flight = 0;          // steps that include it and have not come back (two with overlap)
  int64_t in_flight_end = 0;        // positions [num_computed, in_flight_end) are fed by those steps
  // Output tokens those steps sample, not known here yet (one at most, or two while an overlapped
  // step feeds the first of them), and where the latest will be: its step and index among the
  // step's sampled ids.
  int pending_outputs = 0;
  uint64_t pending_sample_step = 0;
  int32_t pending_sample_index = 0;
  int64_t cached_tokens = 0;        // prefix-cache hit tokens summed over admissions (meta_info)
  // What the completion's records have reported so far: its options (on the first record) and the
  // positions whose KV slots their row_slots named.
  bool options_reported = false;
  int64_t rows_reported = 0;
  // A request whose reply includes its last token's routing (routed_experts_include_last) that met
  // its stop condition: the reason it finishes with once that token has been fed, without sampling.
  std::optional<msg::FinishReason> finishing;
  // Prompt logprobs (logprob_start_len >= 0) received so far: one per logits row, from position
  // first_input_logprob_row() on (the row before each token); handed over with the first output.
  std::vector<float> input_row_logprobs;
  std::vector<msg::TokenAlternatives> input_row_top;
  bool input_logprobs_sent = false;

  // slot_table's entries from `position` on were rewritten (or cut): the worker's copy agrees below it only.
  void slots_rewritten_from(int64_t position) { worker_slots = std::min(worker_slots, position); }
  int64_t prompt_len() const { return static_cast<int64_t>(input_ids.size()); }
  int64_t total_len() const { return prompt_len() + static_cast<int64_t>(output_ids.size()); }
  // Prompt logprobs: whether the request asked for them, the first position whose logits they need
  // (the one before logprob_start_len; 0 for 0), and whether rows are still to be computed.
  bool wants_input_logprobs() const { return return_logprob && logprob_start_len >= 0; }
  int64_t first_input_logprob_row() const { return logprob_start_len > 0 ? logprob_start_len - 1 : 0; }
  int64_t next_input_logprob_row() const {
    return first_input_logprob_row() + static_cast<int64_t>(input_row_logprobs.size());
  }
  bool input_logprob_rows_pending() const {
    return wants_input_logprobs() && !input_logprobs_sent && next_input_logprob_row() < prompt_len() - 1;
  }
  // Positions a prefix-cache hit may cover: all but the last (recomputed for its logits), and none
  // from the next prompt logprob row still to compute (as SGLang caps its match at logprob_start_len).
  int64_t prefix_limit() const {
    return input_logprob_rows_pending() ? next_input_logprob_row() : total_len() - 1;
  }
  // New tokens the request's next step may feed: any number, or with prompt logprob rows pending, as
  // many as keep them within kMaxPromptLogprobRowsPerStep.
  int64_t step_token_limit() const {
    return input_logprob_rows_pending() ? next_input_logprob_row() - num_computed + kMaxPromptLogprobRowsPerStep
                                        : std::numeric_limits<int64_t>::max();
  }
  // The prompt tokens after this step's new tokens [begin, end) whose logprobs the rows of the step
  // give (their rows are the chunk's last ones, before the sampled token); empty when none.
  std::vector<int32_t> input_logprob_targets(int64_t begin, int64_t end) const;
  // Puts the prompt logprobs in the record of the completion's first token, once all rows are in:
  // the prompt's tokens from logprob_start_len on, each one's logprob (NaN for the prompt's first
  // token, which has no context) and, when top logprobs were asked, the alternatives at its position
  // (none for the first token). Marks them sent.
  void take_input_logprobs(msg::SequenceOutput& record);
  // Tokens of positions [begin, end) of prompt followed by output.
  std::vector<int32_t> tokens(int64_t begin, int64_t end) const;
  // The reason to stop after the latest output token, if any: an EOS id (unless ignore_eos) or a
  // stop_token_id, else reaching max_new_tokens (a stop token wins on the last token).
  std::optional<msg::FinishReason> stop_reason(const std::vector<int32_t>& eos_token_ids) const;
};

// Whom a sequence of a step belongs to: the request and which of its n completions (the sequence's
// id is the completion's uid, so a stale entry never reaches a later request of the same rid).
struct SequenceOwner {
  std::string rid;
  int index = 0;
};

// How request is sampled at its next output token (and, in a verify, the ones after it): its draw
// settings, penalties over its output so far, and min_new_tokens' ban on `eos_token_ids` and its stop ids.
// With pending_outputs > 0 the token sampled is that many outputs after the known ones (overlap).
msg::TokenSampling token_sampling(const Request& request, const std::vector<int32_t>& eos_token_ids,
                                  int pending_outputs = 0);

// One step as the scheduler plans it: the message the model worker receives, in which each sequence
// is described once (msg::WorkerSequence: its new tokens, the change to its KV slots, tree, sampling), and whom each
// sequence belongs to. The service keeps it while the step is in flight and hands the worker the
// message part itself, so no other description of a sequence is made on the way.
struct ScheduledBatch : msg::WorkerBatch {
  std::vector<SequenceOwner> owners;  // parallel to sequences

  // Sampled ids the step returns: one per sequence that needs logits (a tree's count varies).
  int32_t num_samplers() const;
  // KV slots of the tokens sequence i feeds in this step (the capture hook: a routed-experts row
  // computed for one of them belongs at that slot of the host cache).
  std::span<const int32_t> new_token_slots(size_t sequence) const;
  // The KV slot of every row of the flattened token axis, in forward order.
  std::vector<int32_t> token_slots() const;
  // Appends a sequence of `owner` with its new tokens (sequence.num_new_tokens is set from them) and
  // their positions, which run on from the table's length (kept_slots + new_slots.size()) less
  // tokens.size(), or with tree_parents sit at that plus each node's depth.
  void add_sequence(const Request& owner, const std::vector<int32_t>& tokens, msg::WorkerSequence sequence);
  // Puts the trees a worker drafted (every draft_topk sequence's node tokens then parents, in batch
  // order, as WorkerResult carries them) in place of the placeholders, so the verify's result is
  // committed against the tree that was verified. Trees that do not fit the placeholders' sizes,
  // root or depths (which fixed the positions and slots sent) are a moe::Error, and change nothing.
  void adopt_drafted_trees(std::span<const int32_t> tokens, std::span<const int32_t> parents);
};

// What a step (or an abort, or a stop) reports of one completion: the one record of its result,
// as the detokenizer receives it (msg::DetokenizeItem: the new output ids with their logprobs, the
// prompt logprobs with the first token, the finish reason on the last, the request's options on the
// first record), but for its routing rows. row_slots are the KV slots of the positions computed
// since the completion's previous record, whose rows the service gathers into routed_experts once
// their step's rows have arrived, when `routing` (the request's) asks for them.
struct CompletionRecord : msg::DetokenizeItem {
  std::vector<int32_t> row_slots;
  msg::RoutingOptions routing;
};

}  // namespace moe
