#include "capture/routed_experts_capturer.h"

#include <string>
#include <utility>

#include "common/error.h"

namespace moe {

RoutedExpertsCapturer::RoutedExpertsCapturer(std::unique_ptr<CopyEngine> copy_engine)
    : copy_engine_(std::move(copy_engine)) {}

void RoutedExpertsCapturer::begin_step(uint64_t step, int64_t num_tokens) {
  if (step_) throw Error("routing capture: step " + std::to_string(*step_) + " was never ended");
  if (num_tokens > copy_engine_->shape().max_tokens)
    throw Error("routing capture: step of " + std::to_string(num_tokens) + " tokens exceeds the capture buffer");
  copy_engine_->prepare_write(static_cast<int>(step % 2));
  step_ = step;
  step_tokens_ = num_tokens;
}

RoutingCapture& RoutedExpertsCapturer::current() {
  if (!step_) throw Error("routing capture: routing reported outside a step");
  return copy_engine_->buffer(static_cast<int>(*step_ % 2));
}

void RoutedExpertsCapturer::on_routing(int moe_layer, int64_t num_tokens, int top_k, const int32_t* ids,
                                       const float* weights) {
  current().on_routing(moe_layer, num_tokens, top_k, ids, weights);
}

DeviceRoutingRows RoutedExpertsCapturer::device_rows(int moe_layer) { return current().device_rows(moe_layer); }

void RoutedExpertsCapturer::device_rows_queued() { current().device_rows_queued(); }

void RoutedExpertsCapturer::end_step() {
  if (!step_) throw Error("routing capture: end_step without begin_step");
  copy_engine_->start(static_cast<int>(*step_ % 2), *step_, step_tokens_);
  step_.reset();
}

}  // namespace moe
