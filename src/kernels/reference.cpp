#include "kernels/reference.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace moe::reference {

void causal_attention(const float* q, std::span<const AttentionSequence> sequences, const float* keys,
                      const float* values, int64_t kv_stride, const AttentionShape& shape, double* out) {
  const int hd = shape.head_dim, group = shape.num_heads / shape.num_kv_heads;
  const int64_t q_width = static_cast<int64_t>(shape.num_heads) * hd;
  int64_t token = 0;
  for (const AttentionSequence& seq : sequences)
    for (int64_t i = 0; i < seq.num_new; ++i, ++token)
      for (int h = 0; h < shape.num_heads; ++h) {
        const int64_t visible = seq.first_position + i + 1, kv = static_cast<int64_t>(h / group) * hd;
        const float* query = q + token * q_width + h * hd;
        std::vector<double> weights(visible);
        double max_score = -INFINITY, total = 0.0;
        for (int64_t pos = 0; pos < visible; ++pos) {
          const float* key = keys + seq.kv_slots[pos] * kv_stride + kv;
          double dot = 0.0;
          for (int d = 0; d < hd; ++d) dot += static_cast<double>(query[d]) * key[d];
          weights[pos] = dot / std::sqrt(static_cast<double>(hd));
          max_score = std::max(max_score, weights[pos]);
        }
        for (double& w : weights) total += (w = std::exp(w - max_score));
        double* result = out + token * q_width + h * hd;
        std::fill(result, result + hd, 0.0);
        for (int64_t pos = 0; pos < visible; ++pos) {
          const float* value = values + seq.kv_slots[pos] * kv_stride + kv;
          for (int d = 0; d < hd; ++d) result[d] += weights[pos] / total * value[d];
        }
      }
}

void linear_rows(const float* x, int64_t num_tokens, const WeightView& weight, int64_t row_begin, int64_t row_end,
                 double* y, double* magnitude) {
  const int64_t cols = weight.cols, out_cols = row_end - row_begin;
  for (int64_t t = 0; t < num_tokens; ++t)
    for (int64_t r = row_begin; r < row_end; ++r) {
      double sum = 0.0, size = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        const double product = static_cast<double>(x[t * cols + c]) * weight.at(r, c);
        sum += product;
        size += std::abs(product);
      }
      y[t * out_cols + (r - row_begin)] = sum;
      if (magnitude) magnitude[t * out_cols + (r - row_begin)] = size;
    }
}

void linear(const float* x, int64_t num_tokens, const WeightView& weight, double* y, const float* bias) {
  linear_rows(x, num_tokens, weight, 0, weight.rows, y);
  if (!bias) return;
  for (int64_t t = 0; t < num_tokens; ++t)
    for (int64_t r = 0; r < weight.rows; ++r) y[t * weight.rows + r] += bias[r];
}

void rms_norm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight, float eps, double* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * stride;
    double sum_of_squares = 0.0;
    for (int64_t i = 0; i < dim; ++i) sum_of_squares += static_cast<double>(row[i]) * row[i];
    const double rms = std::sqrt(sum_of_squares / static_cast<double>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) out[r * dim + i] = weight[i] * (row[i] / rms);
  }
}

void rotary(const float* heads, int num_heads, int head_dim, int rotary_dim, double theta, int64_t position,
            double* out) {
  const int half = rotary_dim / 2;
  for (int h = 0; h < num_heads; ++h) {
    const float* head = heads + static_cast<int64_t>(h) * head_dim;
    double* result = out + static_cast<int64_t>(h) * head_dim;
    for (int i = rotary_dim; i < head_dim; ++i) result[i] = head[i];
    for (int i = 0; i < half; ++i) {
      const double angle = static_cast<double>(position) * std::pow(theta, -2.0 * i / rotary_dim);
      result[i] = head[i] * std::cos(angle) - head[i + half] * std::sin(angle);
      result[i + half] = head[i + half] * std::cos(angle) + head[i] * std::sin(angle);
    }
  }
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

void silu_mul(const float* gate, const float* up, int64_t n, double* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

double sum_of_exps(const float* x, int64_t n, float shift, float scale, double* out) {
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double term = std::exp((static_cast<double>(x[i]) - shift) * scale);
    if (out) out[i] = term;
    total += term;
  }
  return total;
}

}  // namespace moe::reference
