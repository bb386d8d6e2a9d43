#pragma once
// The KV cache as a pool of token slots (SGLang's token_to_kv_pool): every attention layer stores
// what it keeps of a token at the same slot index, one row per slot and layer, whose width is the
// layer's (kv_row_floats in model/kv_row_width.h: a GQA layer's key then value, an MLA layer's latent
// then rotary key). Which slots a request owns is decided by the scheduler and passed in each
// ForwardBatch (the request-to-token table); the cache only holds data.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/aligned_memory.h"

namespace moe {

class KvCache {
 public:
  // row_floats[l]: the width of layer l's row.
  KvCache(std::vector<int64_t> row_floats, int64_t num_slots);
  // A cache that holds no data, only its slot count: for a model whose pool lives on a device
  // (CudaModel), so that batches are still checked against the number of slots.
  static KvCache placeholder(int64_t num_slots) { return KvCache({}, num_slots); }

  int64_t num_slots() const { return num_slots_; }
  int64_t bytes() const;
  int64_t row_size(int layer) const { return row_floats_[layer]; }
  // row_size(layer) floats of one token slot in one layer.
  float* row(int layer, int64_t slot) { return rows_[layer].get() + slot * row_floats_[layer]; }
  const float* row(int layer, int64_t slot) const { return rows_[layer].get() + slot * row_floats_[layer]; }
  // Hands the rows' pages back to the operating system (madvise MADV_DONTNEED): they leave the
  // process's resident set and read as zeros when next touched; the addresses stay valid.
  void release_memory();

 private:
  int64_t num_slots_;
  std::vector<int64_t> row_floats_;
  // [layer][slot * row_size], aligned to pages (so every page of an array is its own, for
  // release_memory; plain new[] also left every 256-byte head row across five cache lines instead
  // of four), left uninitialised: a slot is always written before it is read, and untouched pages
  // of a large pool then cost no memory.
  std::vector<AlignedArray<float>> rows_;
};

}  // namespace moe
