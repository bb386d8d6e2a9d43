#pragma once
// y[T, rows] = x[T, cols] · Wᵀ (+ bias): torch's nn.Linear, computed in float32 whatever W's dtype.
#include <cstdint>

#include "kernels/weight.h"

namespace moe {

void linear(const float* x, int64_t num_tokens, const WeightView& weight, float* y, const float* bias = nullptr);

// Same, for a subset of W's output rows [row_begin, row_end): y has (row_end - row_begin) columns.
void linear_rows(const float* x, int64_t num_tokens, const WeightView& weight, int64_t row_begin, int64_t row_end,
                 float* y);

// Starts fetching the first weight rows (about what a GEMM reads before its own prefetching takes
// over) into the cache, for a caller that knows which matrix comes next: a thread going through
// experts one after another hides the next one's first memory round trips behind this one's work.
void prefetch_leading_rows(const WeightView& weight);

}  // namespace moe
