// Scheduler::add_speculative and commit_verified: a decoding request's draft tree into the step,
// and the verify's result back into the request.
#include <algorithm>
#include <stdexcept>

#include "sampling/tree_acceptance.h"
#include "scheduler/scheduler.h"

namespace moe {
namespace {

// Renumbers a verified tree's fed nodes as the request's next positions and frees the other nodes.
void keep_verified_slots(KvManager& kv, Request& request, const std::vector<int32_t>& tree_slots,
                         std::span<const int32_t> fed_nodes) {
  // The fed nodes' slots hold their K/V (and routing rows), computed at exactly the positions they
  // now take; every other node's slot goes back to the pool. The worker's copy of the table stands
  // up to the first fed node that is not the node at its place (the rest is cut).
  size_t unmoved = 0;
  while (unmoved < fed_nodes.size() && fed_nodes[unmoved] == static_cast<int32_t>(unmoved)) ++unmoved;
  request.slots_rewritten_from(request.num_computed + static_cast<int64_t>(unmoved));
  request.slot_table.resize(static_cast<size_t>(request.num_computed));
  std::vector<bool> keep(tree_slots.size(), false);
  for (int32_t node : fed_nodes) {
    request.slot_table.push_back(tree_slots[node]);
    keep[node] = true;
  }
  std::vector<int32_t> rejected;
  for (size_t n = 0; n < tree_slots.size(); ++n)
    if (!keep[n]) rejected.push_back(tree_slots[n]);
  kv.free_slots(rejected);
  request.num_computed += static_cast<int64_t>(fed_nodes.size());
}

}  // namespace

bool Scheduler::add_speculative(ScheduledBatch& batch, Request& request, int64_t& budget) {
  const SpeculativeConfig& spec = config_.speculative;
  if (!spec.enabled() || !request.speculative || request.finishing) return false;
  // Before min_new_tokens the stop tokens are banned for a count of outputs a tree would cross:
  // plain decoding until then.
  if (static_cast<int64_t>(request.output_ids.size()) < request.sampling.min_new_tokens) return false;
  // A verify yields up to its depth + 1 tokens: never more than the request may still generate.
  const int64_t left = request.sampling.max_new_tokens - static_cast<int64_t>(request.output_ids.size());
  const int64_t max_depth = std::min<int64_t>(spec.num_steps, left - 1);
  // Drafts never preempt: one slot stays free for each running request still to decode this step.
  const auto still_to_decode = std::count_if(running_.begin(), running_.end(), [&](const Request* r) {
    return r != &request && r->scheduled_step != batch.step;
  });
  const int64_t room = std::min<int64_t>({budget, kv_.available() - still_to_decode, spec.num_draft_tokens}) - 1;
  if (max_depth < 1 || room < 1) return false;
  // Node 0 is the root, the request's pending token.
  const int32_t root = request.tokens(request.num_computed, request.total_len()).front();
  std::vector<int32_t> tokens = {root};
  std::vector<int32_t> parents = {-1};
  const bool worker_drafts = spec.worker_drafts();
  if (worker_drafts) {
    // The worker's drafter fills this shape: eagle_topk nodes per layer, max_depth layers at most.
    parents = standalone_tree_shape(
        static_cast<int>(std::min<int64_t>(room, int64_t{spec.eagle_topk} * max_depth)) + 1, spec.eagle_topk);
    tokens.resize(parents.size(), root);  // placeholders
  } else {
    const DraftTree tree = ngram_draft(request.tokens(0, request.total_len()), static_cast<int>(room),
                                       static_cast<int>(max_depth), spec.eagle_topk,
                                       {spec.ngram_min_match, spec.ngram_max_match});
    if (tree.size() == 0) return false;
    // Draft i is node i + 1.
    for (size_t i = 0; i < tree.size(); ++i) {
      tokens.push_back(tree.tokens[i]);
      parents.push_back(tree.parents[i] + 1);
    }
  }
  const auto nodes = static_cast<int64_t>(tokens.size());
  if (!kv_.extend(request, nodes)) throw std::logic_error("Scheduler: a draft tree's slots were counted available");
  msg::WorkerSequence sequence;
  send_slots(request, request.num_computed + nodes, nodes, sequence);
  sequence.needs_logits = true;
  sequence.sampling = token_sampling(request, config_.eos_token_ids);
  sequence.tree_parents = std::move(parents);
  if (worker_drafts) sequence.draft_topk = spec.eagle_topk;
  batch.add_sequence(request, tokens, std::move(sequence));
  mark_in_flight(batch, request, request.num_computed + nodes);
  budget -= nodes;
  return true;
}

void Scheduler::commit_verified(const msg::WorkerSequence& seq, std::span<const int32_t> node_tokens, Request& request,
                                VerifiedTokens drawn, std::vector<CompletionRecord>& records) {
  const std::vector<int32_t> path = accepted_path(node_tokens, seq.tree_parents, drawn.ids.first(drawn.ids.size() - 1));
  const int64_t root = request.num_computed;  // the root's position: the first of the tree's slots
  const std::vector<int32_t> tree_slots(request.slot_table.begin() + root, request.slot_table.end());
  ++verify_passes_;
  draft_tokens_ += static_cast<int64_t>(tree_slots.size()) - 1;
  accepted_drafts_ += static_cast<int64_t>(path.size()) - 1;

  // A stop string ended the request while its verify was in flight, keeping its last token for its
  // routing: the root was that token, fed now; the drafts count for nothing.
  if (request.finishing) {
    keep_verified_slots(kv_, request, tree_slots, std::span(path).first(1));
    if (request.num_computed == request.total_len()) finish(request, *request.finishing, records);
    return;
  }
  // Tokens are kept up to the first that meets a stop condition.
  size_t kept = 0;
  std::optional<msg::FinishReason> reason;
  while (kept < drawn.ids.size() && !reason) {
    reason = append_output(request, drawn.ids[kept], drawn.logprobs.empty() ? 0.0f : drawn.logprobs[kept],
                           drawn.top.empty() ? msg::TokenAlternatives{} : drawn.top[kept], records);
    ++kept;
  }
  // Fed now: the root and the kept drafts but the last kept token, which is the next one to feed.
  keep_verified_slots(kv_, request, tree_slots, std::span(path).first(kept));
  report_rows(request, records.back());
  if (reason) stop(request, std::move(*reason), records);
}

}  // namespace moe
