// Multi-head latent attention against a plain double-precision implementation written from the math
// (DeepSeek-V3's attention with the fixture's layer 0 weights): two sequences in one step, one of them
// continuing in a second step from the latent rows the first stored, at scattered KV slots. The rotary
// reference rotates adjacent pairs (2i, 2i + 1) in place, which is transformers' interleaved rotary up
// to the same reordering of every query's and key's rotary part.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "model/architecture.h"
#include "model/kv_row_width.h"
#include "model/mla_attention_layer.h"
#include "model/safetensors.h"

namespace moe {
namespace {

using Vec = std::vector<double>;

class MlaReference {
 public:
  MlaReference(const Checkpoint& ckpt, const ModelConfig& c, const MlaTensorNames& n)
      : c_(c), m_(*c.mla), heads_(c.num_attention_heads) {
    auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
      const std::vector<float> f = ckpt.floats(name, {rows, cols});
      return Matrix{Vec(f.begin(), f.end()), rows, cols};
    };
    auto vec = [&](const std::string& name, int64_t size) {
      const std::vector<float> f = ckpt.floats(name, {size});
      return Vec(f.begin(), f.end());
    };
    const int64_t H = c.hidden_size, qk = m_.qk_head_dim();
    q_a_ = matrix(n.q_a_weight, m_.q_lora_rank, H);
    q_a_norm_ = vec(n.q_a_norm, m_.q_lora_rank);
    q_b_ = matrix(n.q_b_weight, heads_ * qk, m_.q_lora_rank);
    kv_a_ = matrix(n.kv_a_weight, m_.kv_lora_rank + m_.qk_rope_head_dim, H);
    kv_a_norm_ = vec(n.kv_a_norm, m_.kv_lora_rank);
    kv_b_ = matrix(n.kv_b_weight, heads_ * (m_.qk_nope_head_dim + m_.v_head_dim), m_.kv_lora_rank);
    o_ = matrix(n.o_weight, H, heads_ * m_.v_head_dim);
  }

  // The attention output of every position of one sequence whose hidden states are `xs`.
  std::vector<Vec> outputs(const std::vector<Vec>& xs) const {
    const int nope = m_.qk_nope_head_dim, rope = m_.qk_rope_head_dim, v = m_.v_head_dim, qk = nope + rope;
    std::vector<Vec> queries, rope_keys, expanded, outs;
    for (size_t p = 0; p < xs.size(); ++p) {
      Vec q = apply(q_b_, rms(apply(q_a_, xs[p]), q_a_norm_));
      for (int h = 0; h < heads_; ++h) rotate(&q[h * qk + nope], rope, static_cast<double>(p));
      const Vec compressed = apply(kv_a_, xs[p]);
      const Vec latent = rms(Vec(compressed.begin(), compressed.begin() + m_.kv_lora_rank), kv_a_norm_);
      Vec key(compressed.begin() + m_.kv_lora_rank, compressed.end());
      rotate(key.data(), rope, static_cast<double>(p));
      queries.push_back(q);
      rope_keys.push_back(key);
      expanded.push_back(apply(kv_b_, latent));
    }
    for (size_t p = 0; p < xs.size(); ++p) {
      Vec attn(static_cast<size_t>(heads_ * v), 0.0);
      for (int h = 0; h < heads_; ++h) {
        Vec scores;
        for (size_t j = 0; j <= p; ++j) {
          double s = 0.0;
          for (int d = 0; d < nope; ++d) s += queries[p][h * qk + d] * expanded[j][h * (nope + v) + d];
          for (int d = 0; d < rope; ++d) s += queries[p][h * qk + nope + d] * rope_keys[j][d];
          scores.push_back(s / std::sqrt(static_cast<double>(qk)));
        }
        double max = scores[0], sum = 0.0;
        for (double s : scores) max = std::max(max, s);
        for (double& s : scores) sum += s = std::exp(s - max);
        for (size_t j = 0; j <= p; ++j)
          for (int d = 0; d < v; ++d) attn[h * v + d] += scores[j] / sum * expanded[j][h * (nope + v) + nope + d];
      }
      outs.push_back(apply(o_, attn));
    }
    return outs;
  }

 private:
  struct Matrix {
    Vec w;
    int64_t rows = 0, cols = 0;
  };
  static Vec apply(const Matrix& m, const Vec& x) {
    Vec y(static_cast<size_t>(m.rows), 0.0);
    for (int64_t r = 0; r < m.rows; ++r)
      for (int64_t k = 0; k < m.cols; ++k) y[r] += m.w[r * m.cols + k] * x[k];
    return y;
  }
  Vec rms(Vec x, const Vec& weight) const {
    double sq = 0.0;
    for (double e : x) sq += e * e;
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(x.size()) + c_.rms_norm_eps);
    for (size_t i = 0; i < x.size(); ++i) x[i] *= inv * weight[i];
    return x;
  }
  void rotate(double* x, int dim, double position) const {
    for (int i = 0; i < dim / 2; ++i) {
      const double angle = position * std::pow(c_.rope_theta, -2.0 * i / dim);
      const double a = x[2 * i], b = x[2 * i + 1];
      x[2 * i] = a * std::cos(angle) - b * std::sin(angle);
      x[2 * i + 1] = b * std::cos(angle) + a * std::sin(angle);
    }
  }

  ModelConfig c_;
  MlaConfig m_;
  int heads_;
  Matrix q_a_, q_b_, kv_a_, kv_b_, o_;
  Vec q_a_norm_, kv_a_norm_;
};

std::vector<Vec> random_states(int count, int64_t hidden, std::mt19937& rng) {
  std::normal_distribution<double> normal;
  std::vector<Vec> xs(static_cast<size_t>(count), Vec(static_cast<size_t>(hidden)));
  for (Vec& x : xs)
    for (double& e : x) e = static_cast<float>(normal(rng));  // representable as the float the layer reads
  return xs;
}

TEST(MlaAttentionLayer, MatchesAPlainImplementationAcrossStepsAndScatteredSlots) {
  const std::string dir = std::string(MOE_TEST_DATA_DIR) + "/deepseek-v3-tiny";
  const ModelConfig config = load_model_config(dir);
  ASSERT_TRUE(config.mla && config.mla->rope_interleave && config.mla->q_lora_rank > 0);
  const MlaTensorNames names = model_plan(config).layers[0].mla;
  const Checkpoint ckpt = Checkpoint::open(dir);
  const MlaAttentionLayer layer(ckpt, config, names, 0);
  const MlaReference reference(ckpt, config, names);
  const int64_t H = config.hidden_size;
  std::mt19937 rng(11);
  const std::vector<Vec> a = random_states(6, H, rng), b = random_states(3, H, rng);
  const std::vector<Vec> want_a = reference.outputs(a), want_b = reference.outputs(b);

  KvCache kv({kv_row_floats(config, AttentionKind::Mla)}, 16);
  const std::vector<int32_t> slots_a = {7, 3, 12, 0, 9, 14}, slots_b = {5, 1, 10};
  auto run = [&](const ForwardBatch& batch, const std::vector<const Vec*>& xs) {
    std::vector<float> x, out(static_cast<size_t>(batch.num_tokens() * H));
    for (const Vec* row : xs) x.insert(x.end(), row->begin(), row->end());
    layer.forward(x.data(), batch, kv, out.data());
    return out;
  };
  auto expect_row = [&](const std::vector<float>& out, int64_t t, const Vec& want, const std::string& what) {
    for (int64_t i = 0; i < H; ++i) ASSERT_NEAR(out[t * H + i], want[i], 2e-5 + 2e-5 * std::abs(want[i])) << what << " " << i;
  };
  // Step 1: a's first five tokens and all of b's.
  ForwardBatch first;
  first.add_sequence({1, 2, 3, 4, 5}, {slots_a.begin(), slots_a.begin() + 5}, true);
  first.add_sequence({6, 7, 8}, slots_b, true);
  const std::vector<float> out1 = run(first, {&a[0], &a[1], &a[2], &a[3], &a[4], &b[0], &b[1], &b[2]});
  for (int t = 0; t < 5; ++t) expect_row(out1, t, want_a[t], "a position " + std::to_string(t));
  for (int t = 0; t < 3; ++t) expect_row(out1, 5 + t, want_b[t], "b position " + std::to_string(t));
  // Step 2: a's sixth token attends over the latent rows step 1 stored.
  ForwardBatch second;
  second.add_sequence({9}, slots_a, true);
  expect_row(run(second, {&a[5]}), 0, want_a[5], "a position 5 (decode)");
}

TEST(MlaAttentionLayer, AKvRowIsTheLatentThenTheRotaryKeyNotPerHeadKeysAndValues) {
  const ModelConfig config = load_model_config(std::string(MOE_TEST_DATA_DIR) + "/deepseek-v3-tiny");
  const MlaConfig& m = *config.mla;
  EXPECT_EQ(kv_row_floats(config, AttentionKind::Mla), m.kv_lora_rank + m.qk_rope_head_dim);  // 16 + 8
  EXPECT_EQ(kv_bytes_per_token(config), config.num_hidden_layers * (16 + 8) * 4);
  // Per-head keys and values would be heads · (nope + rope + v) floats a layer.
  EXPECT_LT(kv_row_floats(config, AttentionKind::Mla),
            config.num_attention_heads * (m.qk_head_dim() + m.v_head_dim));
}

}  // namespace
}  // namespace moe
