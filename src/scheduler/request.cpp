#include "scheduler/request.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/error.h"
#include "model/forward_batch.h"
#include "sampling/logit_adjustments.h"

namespace moe {

std::vector<int32_t> Request::tokens(int64_t begin, int64_t end) const {
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(end - begin));
  for (int64_t pos = begin; pos < end; ++pos)
    out.push_back(pos < prompt_len() ? input_ids[pos] : output_ids[pos - prompt_len()]);
  return out;
}

std::vector<int32_t> Request::input_logprob_targets(int64_t begin, int64_t end) const {
  if (!input_logprob_rows_pending()) return {};
  const int64_t next = next_input_logprob_row();
  if (begin > next)
    throw std::logic_error("Request: prompt logprob rows from " + std::to_string(next) + " were skipped by a step from " +
                           std::to_string(begin));
  const int64_t last = std::min(end, prompt_len() - 1);  // the last prompt position has no next prompt token
  std::vector<int32_t> targets;
  for (int64_t pos = next; pos < last; ++pos) targets.push_back(input_ids[pos + 1]);
  return targets;
}

void Request::take_input_logprobs(msg::SequenceOutput& record) {
  if (input_logprob_rows_pending()) throw std::logic_error("Request: prompt logprobs taken before all their rows came");
  record.input_token_ids.assign(input_ids.begin() + logprob_start_len, input_ids.end());
  if (logprob_start_len == 0) {
    record.input_token_logprobs.push_back(std::numeric_limits<float>::quiet_NaN());
    if (top_logprobs_num > 0) record.input_top_logprobs.emplace_back();
  }
  record.input_token_logprobs.insert(record.input_token_logprobs.end(), input_row_logprobs.begin(),
                                     input_row_logprobs.end());
  if (top_logprobs_num > 0)
    record.input_top_logprobs.insert(record.input_top_logprobs.end(), input_row_top.begin(), input_row_top.end());
  input_row_logprobs.clear();
  input_row_top.clear();
  input_logprobs_sent = true;
}

std::optional<msg::FinishReason> Request::stop_reason(const std::vector<int32_t>& eos_token_ids) const {
  const int32_t token = output_ids.back();
  auto contains = [token](const std::vector<int32_t>& ids) {
    return std::find(ids.begin(), ids.end(), token) != ids.end();
  };
  // Explicit stop_token_ids stop even with ignore_eos, as in vLLM.
  if ((!sampling.ignore_eos && contains(eos_token_ids)) || contains(sampling.stop_token_ids))
    return msg::FinishReason::stop_token(token);
  if (static_cast<int64_t>(output_ids.size()) >= sampling.max_new_tokens) return msg::FinishReason::length();
  return std::nullopt;
}

msg::TokenSampling token_sampling(const Request& request, const std::vector<int32_t>& eos_token_ids,
                                  int pending_outputs) {
  const auto outputs = static_cast<int64_t>(request.output_ids.size()) + pending_outputs;
  msg::TokenSampling sampling;
  static_cast<msg::DrawSettings&>(sampling) = request.sampling;
  sampling.seed = *request.sampling.seed;
  sampling.step = static_cast<uint64_t>(outputs);
  sampling.return_logprob = request.return_logprob;
  if (request.return_logprob) sampling.top_logprobs = request.top_logprobs_num;
  if (penalizes(request.sampling)) sampling.generated_ids = request.output_ids;
  // min_new_tokens: the tokens that would stop the request may not be drawn before then (SGLang).
  if (outputs < request.sampling.min_new_tokens) {
    sampling.suppressed_ids = request.sampling.stop_token_ids;
    if (!request.sampling.ignore_eos)
      sampling.suppressed_ids.insert(sampling.suppressed_ids.end(), eos_token_ids.begin(), eos_token_ids.end());
  }
  return sampling;
}

int32_t ScheduledBatch::num_samplers() const {
  return static_cast<int32_t>(std::count_if(sequences.begin(), sequences.end(),
                                            [](const msg::WorkerSequence& s) { return s.needs_logits; }));
}

std::span<const int32_t> ScheduledBatch::new_token_slots(size_t sequence) const {
  const msg::WorkerSequence& seq = sequences.at(sequence);
  const std::span<const int32_t> sent(seq.new_slots);  // always ends with the new tokens' slots
  return sent.last(static_cast<size_t>(seq.num_new_tokens));
}

std::vector<int32_t> ScheduledBatch::token_slots() const {
  std::vector<int32_t> slots;
  slots.reserve(token_ids.size());
  for (size_t i = 0; i < sequences.size(); ++i) {
    const std::span<const int32_t> seq_slots = new_token_slots(i);
    slots.insert(slots.end(), seq_slots.begin(), seq_slots.end());
  }
  return slots;
}

void ScheduledBatch::add_sequence(const Request& owner, const std::vector<int32_t>& tokens, msg::WorkerSequence sequence) {
  const bool tree = !sequence.tree_parents.empty();
  if (tokens.empty() || sequence.new_slots.size() < tokens.size() || (tree && sequence.tree_parents.size() != tokens.size()))
    throw std::logic_error("Scheduler: a step's sequence needs a new token, the KV slots of its new tokens and, in a "
                           "tree, a parent for every node");
  const auto prefix = static_cast<int32_t>(sequence.kept_slots + sequence.new_slots.size() - tokens.size());
  const std::vector<int32_t> depths = tree ? tree_depths(sequence.tree_parents) : std::vector<int32_t>();
  for (size_t i = 0; i < tokens.size(); ++i) {
    token_ids.push_back(tokens[i]);
    positions.push_back(prefix + (tree ? depths[i] : static_cast<int32_t>(i)));
  }
  sequence.num_new_tokens = static_cast<int32_t>(tokens.size());
  sequences.push_back(std::move(sequence));
  owners.push_back({owner.rid, owner.index});
}

void ScheduledBatch::adopt_drafted_trees(std::span<const int32_t> tokens, std::span<const int32_t> parents) {
  if (parents.size() != tokens.size())
    throw Error("worker result: " + std::to_string(tokens.size()) + " drafted tokens but " +
                std::to_string(parents.size()) + " parents");
  // Checked in full before anything changes.
  struct Adopted {
    size_t sequence, first_token, first_node;
  };
  std::vector<Adopted> adopted;
  size_t node = 0, first_token = 0;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const msg::WorkerSequence& seq = sequences[i];
    const auto n = static_cast<size_t>(seq.num_new_tokens);
    if (seq.draft_topk > 0) {
      if (node + n > tokens.size())
        throw Error("worker result: fewer drafted tokens than the step's draft trees have nodes");
      const std::vector<int32_t> drafted(parents.begin() + static_cast<int64_t>(node),
                                         parents.begin() + static_cast<int64_t>(node + n));
      if (tokens[node] != token_ids[first_token] || tree_depths(drafted) != tree_depths(seq.tree_parents))
        throw Error("worker result: a drafted tree does not keep its placeholder's root and depths");
      adopted.push_back({i, first_token, node});
      node += n;
    }
    first_token += n;
  }
  if (node != tokens.size()) throw Error("worker result: more drafted tokens than the step's draft trees have nodes");
  for (const Adopted& a : adopted) {
    msg::WorkerSequence& seq = sequences[a.sequence];
    const auto n = static_cast<int64_t>(seq.num_new_tokens);
    std::copy(tokens.begin() + static_cast<int64_t>(a.first_node), tokens.begin() + static_cast<int64_t>(a.first_node) + n,
              token_ids.begin() + static_cast<int64_t>(a.first_token));
    seq.tree_parents.assign(parents.begin() + static_cast<int64_t>(a.first_node),
                            parents.begin() + static_cast<int64_t>(a.first_node) + n);
  }
}

}  // namespace moe
