// YaRN rotary scaling against numbers computed independently (numpy in float32, transformers' formula
// by hand): dim 16, theta 10000, factor 40 over 4096 original positions, beta 32/1, so the ramp runs
// from dimension pair 2 to 6 (correction dims 2.62 and 5.63, rounded outwards).
#include "model/rope_scaling.h"

#include <gtest/gtest.h>

namespace moe {
namespace {

YarnScaling deepseek_like() {
  YarnScaling y;
  y.factor = 40.0;
  y.original_max_position_embeddings = 4096;
  y.beta_fast = 32.0;
  y.beta_slow = 1.0;
  return y;
}

TEST(YarnScaling, FrequenciesKeepTheFastOnesInterpolateTheSlowOnesAndBlendBetween) {
  const std::vector<float> want = {1.0f,        0.31622776f,   0.1f,         0.023914725f,
                                   0.0051249997f, 0.00084986218f, 2.4999999e-05f, 7.9056945e-06f};
  const std::vector<float> got = yarn_inv_freq(16, 10000.0, deepseek_like());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6 * want[i]) << i;
}

TEST(YarnScaling, AttentionFactorFromTheMscalesAndSoftmaxScaleFromMscaleAllDim) {
  YarnScaling y = deepseek_like();
  EXPECT_NEAR(yarn_attention_factor(y), 1.3688879454113936, 1e-12);  // 0.1 ln 40 + 1
  EXPECT_DOUBLE_EQ(yarn_softmax_scale_factor(y), 1.0);               // no mscale_all_dim
  y.mscale = 0.707;
  y.mscale_all_dim = 1.0;
  EXPECT_NEAR(yarn_attention_factor(y), 0.9210423553163399, 1e-12);
  EXPECT_NEAR(yarn_softmax_scale_factor(y), 1.8738542070926265, 1e-12);  // (0.1 ln 40 + 1)²
  y.attention_factor = 0.5;
  EXPECT_DOUBLE_EQ(yarn_attention_factor(y), 0.5);
}

}  // namespace
}  // namespace moe
