#pragma once
// The KV cache's data on the device: for every attention layer, the key and the value of every
// token slot, rows of num_kv_heads · head_dim elements ([layer][slot][row], as model/kv_cache.h
// holds them on the host), float32 in the exact mode and bf16 in bf16 products (model.h's
// kv_cache_element_bytes). Which slots a sequence owns comes with each batch. One row per layer
// beyond the cache's slots, pad_slot(), takes the K/V of the padding tokens a CUDA graph's fixed
// batch size adds: no sequence reads it. How many slots the pool has is decided by the engine's
// sizing (engine/engine_sizing.h); this only holds them. Its memory is releasable
// (release_memory_occupation): the physical pages go back to the device and come back at the same
// addresses, so the decode graphs captured over the pool stay valid.
#include <cstdint>

#include "cuda/kernels.h"
#include "cuda/releasable_device_memory.h"

namespace moe::cuda {

struct DeviceKvPool {
  DeviceKvPool() = default;
  DeviceKvPool(int num_layers, int64_t num_slots, int64_t row_size, int element_bytes)
      : keys(static_cast<size_t>(num_layers * (num_slots + 1) * row_size * element_bytes)),
        values(keys.size()),
        num_slots(num_slots),
        row_size(row_size),
        element_bytes(element_bytes) {}

  // The bytes one token slot takes (a key and a value row in every layer), and a pool of num_slots
  // (its padding slot included).
  static int64_t bytes_per_slot(int num_layers, int64_t row_size, int element_bytes) {
    return int64_t{2} * num_layers * row_size * element_bytes;
  }
  static int64_t bytes_for(int num_layers, int64_t num_slots, int64_t row_size, int element_bytes) {
    return (num_slots + 1) * bytes_per_slot(num_layers, row_size, element_bytes);
  }

  int32_t pad_slot() const { return static_cast<int32_t>(num_slots); }
  KvPoolRef layer(int layer) {
    const int64_t offset = layer * (num_slots + 1) * row_size * element_bytes;
    return {keys.data() + offset, values.data() + offset, element_bytes == 2};
  }

  // The physical memory of both halves goes back to the device (contents lost), and comes back.
  void release() {
    keys.release();
    values.release();
  }
  void restore() {
    keys.restore();
    values.restore();
  }

  ReleasableDeviceMemory keys, values;
  int64_t num_slots = 0;
  int64_t row_size = 0;
  int element_bytes = 4;
};

}  // namespace moe::cuda
