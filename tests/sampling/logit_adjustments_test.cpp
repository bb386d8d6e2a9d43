// A request's penalties, logit_bias and suppressed ids, checked against a scalar double-precision
// reference of SGLang's formulas; the draw follows the adjusted row while logprobs and top
// logprobs stay the model's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>

#include "common/error.h"
#include "sampling/logit_adjustments.h"
#include "sampling/sampler.h"

namespace moe {
namespace {

std::vector<float> random_logits(size_t n, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> out(n);
  for (float& v : out) v = dist(engine);
  return out;
}

// The formulas, one token at a time, in double: SGLang's repetition penalty (scaling), then its
// frequency and presence penalties (subtraction), OpenAI's bias, then the ban.
std::vector<double> reference_adjusted(const std::vector<float>& logits, const msg::TokenSampling& s) {
  std::vector<double> out(logits.begin(), logits.end());
  for (size_t t = 0; t < out.size(); ++t) {
    const auto count = static_cast<double>(std::count(s.generated_ids.begin(), s.generated_ids.end(), int32_t(t)));
    if (count > 0) {
      out[t] = out[t] < 0 ? out[t] * s.repetition_penalty : out[t] / s.repetition_penalty;
      out[t] -= s.frequency_penalty * count + s.presence_penalty;
    }
    for (const msg::TokenBias& b : s.logit_bias)
      if (b.id == int32_t(t)) out[t] += b.bias;
    if (std::count(s.suppressed_ids.begin(), s.suppressed_ids.end(), int32_t(t)))
      out[t] = -std::numeric_limits<double>::infinity();
  }
  return out;
}

double log_softmax_at(const std::vector<float>& logits, int32_t id) {
  const double max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float l : logits) sum += std::exp(l - max_logit);
  return logits[id] - max_logit - std::log(sum);
}

msg::TokenSampling everything_on() {
  msg::TokenSampling s;
  s.presence_penalty = 0.5f;
  s.frequency_penalty = 0.25f;
  s.repetition_penalty = 1.3f;
  s.generated_ids = {3, 7, 3, 11, 3, 0, 7};
  s.logit_bias = {{5, 4.0f}, {7, -1.5f}, {12, 100.0f}};
  s.suppressed_ids = {1, 9};
  return s;
}

TEST(AdjustLogits, MatchesTheScalarReference) {
  const std::vector<float> logits = random_logits(16, 3);
  const msg::TokenSampling s = everything_on();
  ASSERT_TRUE(adjusts_logits(s));
  std::vector<float> adjusted(logits.size());
  adjust_logits(logits.data(), 16, s, adjusted.data());
  const std::vector<double> expected = reference_adjusted(logits, s);
  for (size_t t = 0; t < logits.size(); ++t) {
    if (std::isinf(expected[t])) {
      EXPECT_TRUE(std::isinf(adjusted[t]) && adjusted[t] < 0) << t;
    } else {
      EXPECT_NEAR(adjusted[t], expected[t], 1e-5) << t;
    }
  }
  // Negative and positive logits both lose to the repetition penalty.
  EXPECT_LT(adjusted[3], logits[3]);
  EXPECT_LT(adjusted[11], logits[11]);
}

TEST(AdjustLogits, EachPenaltyAloneFollowsItsFormula) {
  const std::vector<float> logits = {2.0f, -2.0f, 0.5f, 1.0f};
  msg::TokenSampling s;
  s.generated_ids = {0, 1, 1};
  std::vector<float> out(4);
  s.frequency_penalty = 0.5f;
  adjust_logits(logits.data(), 4, s, out.data());
  EXPECT_EQ(out, (std::vector<float>{1.5f, -3.0f, 0.5f, 1.0f}));  // 2 - 0.5·1, -2 - 0.5·2
  s.frequency_penalty = 0.0f;
  s.presence_penalty = 0.5f;
  adjust_logits(logits.data(), 4, s, out.data());
  EXPECT_EQ(out, (std::vector<float>{1.5f, -2.5f, 0.5f, 1.0f}));  // once, however often
  s.presence_penalty = 0.0f;
  s.repetition_penalty = 2.0f;
  adjust_logits(logits.data(), 4, s, out.data());
  EXPECT_EQ(out, (std::vector<float>{1.0f, -4.0f, 0.5f, 1.0f}));  // divides positive, multiplies negative
  EXPECT_FALSE(adjusts_logits(msg::TokenSampling{}));
}

TEST(AdjustLogits, IdsOutsideTheVocabularyAreRefused) {
  const std::vector<float> logits(4, 0.0f);
  std::vector<float> out(4);
  msg::TokenSampling s;
  s.logit_bias = {{4, 1.0f}};
  EXPECT_THROW(adjust_logits(logits.data(), 4, s, out.data()), Error);
}

TEST(SampleTokenAdjusted, GreedyTakesTheAdjustedArgmaxAndReportsTheRawLogprob) {
  const std::vector<float> logits = random_logits(64, 5);
  const int32_t raw_argmax = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  msg::TokenSampling s;
  s.temperature = 0.0f;
  s.logit_bias = {{17, 100.0f}};
  SampledToken token = sample_token(logits.data(), 64, s);
  EXPECT_EQ(token.id, 17);
  EXPECT_NEAR(token.logprob, log_softmax_at(logits, 17), 1e-5);  // the model's, not the biased row's
  s.logit_bias.clear();
  s.suppressed_ids = {raw_argmax};  // min_new_tokens banning a stop token that is the argmax
  token = sample_token(logits.data(), 64, s);
  EXPECT_NE(token.id, raw_argmax);
  std::vector<float> without = logits;
  without[raw_argmax] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(token.id, std::max_element(without.begin(), without.end()) - without.begin());
}

TEST(SampleTokenAdjusted, DrawsFollowTheAdjustedSoftmax) {
  const std::vector<float> logits = {1.0f, 0.0f, 2.0f, -1.0f, 0.5f};
  msg::TokenSampling s;
  s.seed = 9;
  s.frequency_penalty = 0.4f;
  s.presence_penalty = 0.3f;
  s.repetition_penalty = 1.2f;
  s.generated_ids = {2, 2, 3};
  s.logit_bias = {{1, 1.0f}};
  const std::vector<double> adjusted = reference_adjusted(logits, s);
  double normalizer = 0.0;
  for (double l : adjusted) normalizer += std::exp(l);
  constexpr int kDraws = 20000;
  std::map<int32_t, int> counts;
  for (int step = 0; step < kDraws; ++step) {
    s.step = static_cast<uint64_t>(step);
    ++counts[sample_token(logits.data(), 5, s).id];
  }
  double chi_square = 0.0;
  for (int32_t id = 0; id < 5; ++id) {
    const double expected = kDraws * std::exp(adjusted[id]) / normalizer;
    const double observed = counts.count(id) ? counts.at(id) : 0;
    chi_square += (observed - expected) * (observed - expected) / expected;
  }
  EXPECT_LT(chi_square, 18.5);  // 4 degrees of freedom, P(χ² > 18.5) ≈ 0.001; the seed is fixed
}

TEST(SampleTokenTopLogprobs, TheGreedyTokenLeadsWithItsOwnLogprob) {
  std::vector<float> logits = random_logits(5000, 8);
  logits[10] = logits[11] = 50.0f;  // a tie: the lower id first, as greedy picks it
  msg::TokenSampling s;
  s.temperature = 0.0f;
  s.top_logprobs = 20;
  const SampledToken token = sample_token(logits.data(), 5000, s);
  ASSERT_EQ(token.top.ids.size(), 20u);
  ASSERT_EQ(token.top.logprobs.size(), 20u);
  EXPECT_EQ(token.top.ids[0], token.id);
  EXPECT_EQ(token.top.ids[0], 10);
  EXPECT_EQ(token.top.ids[1], 11);
  EXPECT_EQ(token.top.logprobs[0], token.logprob);
  std::vector<int32_t> ranked(5000);
  std::iota(ranked.begin(), ranked.end(), 0);
  std::stable_sort(ranked.begin(), ranked.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  for (size_t k = 0; k < 20; ++k) {
    EXPECT_EQ(token.top.ids[k], ranked[k]);
    EXPECT_NEAR(token.top.logprobs[k], log_softmax_at(logits, ranked[k]), 1e-4);
  }
  s.top_logprobs = 0;
  EXPECT_TRUE(sample_token(logits.data(), 5000, s).top.ids.empty());
  s.top_logprobs = 21;
  EXPECT_THROW(sample_token(logits.data(), 5000, s), Error);
}

TEST(SampleTokenTopLogprobs, AlternativesAreTheModelsEvenWhenTheDrawIsAdjusted) {
  const std::vector<float> logits = random_logits(100, 2);
  msg::TokenSampling s;
  s.temperature = 0.0f;
  s.top_logprobs = 3;
  const SampledToken plain = sample_token(logits.data(), 100, s);
  s.logit_bias = {{plain.top.ids[2], 100.0f}};
  const SampledToken biased = sample_token(logits.data(), 100, s);
  EXPECT_EQ(biased.id, plain.top.ids[2]);
  EXPECT_EQ(biased.top, plain.top);
  EXPECT_EQ(biased.logprob, plain.top.logprobs[2]);
}

TEST(ValidateDrawSettings, NamesTheBadPenalty) {
  auto message = [](const msg::DrawSettings& d) {
    try {
      validate(d);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message({.presence_penalty = 2.5f}).find("presence_penalty"), std::string::npos);
  EXPECT_NE(message({.frequency_penalty = -2.5f}).find("frequency_penalty"), std::string::npos);
  EXPECT_NE(message({.repetition_penalty = 0.0f}).find("repetition_penalty"), std::string::npos);
  EXPECT_NE(message({.repetition_penalty = NAN}).find("repetition_penalty"), std::string::npos);
  EXPECT_NE(message({.logit_bias = {{1, 100.5f}}}).find("logit_bias"), std::string::npos);
  EXPECT_EQ(message({.presence_penalty = -2.0f, .frequency_penalty = 2.0f, .repetition_penalty = 2.0f}), "accepted");
}

}  // namespace
}  // namespace moe
