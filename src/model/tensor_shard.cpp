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

std::string tensor_parallel_refusal(const ModelConfig& config, int size) {
  if (size < 1) return "--tp-size must be at least 1, got " + std::to_string(size);
  if (size == 1) return "";
  const std::string ranks = " over " + std::to_string(size) + " tensor-parallel ranks (--tp-size)";
  if (config.num_attention_heads % size != 0)
    return "the model's " + std::to_string(config.num_attention_heads) + " attention heads cannot be split evenly" + ranks;
  // Latent attention has no KV heads of its own: every rank keeps the whole latent.
  const int kv = config.num_key_value_heads;
  if (!config.mla && kv % size != 0 && size % kv != 0)
    return "the model's " + std::to_string(kv) + " KV heads can be neither split evenly nor replicated evenly" + ranks;
  const std::pair<const char*, int64_t> widths[] = {{"intermediate_size", config.intermediate_size},
                                                    {"moe_intermediate_size", config.moe_intermediate_size},
                                                    {"shared_expert_intermediate_size", config.shared_expert_intermediate_size}};
  for (const auto& [name, width] : widths)
    if (width % size != 0)
      return std::string("the model's ") + name + " of " + std::to_string(width) + " cannot be split evenly" + ranks;
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
