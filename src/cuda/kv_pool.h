#pragma once
// The KV cache's data on the device: for every attention layer, the key and the value of every
// token slot, rows of num_kv_heads · head_dim floats ([layer][slot][row], as model/kv_cache.h
// holds them on the host). Which slots a sequence owns comes with each batch. One row per layer
// beyond the cache's slots, pad_slot(), takes the K/V of the padding tokens a CUDA graph's fixed
// batch size adds: no sequence reads it.
#include <cstdint>

#include "cuda/device_array.h"

namespace moe::cuda {

struct DeviceKvPool {
  DeviceKvPool() = default;
  DeviceKvPool(int num_layers, int64_t num_slots, int64_t row_size)
      : keys(static_cast<size_t>(num_layers * (num_slots + 1) * row_size)),
        values(keys.size()),
        num_slots(num_slots),
        row_size(row_size) {}

  int32_t pad_slot() const { return static_cast<int32_t>(num_slots); }
  float* keys_of(int layer) { return keys.data() + layer * (num_slots + 1) * row_size; }
  float* values_of(int layer) { return values.data() + layer * (num_slots + 1) * row_size; }

  DeviceArray<float> keys, values;
  int64_t num_slots = 0;
  int64_t row_size = 0;
};

}  // namespace moe::cuda
