#include "serving/routing_rows_tracker.h"

#include "common/error.h"

namespace moe {

RoutingRowsTracker::RoutingRowsTracker(int64_t num_slots, int num_moe_layers, int top_k, bool with_weights,
                                       DraftRowShape draft, std::function<void()> on_step_stored)
    : host_(num_slots, num_moe_layers, top_k, with_weights), on_step_stored_(std::move(on_step_stored)) {
  if (draft.num_moe_layers > 0) draft_host_.emplace(num_slots, draft.num_moe_layers, draft.top_k, false);
}

void RoutingRowsTracker::step_scheduled(uint64_t step, std::vector<int32_t> token_slots) {
  const int layers = host_.num_moe_layers();
  step_slots_[step] = {std::move(token_slots), std::vector<bool>(static_cast<size_t>(layers), false), layers, {},
                       draft_host_.has_value()};
}

bool RoutingRowsTracker::rows_stored_through(uint64_t step) const {
  return step_slots_.empty() || step < step_slots_.begin()->first;
}

void RoutingRowsTracker::rows_arrived(const msg::StepRouting& routing) {
  auto it = step_slots_.find(routing.step);
  if (it == step_slots_.end())
    throw Error("routing rows for step " + std::to_string(routing.step) + " that was not scheduled or already stored");
  OutstandingStep& out = it->second;
  const int first = routing.first_layer, count = routing.rows.num_layers;
  if (first < 0 || count < 1 || first + count > host_.num_moe_layers())
    throw Error("routing rows of step " + std::to_string(routing.step) + " for MoE layers [" + std::to_string(first) +
                ", " + std::to_string(first + count) + ") of a model with " + std::to_string(host_.num_moe_layers()));
  for (int l = first; l < first + count; ++l)
    if (out.layer_arrived[l])
      throw Error("routing rows of step " + std::to_string(routing.step) + " arrived twice for MoE layer " +
                  std::to_string(l));
  out.slices.emplace_back(first, StagedRouting{routing.step, routing.rows.num_rows(), count, routing.rows.top_k,
                                               routing.rows.expert_ids, routing.rows.weights});
  for (int l = first; l < first + count; ++l) out.layer_arrived[l] = true;
  out.layers_missing -= count;
  if (out.whole()) store_whole_steps();
}

void RoutingRowsTracker::draft_rows_arrived(uint64_t step, const msg::RoutingRows& rows) {
  if (!draft_host_) return;
  auto it = step_slots_.find(step);
  if (it == step_slots_.end() || !it->second.draft_missing)
    throw Error("draft routing rows for step " + std::to_string(step) + " that was not scheduled or already has them");
  OutstandingStep& out = it->second;
  if (rows.num_layers != draft_host_->num_moe_layers() || rows.top_k != draft_host_->top_k() ||
      rows.num_rows() != static_cast<int64_t>(out.token_slots.size()))
    throw Error("draft routing rows of step " + std::to_string(step) + " do not match the draft model or the step");
  out.draft = StagedRouting{step, rows.num_rows(), rows.num_layers, rows.top_k, rows.expert_ids, {}};
  out.draft_missing = false;
  if (out.whole()) store_whole_steps();
}

void RoutingRowsTracker::store_whole_steps() {
  while (!step_slots_.empty() && step_slots_.begin()->second.whole()) {
    const OutstandingStep& whole = step_slots_.begin()->second;
    for (const auto& [first, staged] : whole.slices) host_.store(staged, whole.token_slots, first);
    if (draft_host_) draft_host_->store(whole.draft, whole.token_slots);
    step_slots_.erase(step_slots_.begin());
    if (on_step_stored_) on_step_stored_();
  }
}

void RoutingRowsTracker::reset() { step_slots_.clear(); }

msg::RoutingRows RoutingRowsTracker::gather(const int32_t* slots, int64_t count, bool with_weights) const {
  msg::RoutingRows rows;
  rows.num_layers = host_.num_moe_layers();
  rows.top_k = host_.top_k();
  host_.gather(slots, count, rows.expert_ids, with_weights ? &rows.weights : nullptr);
  return rows;
}

msg::RoutingRows RoutingRowsTracker::gather_draft(const int32_t* slots, int64_t count) const {
  if (!draft_host_) throw Error("draft routing rows asked of a tracker without a draft model");
  msg::RoutingRows rows;
  rows.num_layers = draft_host_->num_moe_layers();
  rows.top_k = draft_host_->top_k();
  draft_host_->gather(slots, count, rows.expert_ids, nullptr);
  return rows;
}

}  // namespace moe
