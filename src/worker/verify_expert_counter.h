#pragma once
// Counts, per MoE layer, the distinct experts a step's draft-tree tokens were routed to (what a
// verify pass reads of expert weights), passing every layer's routing on to the capture behind it.
#include <cstdint>
#include <vector>

#include "moe/routing_capture.h"

namespace moe {

class VerifyExpertCounter final : public RoutingCapture {
 public:
  // tree_tokens marks the batch's tokens that belong to a draft tree; inner may be null.
  VerifyExpertCounter(RoutingCapture* inner, std::vector<uint8_t> tree_tokens, int num_moe_layers, int num_experts);

  void on_routing(int moe_layer, int64_t num_tokens, int top_k, const int32_t* ids, const float* weights) override;
  DeviceRoutingRows device_rows(int moe_layer) override;
  // A GPU model hands the counter the rows it wrote into the inner capture's device block too.
  bool takes_host_rows() override { return true; }
  void device_rows_queued() override;

  // Distinct experts per MoE layer.
  const std::vector<int32_t>& counts() const { return counts_; }

 private:
  RoutingCapture* inner_;
  std::vector<uint8_t> tree_tokens_;
  int num_experts_;
  std::vector<int32_t> counts_;
};

}  // namespace moe
