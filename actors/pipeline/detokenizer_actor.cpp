#include "pipeline/detokenizer_actor.h"

#include <spdlog/spdlog.h>

#include "transport/endpoints.h"

namespace moe::actors {

DetokenizerActor::DetokenizerActor(transport::ActorLoop& loop, tokenizer::Tokenizer tokenizer, int num_experts,
                                   int draft_num_experts, RoutingLayerAxis layer_axis,
                                   const std::string& inbox_endpoint, const std::string& tokenizer_endpoint,
                                   const std::string& scheduler_endpoint)
    : state_(std::move(tokenizer), num_experts, draft_num_experts, std::move(layer_axis)) {
  to_tokenizer_ = &loop.make<transport::Outbox>(tokenizer_endpoint);
  to_scheduler_ = &loop.make<transport::Outbox>(scheduler_endpoint);
  loop.make<transport::Inbox>(inbox_endpoint, [this](msg::Message&& message) {
    if (auto* batch = std::get_if<msg::DetokenizeBatch>(&message)) return on_batch(*batch);
    spdlog::warn("detokenizer: ignoring a {} message", msg::kind_name(msg::kind_of(message)));
  });
}

void DetokenizerActor::on_batch(const msg::DetokenizeBatch& batch) {
  DetokenizerState::Result result = state_.apply(batch);
  for (const msg::Abort& stop : result.stopped) to_scheduler_->send(stop);
  for (msg::ErrorReply& error : result.errors) to_tokenizer_->send(std::move(error));
  if (!result.outputs.empty()) to_tokenizer_->send(msg::TextOutputBatch{std::move(result.outputs)});
}

}  // namespace moe::actors
