#include "capture/routed_experts_capturer.h"

#include "common/error.h"

namespace moe {

RoutedExpertsCapturer::RoutedExpertsCapturer(int num_moe_layers, int64_t max_tokens, int top_k, bool with_weights,
                                             std::unique_ptr<CopyEngine> copy_engine)
    : buffers_{DeviceRoutingBuffer(num_moe_layers, max_tokens, top_k, with_weights),
               DeviceRoutingBuffer(num_moe_layers, max_tokens, top_k, with_weights)},
      copy_engine_(std::move(copy_engine)) {}

void RoutedExpertsCapturer::begin_step(uint64_t step, int64_t num_tokens) {
  if (step_) throw Error("routing capture: step " + std::to_string(*step_) + " was never ended");
  if (num_tokens > buffers_[0].max_tokens())
    throw Error("routing capture: step of " + std::to_string(num_tokens) + " tokens exceeds the capture buffer");
  copy_engine_->wait_source_free(buffers_[step % 2]);
  step_ = step;
  step_tokens_ = num_tokens;
}

void RoutedExpertsCapturer::on_routing(int moe_layer, int64_t num_tokens, int, const int32_t* ids,
                                       const float* weights) {
  if (!step_) throw Error("routing capture: routing reported outside a step");
  buffers_[*step_ % 2].write(moe_layer, num_tokens, ids, weights);
}

void RoutedExpertsCapturer::end_step() {
  if (!step_) throw Error("routing capture: end_step without begin_step");
  copy_engine_->start(buffers_[*step_ % 2], *step_, step_tokens_);
  step_.reset();
}

}  // namespace moe
