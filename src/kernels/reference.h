#pragma once
// The kernels' references: plain scalar code, kept beside the kernels so that their tests check
// them against the mathematics rather than against a copy of their own tricks (no SIMD, no tiling,
// no threads, no float32 arithmetic). Results come out in double so that a test sees the exact
// value and only its tolerance speaks of float32 rounding.
#include <cstdint>
#include <span>

#include "kernels/attention.h"
#include "kernels/weight.h"

namespace moe::reference {

// Reference for moe::causal_attention: softmax(q·kᵀ/√head_dim)·v, one token and head at a time.
void causal_attention(const float* q, std::span<const AttentionSequence> sequences, const float* keys,
                      const float* values, int64_t kv_stride, const AttentionShape& shape, double* out);

// Reference for moe::linear_rows and moe::half_gemm_rows: y[t, r - row_begin] = x[t] · W[r], W read
// element by element through WeightView::at (any dtype, either layout). When magnitude is not
// null it receives Σ_c |x[t, c] · W[r, c]| in the same places: the size float32 rounding of the
// sum scales with.
void linear_rows(const float* x, int64_t num_tokens, const WeightView& weight, int64_t row_begin, int64_t row_end,
                 double* y, double* magnitude = nullptr);

// Reference for moe::linear: every row, plus the bias when there is one.
void linear(const float* x, int64_t num_tokens, const WeightView& weight, double* y, const float* bias = nullptr);

// Reference for moe::rms_norm (out holds rows × dim, without the stride).
void rms_norm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight, float eps, double* out);

// Reference for moe::RotaryEmbedding::apply (built with head_dim, rotary_dim and theta): each head's
// pair (i, i + rotary_dim/2) rotated by position · theta^(-2i/rotary_dim), its dims from rotary_dim on
// copied.
void rotary(const float* heads, int num_heads, int head_dim, int rotary_dim, double theta, int64_t position,
            double* out);

// Reference for moe::sigmoid.
double sigmoid(double x);

// Reference for moe::silu_mul: out[i] = silu(gate[i]) · up[i].
void silu_mul(const float* gate, const float* up, int64_t n, double* out);

// Reference for moe::sum_of_exps: every term by std::exp, none cut off, summed in order.
double sum_of_exps(const float* x, int64_t n, float shift, float scale, double* out = nullptr);

}  // namespace moe::reference
