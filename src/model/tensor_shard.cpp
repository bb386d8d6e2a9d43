#include "model/tensor_shard.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace moe {

IndexRange TensorShard::even_part(int64_t n) const {
  if (n % size != 0)
    throw Error(std::to_string(n) + " cannot be split evenly over " + std::to_string(size) + " tensor-parallel ranks");
  return {rank * (n / size), n / size};
}

IndexRange TensorShard::vocab_part(int64_t n) const {
  const int64_t per_rank = (n + size - 1) / size;
  const int64_t begin = std::min(n, rank * per_rank);
  return {begin, std::min(per_rank, n - begin)};
}

IndexRange TensorShard::query_heads(int heads) const { return even_part(heads); }

IndexRange TensorShard::kv_heads(int heads, int kv_heads) const {
  if (size <= kv_heads) return even_part(kv_heads);
  // More ranks than KV heads: rank r's query heads all read one KV head, which it keeps a copy of.
  const int64_t first_query = query_heads(heads).begin;
  return {first_query / (heads / kv_heads), 1};
}

RankShards rank_shards(int rank, int ranks, int ep_size) {
  if (ep_size < 1 || ranks % ep_size != 0 || rank < 0 || rank >= ranks)
    throw Error("rank " + std::to_string(rank) + " of " + std::to_string(ranks) + " cannot hold a part of " +
                std::to_string(ep_size) + " expert shards");
  const int tp_size = ranks / ep_size;
  return {{rank, ranks}, {rank % tp_size, tp_size}, rank / tp_size};
}

std::string tensor_parallel_refusal(const ModelConfig& config, int tp_size, int ep_size) {
  if (tp_size < 1) return "--tp-size must be at least 1, got " + std::to_string(tp_size);
  if (ep_size < 1) return "--ep-size must be at least 1, got " + std::to_string(ep_size);
  const int size = tp_size * ep_size;
  if (tp_size == 1) return "";
  const std::string ranks = ep_size == 1 ? " over " + std::to_string(size) + " tensor-parallel ranks (--tp-size)"
                                         : " over " + std::to_string(size) + " ranks (--tp-size " +
                                               std::to_string(tp_size) + " × --ep-size " + std::to_string(ep_size) + ")";
  if (config.num_attention_heads % size != 0)
    return "the model's " + std::to_string(config.num_attention_heads) + " attention heads cannot be split evenly" + ranks;
  // Latent attention has no KV heads of its own: every rank keeps the whole latent.
  const int kv = config.num_key_value_heads;
  if (!config.mla && kv % size != 0 && size % kv != 0)
    return "the model's " + std::to_string(kv) + " KV heads can be neither split evenly nor replicated evenly" + ranks;
  const std::pair<const char*, int64_t> widths[] = {{"intermediate_size", config.intermediate_size},
                                                    {"shared_expert_intermediate_size", config.shared_expert_intermediate_size}};
  for (const auto& [name, width] : widths)
    if (width % size != 0)
      return std::string("the model's ") + name + " of " + std::to_string(width) + " cannot be split evenly" + ranks;
  if (config.moe_intermediate_size % tp_size != 0)
    return "the model's moe_intermediate_size of " + std::to_string(config.moe_intermediate_size) +
           " cannot be split evenly over " + std::to_string(tp_size) + " tensor-parallel ranks (--tp-size)";
  return "";
}

ModelConfig local_attention_config(const ModelConfig& config, const TensorShard& shard) {
  ModelConfig local = config;
  local.num_attention_heads = static_cast<int>(shard.query_heads(config.num_attention_heads).count);
  if (!config.mla)
    local.num_key_value_heads = static_cast<int>(shard.kv_heads(config.num_attention_heads, config.num_key_value_heads).count);
  return local;
}

}  // namespace moe
