#include "serving/request_translation.h"

namespace moe {

Request to_request(const msg::TokenizedRequest& in, const std::vector<int32_t>& eos_token_ids) {
  Request r;
  r.rid = in.rid;
  r.prompt_ids = in.input_ids;
  r.sampling = SamplingParams{in.sampling.temperature, in.sampling.top_p, in.sampling.top_k, in.sampling.min_p, 0};
  r.seed = in.sampling.seed;
  r.stop.max_new_tokens = in.sampling.max_new_tokens;
  r.stop.eos_token_ids = eos_token_ids;
  r.stop.stop_token_ids = in.sampling.stop_token_ids;
  r.stop.ignore_eos = in.sampling.ignore_eos;
  r.n = in.sampling.n;
  r.return_routed_experts = in.routing.return_routed_experts;
  r.route_last_token = in.routing.routes_last_token();
  return r;
}

msg::FinishReason to_message(const FinishReason& reason) {
  msg::FinishReason out;
  out.kind = reason.kind == FinishKind::Stop     ? msg::FinishKind::Stop
             : reason.kind == FinishKind::Length ? msg::FinishKind::Length
                                                 : msg::FinishKind::Abort;
  if (const auto* token = std::get_if<int32_t>(&reason.matched)) out.matched_token = *token;
  if (const auto* text = std::get_if<std::string>(&reason.matched)) out.matched_text = *text;
  out.message = reason.message;
  return out;
}

msg::WorkerBatch to_worker_batch(const ScheduledBatch& batch, bool capture_routing, bool capture_router_weights,
                                 const std::function<bool(const std::string&)>& return_logprob) {
  msg::WorkerBatch out;
  out.step = batch.step_id;
  out.token_ids = batch.forward.token_ids;
  out.positions = batch.forward.positions;
  out.capture_routing = capture_routing;
  out.capture_router_weights = capture_router_weights;
  for (size_t i = 0; i < batch.forward.sequences.size(); ++i) {
    const BatchSequence& seq = batch.forward.sequences[i];
    const ScheduledSequence& info = batch.sequences[i];
    msg::WorkerSequence ws;
    ws.num_new_tokens = seq.num_new_tokens;
    ws.kv_slots = seq.kv_slots;
    ws.needs_logits = seq.needs_logits;
    ws.sampling = {info.sampling.temperature, info.sampling.top_p, info.sampling.top_k, info.sampling.min_p,
                   info.sampling.seed,        static_cast<uint64_t>(info.sample_step), return_logprob(info.rid)};
    out.sequences.push_back(std::move(ws));
  }
  return out;
}

}  // namespace moe
