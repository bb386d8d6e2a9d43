#pragma once
// Tensor parallelism, Megatron-style: which part of each sharded tensor one rank of `size` holds.
// Column-parallel projections (q/k/v, an MLP's gate and up, lm_head) keep a block of output rows;
// row-parallel ones (o_proj, an MLP's down) the matching block of input columns, so each rank's
// output is a partial sum that the group's all-reduce completes. Query heads split evenly; KV heads
// split too, or, where the ranks outnumber them, each rank keeps the one KV head its query heads read.
// Latent attention (DeepSeek-V3) splits its heads alike; its latent and latent KV cache stay whole.
#include <cstdint>

#include "model/model_config.h"

namespace moe {

// [begin, begin + count) of a dimension.
struct IndexRange {
  int64_t begin = 0;
  int64_t count = 0;
};

struct TensorShard {
  int rank = 0;
  int size = 1;

  bool whole() const { return size == 1; }
  // This rank's even part of `n` (a multiple of size).
  IndexRange even_part(int64_t n) const;
  // This rank's part of a vocabulary of `n`: ceil(n / size) rows, the last rank fewer (or none).
  IndexRange vocab_part(int64_t n) const;
  // This rank's query heads and KV heads of a GQA layer with `heads` and `kv_heads`.
  IndexRange query_heads(int heads) const;
  IndexRange kv_heads(int heads, int kv_heads) const;
};

// Why `config` cannot be split over `size` tensor-parallel ranks (naming the dimension), or "" when it can.
std::string tensor_parallel_refusal(const ModelConfig& config, int size);

// `config` as one rank's layers see it: its query and KV heads.
ModelConfig local_attention_config(const ModelConfig& config, const TensorShard& shard);

}  // namespace moe
