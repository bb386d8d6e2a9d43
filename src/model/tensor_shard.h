#pragma once
// Tensor parallelism, Megatron-style: which part of each sharded tensor one rank of `size` holds.
// Column-parallel projections (q/k/v, an MLP's gate and up, lm_head) keep a block of output rows;
// row-parallel ones (o_proj, an MLP's down) the matching block of input columns, so each rank's
// output is a partial sum that the group's all-reduce completes. Query heads split evenly; KV heads
// split too, or, where the ranks outnumber them, each rank keeps the one KV head its query heads read.
// Latent attention (DeepSeek-V3) splits its heads alike; its latent and latent KV cache stay whole.
// Combined with expert parallelism (tp × ep ranks, as SGLang runs its TP × EP), everything but the
// routed experts splits over all the ranks, and the routed experts split by expert over ep shards,
// each expert's width over the tp ranks of its shard (RankShards).
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

// What one rank of tp_size × ep_size ranks holds; rank = ep_rank · tp_size + tp_rank, so the tp_size
// ranks of one expert shard are neighbours. With ep_size 1, every part is the tensor-parallel one.
struct RankShards {
  // Attention heads, dense MLPs, shared experts and lm_head's vocabulary: over all tp_size × ep_size ranks.
  TensorShard dense;
  // Each routed expert's intermediate width: over the tp_size ranks of one expert shard.
  TensorShard expert;
  // The expert shard (a device of the expert placement) whose routed experts this rank holds.
  int expert_shard = 0;
};

// Rank `rank` of `ranks` (tp_size × ep_size), ep_size of them expert shards; a moe::Error when ep_size
// does not divide `ranks` or `rank` lies outside them.
RankShards rank_shards(int rank, int ranks, int ep_size);

// Why `config` cannot be split over tp_size × ep_size ranks (naming the dimension and the flags), or ""
// when it can: the heads and dense widths over all the ranks, the routed experts' width over tp_size
// (whether the experts split over ep_size the expert placement says).
std::string tensor_parallel_refusal(const ModelConfig& config, int tp_size, int ep_size = 1);

// `config` as one rank's layers see it: its query and KV heads.
ModelConfig local_attention_config(const ModelConfig& config, const TensorShard& shard);

}  // namespace moe
