#include "worker/verify_expert_counter.h"

#include <cstddef>
#include <utility>

namespace moe {

VerifyExpertCounter::VerifyExpertCounter(RoutingCapture* inner, std::vector<uint8_t> tree_tokens, int num_moe_layers,
                                         int num_experts)
    : inner_(inner), tree_tokens_(std::move(tree_tokens)), num_experts_(num_experts), counts_(num_moe_layers, 0) {}

void VerifyExpertCounter::on_routing(int moe_layer, int64_t num_tokens, int top_k, const int32_t* ids,
                                     const float* weights) {
  std::vector<bool> used(static_cast<size_t>(num_experts_), false);
  int32_t distinct = 0;
  for (int64_t t = 0; t < num_tokens && t < static_cast<int64_t>(tree_tokens_.size()); ++t) {
    if (!tree_tokens_[t]) continue;
    for (int k = 0; k < top_k; ++k) {
      const int32_t e = ids[t * top_k + k];
      if (!used[e]) ++distinct;
      used[e] = true;
    }
  }
  counts_[moe_layer] = distinct;
  // A GPU model wrote an inner capture's device block itself; only a host capture needs the rows.
  if (inner_ && inner_->takes_host_rows()) inner_->on_routing(moe_layer, num_tokens, top_k, ids, weights);
}

DeviceRoutingRows VerifyExpertCounter::device_rows(int moe_layer) {
  return inner_ ? inner_->device_rows(moe_layer) : DeviceRoutingRows{};
}

void VerifyExpertCounter::device_rows_queued() {
  if (inner_) inner_->device_rows_queued();
}

}  // namespace moe
