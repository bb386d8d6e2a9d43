#pragma once
// Pipeline parallelism cuts the decoder layers into contiguous stages: stage 0 also holds the
// embedding, the last stage the final norm and lm_head. A stage's model loads only its layers.
#include <string>
#include <vector>

namespace moe {

// Decoder layers [begin, end).
struct LayerRange {
  int begin = 0;
  int end = 0;
  int size() const { return end - begin; }
  bool contains(int layer) const { return layer >= begin && layer < end; }
  bool operator==(const LayerRange&) const = default;
};

// The layers of each of pp_size stages. Without `split`, balanced by layer count (the first
// num_layers % pp_size stages take one layer more); `split` gives each stage's layer count
// (--pp-layer-split 4,4,3). A split that does not have pp_size counts, each at least 1, summing
// to num_layers, or more stages than layers, is a moe::Error saying so.
std::vector<LayerRange> split_layers(int num_layers, int pp_size, const std::vector<int>& split = {});

// The MoE layers of `layers`, as indices among the model's MoE layers (moe_layer_ids ascending): the
// routing rows a stage captures are layers [begin, end) of a full row.
LayerRange moe_layers_of(const std::vector<int>& moe_layer_ids, LayerRange layers);

// "4,4,3" -> {4, 4, 3}; anything else than positive integers separated by commas is a moe::Error.
std::vector<int> parse_layer_split(const std::string& text);

}  // namespace moe
