#pragma once
// Conversions between the IPC messages and the scheduler's own types.
#include <functional>

#include "moe/messages.h"
#include "scheduler/finish_reason.h"
#include "scheduler/request.h"
#include "scheduler/scheduled_batch.h"

namespace moe {

// The scheduler's Request for a tokenized request (stop conditions get the model's EOS ids).
Request to_request(const msg::TokenizedRequest& request, const std::vector<int32_t>& eos_token_ids);
msg::FinishReason to_message(const FinishReason& reason);
// The worker's view of a step; `return_logprob(rid)` says whether a request wants logprobs.
msg::WorkerBatch to_worker_batch(const ScheduledBatch& batch, bool capture_routing, bool capture_router_weights,
                                 const std::function<bool(const std::string&)>& return_logprob);

}  // namespace moe
