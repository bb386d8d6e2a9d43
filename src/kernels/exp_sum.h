#pragma once
// Σ e^((x[i] - shift) · scale) over a row, eight lanes at a time: a softmax's denominator over a
// whole vocabulary (sampling's weights, a token's log-probability), where one std::exp per logit
// cost more per decode step than the step's attention.
#include <cstdint>

namespace moe {

// Returns Σ e^((x[i] - shift) · scale) for i < n, summed in double across blocks so a 150k-entry
// row keeps float32's relative precision; when out is not null, out[i] receives each term. Terms
// under e^-87.3 count as 0. shift is normally the row's maximum, so every term is at most 1.
double sum_of_exps(const float* x, int64_t n, float shift, float scale, float* out = nullptr);

}  // namespace moe
