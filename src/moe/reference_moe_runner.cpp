#include <algorithm>
#include <vector>

#include "kernels/activation.h"
#include "moe/moe_runner_backends.h"

namespace moe {
namespace {

// Σ a[i]·b[i] in plain float32, left to right.
float dot(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// y[r] = x · W[r, :] for every row r of W, one widened row at a time.
void matvec(const WeightView& weight, const float* x, float* row_buffer, float* y) {
  for (int64_t r = 0; r < weight.rows; ++r) {
    weight.row_to_float(r, row_buffer);
    y[r] = dot(x, row_buffer, weight.cols);
  }
}

// Deliberately naive so that it can judge the grouped path: no gathering, no GEMMs, no sharding.
class ReferenceMoeRunner final : public MoeRunner {
 public:
  void run(const float* hidden, int64_t num_tokens, const Routing& routing, const ExpertWeights& experts,
           float* out) override {
    const int64_t hidden_size = experts.hidden_size;
    const int64_t width = experts.intermediate_size;
    std::vector<float> row(static_cast<size_t>(std::max(hidden_size, width)));
    std::vector<float> gate(static_cast<size_t>(width));
    std::vector<float> up(static_cast<size_t>(width));
    std::vector<float> expert_out(static_cast<size_t>(hidden_size));
    std::fill_n(out, num_tokens * hidden_size, 0.0f);
    for (int64_t t = 0; t < num_tokens; ++t) {
      const float* x = hidden + t * hidden_size;
      float* y = out + t * hidden_size;
      for (int k = 0; k < routing.top_k; ++k) {
        const int32_t expert = routing.ids[t * routing.top_k + k];
        const float weight = routing.weights[t * routing.top_k + k];
        matvec(experts.gate[expert], x, row.data(), gate.data());
        matvec(experts.up[expert], x, row.data(), up.data());
        silu_mul(gate.data(), up.data(), width);
        matvec(experts.down[expert], gate.data(), row.data(), expert_out.data());
        for (int64_t h = 0; h < hidden_size; ++h) y[h] += weight * expert_out[h];
      }
    }
  }
};

}  // namespace

std::unique_ptr<MoeRunner> make_reference_moe_runner() { return std::make_unique<ReferenceMoeRunner>(); }

}  // namespace moe
