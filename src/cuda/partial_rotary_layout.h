#pragma once
// GLM-4.5's partial rotary on the device's attention kernels, which rotate each head's pair
// (j, j + head_dim/2) by inv_freq[j]: the q and k dims of every head are reordered at load so that
// rotary pair (i, i + rotary_dim/2) sits at (i, i + head_dim/2), and the dims that pass through fill
// the remaining pairs with frequency 0 (cos 1, sin 0: unchanged, exactly). Attention scores are q·k
// over the same pairs of dims, so they do not change; v, and so the output, keep their order. The
// K/V pool holds keys in this order; nothing else reads them.
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/weight_source.h"

namespace moe::cuda {

class PartialRotaryLayout {
 public:
  PartialRotaryLayout(int head_dim, int rotary_dim);

  // The rotary frequencies (rotary_dim / 2 of them) padded with zeros to head_dim / 2.
  std::vector<float> padded_inv_freq(const std::vector<float>& inv_freq) const;
  // Rows `part` (whole heads) of a q or k projection [heads · head_dim, cols], each head's rows reordered.
  DeviceMatrix upload_rows(const WeightSource& weights, const std::string& name, int64_t rows, int64_t cols,
                           IndexRange part) const;
  // Elements `part` (whole heads) of a q or k bias [heads · head_dim], or a q/k norm scale [head_dim],
  // reordered likewise.
  DeviceArray<float> upload_vector(const WeightSource& weights, const std::string& name, int64_t n,
                                   IndexRange part) const;

 private:
  int head_dim_;
  std::vector<int> source_dim_;  // [head_dim]: the checkpoint's dim at each reordered dim
};

}  // namespace moe::cuda
