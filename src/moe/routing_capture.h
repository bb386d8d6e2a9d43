#pragma once
// Where the routed-experts capturer attaches: every MoE layer hands it the router's top-k. A model on
// the CPU passes host rows to on_routing; a model on a GPU has its router kernel write them straight
// into the capture's device buffer (device_rows) and says when the last of those writes is queued,
// and copies them back for the captures that take host rows.
// A null pointer means nothing is attached and nothing is done.
#include <cstdint>

namespace moe {

// One MoE layer's block of a capture buffer in device memory: rows [capacity, top_k], row t for token t
// of the current forward batch.
struct DeviceRoutingRows {
  int16_t* ids = nullptr;    // null: the capture takes host rows only
  float* weights = nullptr;  // null unless router weights are captured
  int64_t capacity = 0;      // rows the block holds
};

class RoutingCapture {
 public:
  virtual ~RoutingCapture() = default;
  // ids/weights are [num_tokens, top_k] in host memory, row t belonging to token t of the current
  // forward batch. From a GPU model (takes_host_rows), weights is null where this capture's device
  // block keeps none.
  virtual void on_routing(int moe_layer, int64_t num_tokens, int top_k, const int32_t* ids,
                          const float* weights) = 0;
  // Whether a GPU model also hands this capture every layer's rows through on_routing, after the
  // step: a capture with no device block takes host rows only. (The CPU model always calls
  // on_routing.)
  virtual bool takes_host_rows() { return device_rows(0).ids == nullptr; }
  // Where a GPU's router writes layer `moe_layer` of the current step. A capture whose buffer is in
  // host memory has no such block (ids null).
  virtual DeviceRoutingRows device_rows(int moe_layer) {
    (void)moe_layer;
    return {};
  }
  // Called by a GPU model once the kernels that write its last MoE layer's rows are queued: the copy
  // of the step's rows is ordered after them.
  virtual void device_rows_queued() {}
};

}  // namespace moe
