#pragma once
// The layer axis of a reply's routed_experts: the rows the engine keeps have one entry per MoE layer;
// a client may want one per decoder layer (SGLang's rows), where a model with dense layers
// (DeepSeek's first_k_dense_replace, Qwen2-MoE's mlp_only_layers) has entries no router wrote.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace moe {

// Where a model's MoE layers sit among its decoder layers.
struct RoutingLayerAxis {
  int32_t num_hidden_layers = 0;
  std::vector<int> moe_layer_ids;  // ascending
  // Whether rows of every decoder layer differ from rows of the MoE layers.
  bool has_dense_layers() const {
    return num_hidden_layers > 0 && static_cast<int32_t>(moe_layer_ids.size()) != num_hidden_layers;
  }
};

// `rows` of the MoE layers ([rows, moe_layer_ids.size(), top_k]) as rows of every decoder layer
// ([rows, num_hidden_layers, top_k]), `fill` at the dense layers.
template <class T>
std::vector<T> spread_to_all_layers(const std::vector<T>& rows, const RoutingLayerAxis& axis, int32_t top_k, T fill) {
  const size_t moe_layers = axis.moe_layer_ids.size(), k = static_cast<size_t>(top_k);
  const size_t num_rows = moe_layers * k == 0 ? 0 : rows.size() / (moe_layers * k);
  std::vector<T> out(num_rows * static_cast<size_t>(axis.num_hidden_layers) * k, fill);
  for (size_t r = 0; r < num_rows; ++r)
    for (size_t m = 0; m < moe_layers; ++m) {
      const size_t layer = static_cast<size_t>(axis.moe_layer_ids[m]);
      const T* from = rows.data() + (r * moe_layers + m) * k;
      std::copy(from, from + k, out.data() + (r * static_cast<size_t>(axis.num_hidden_layers) + layer) * k);
    }
  return out;
}

}  // namespace moe
