#pragma once
// YaRN rotary scaling (config.json's rope_scaling / rope_parameters with rope_type "yarn"), as
// transformers computes it: each rotary frequency blends its interpolated (divided by `factor`) and
// its original value over a ramp between the dimensions that beta_fast and beta_slow rotations
// select, cos and sin are multiplied by an attention factor, and DeepSeek's attention multiplies its
// softmax scale by mscale² when mscale_all_dim is set.
#include <cstdint>
#include <optional>
#include <vector>

namespace moe {

struct YarnScaling {
  double factor = 1.0;
  int64_t original_max_position_embeddings = 0;  // the config's max_position_embeddings when not given
  double beta_fast = 32.0, beta_slow = 1.0;
  double mscale = 0.0, mscale_all_dim = 0.0;  // 0: not given
  std::optional<double> attention_factor;     // given outright, else derived from the mscales
  bool truncate = true;                       // round the correction range outwards to whole dimensions
};

// theta^(-2i/dim) for i < dim / 2, blended as YaRN does; float32 where transformers computes in float32.
std::vector<float> yarn_inv_freq(int dim, double theta, const YarnScaling& yarn);

// What cos and sin are multiplied by.
double yarn_attention_factor(const YarnScaling& yarn);

// What DeepSeek's attention multiplies its softmax scale by: mscale(factor, mscale_all_dim)², or 1
// without mscale_all_dim.
double yarn_softmax_scale_factor(const YarnScaling& yarn);

}  // namespace moe
