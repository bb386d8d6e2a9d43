#pragma once
// The detokenizer actor: DetokenizeBatch in; text, stop strings and encoded routing out to the
// tokenizer actor; completions cut by a stop string are stopped at the scheduler.
#include <string>

#include "detokenizer/detokenizer_state.h"
#include "transport/actor_loop.h"

namespace moe::transport {
class Outbox;
}

namespace moe::actors {

class DetokenizerActor {
 public:
  DetokenizerActor(transport::ActorLoop& loop, tokenizer::Tokenizer tokenizer, int num_experts, int draft_num_experts,
                   RoutingLayerAxis layer_axis, const std::string& inbox_endpoint, const std::string& tokenizer_endpoint,
                   const std::string& scheduler_endpoint);

 private:
  void on_batch(const msg::DetokenizeBatch& batch);

  DetokenizerState state_;
  transport::Outbox* to_tokenizer_ = nullptr;
  transport::Outbox* to_scheduler_ = nullptr;
};

}  // namespace moe::actors
