#include "model/layer_range.h"

#include <numeric>

#include "common/error.h"

namespace moe {

std::vector<LayerRange> split_layers(int num_layers, int pp_size, const std::vector<int>& split) {
  if (pp_size < 1) throw Error("--pp-size must be at least 1, got " + std::to_string(pp_size));
  if (pp_size > num_layers)
    throw Error("--pp-size " + std::to_string(pp_size) + " asks for more stages than the model's " +
                std::to_string(num_layers) + " decoder layers");
  std::vector<int> counts = split;
  if (counts.empty()) {
    for (int i = 0; i < pp_size; ++i) counts.push_back(num_layers / pp_size + (i < num_layers % pp_size ? 1 : 0));
  } else if (static_cast<int>(counts.size()) != pp_size) {
    throw Error("--pp-layer-split gives " + std::to_string(counts.size()) + " stages but --pp-size is " +
                std::to_string(pp_size));
  } else if (std::accumulate(counts.begin(), counts.end(), 0) != num_layers) {
    throw Error("--pp-layer-split covers " + std::to_string(std::accumulate(counts.begin(), counts.end(), 0)) +
                " layers but the model has " + std::to_string(num_layers));
  }
  std::vector<LayerRange> ranges;
  int begin = 0;
  for (int count : counts) {
    if (count < 1) throw Error("--pp-layer-split: every stage needs at least one layer");
    ranges.push_back({begin, begin + count});
    begin += count;
  }
  return ranges;
}

LayerRange moe_layers_of(const std::vector<int>& moe_layer_ids, LayerRange layers) {
  LayerRange moe{0, 0};
  for (int layer : moe_layer_ids) {
    if (layer < layers.begin) ++moe.begin;
    if (layer < layers.end) ++moe.end;
  }
  return moe;
}

std::vector<int> parse_layer_split(const std::string& text) {
  std::vector<int> counts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string part = text.substr(start, comma - start);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 6)
      throw Error("--pp-layer-split '" + text + "': expected layer counts separated by commas, such as 4,4,3");
    counts.push_back(std::stoi(part));
    start = comma + 1;
  }
  return counts;
}

}  // namespace moe
