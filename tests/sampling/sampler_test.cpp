// The sampler: greedy, reproducibility from (seed, step), the filters, and its empirical distribution.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "common/error.h"
#include "sampling/sampler.h"

namespace moe {
namespace {

// sample_token at output index `step`.
SampledToken draw_at(const float* logits, int64_t vocab_size, msg::TokenSampling sampling, uint64_t step) {
  sampling.step = step;
  return sample_token(logits, vocab_size, sampling);
}

// log_softmax(logits)[id] in double precision.
double log_softmax_at(const std::vector<float>& logits, int32_t id) {
  double max_logit = *std::max_element(logits.begin(), logits.end()), sum = 0.0;
  for (float l : logits) sum += std::exp(l - max_logit);
  return logits[id] - max_logit - std::log(sum);
}

std::vector<float> random_logits(size_t n, uint64_t seed, float scale = 4.0f) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> out(n);
  for (float& v : out) v = dist(engine);
  return out;
}

// How often each id is drawn in `draws` steps.
std::map<int32_t, int> histogram(const std::vector<float>& logits, const msg::TokenSampling& params, int draws) {
  std::map<int32_t, int> counts;
  for (int step = 0; step < draws; ++step)
    ++counts[draw_at(logits.data(), static_cast<int64_t>(logits.size()), params, step).id];
  return counts;
}

TEST(SampleToken, GreedyPicksTheArgmaxWithItsLogprob) {
  const std::vector<float> logits = random_logits(1000, 1);
  const int32_t argmax = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  msg::TokenSampling greedy;
  greedy.temperature = 0.0f;
  for (uint64_t step : {0, 1, 99}) {
    const SampledToken token = draw_at(logits.data(), 1000, greedy, step);
    EXPECT_EQ(token.id, argmax);
    EXPECT_NEAR(token.logprob, log_softmax_at(logits, argmax), 1e-5);
  }
}

// A prompt token's logprob (token_logprob) is what a greedy draw of that token reports, bit for
// bit, with the same alternatives; any other token gets its own log_softmax.
TEST(TokenLogprob, IsTheSamplersLogprobAndAlternativesForAGivenToken) {
  const std::vector<float> logits = random_logits(5000, 3);
  for (const int32_t id : {0, 17, 4999}) {
    const SampledToken other = token_logprob(logits.data(), 5000, id, 0);
    EXPECT_EQ(other.id, id);
    EXPECT_NEAR(other.logprob, log_softmax_at(logits, id), 1e-5);
    EXPECT_TRUE(other.top.ids.empty());
  }
  msg::TokenSampling greedy;
  greedy.temperature = 0.0f;
  greedy.top_logprobs = 5;
  const SampledToken drawn = draw_at(logits.data(), 5000, greedy, 0);
  const SampledToken given = token_logprob(logits.data(), 5000, drawn.id, 5);
  EXPECT_EQ(given.id, drawn.id);
  EXPECT_EQ(given.logprob, drawn.logprob);
  EXPECT_EQ(given.top, drawn.top);
  EXPECT_THROW(token_logprob(logits.data(), 5000, 5000, 0), Error);
  EXPECT_THROW(token_logprob(logits.data(), 5000, -1, 0), Error);
  EXPECT_THROW(token_logprob(logits.data(), 5000, 1, 21), Error);
}

TEST(SampleToken, GreedyTiesGoToTheLowestId) {
  const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 3.0f, 3.0f};
  msg::TokenSampling greedy;
  greedy.temperature = 0.0f;
  const SampledToken token = draw_at(logits.data(), 5, greedy, 0);
  EXPECT_EQ(token.id, 1);
  EXPECT_NEAR(token.logprob, log_softmax_at(logits, 1), 1e-6);
}

TEST(SampleToken, LogprobIsOfTheRawLogitsWhateverTheTemperature) {
  const std::vector<float> logits = random_logits(50, 2);
  msg::TokenSampling hot;
  hot.temperature = 2.5f;
  hot.seed = 8;
  for (uint64_t step = 0; step < 20; ++step) {
    const SampledToken token = draw_at(logits.data(), 50, hot, step);
    EXPECT_NEAR(token.logprob, log_softmax_at(logits, token.id), 1e-5);
  }
}

// At temperature 1 with no top-k the draw's all-vocabulary sum doubles as the log-probability's
// partition; top-p and min-p shrink the candidates after it is taken.
TEST(SampleToken, LogprobAtTemperatureOneWithAndWithoutTopPAndMinP) {
  const std::vector<float> logits = random_logits(3000, 3);
  for (const auto& [top_p, min_p] : {std::pair{1.0f, 0.0f}, std::pair{0.7f, 0.0f}, std::pair{1.0f, 0.05f}}) {
    msg::TokenSampling params;
    params.temperature = 1.0f;
    params.top_p = top_p;
    params.min_p = min_p;
    params.seed = 5;
    for (uint64_t step = 0; step < 10; ++step) {
      const SampledToken token = draw_at(logits.data(), 3000, params, step);
      EXPECT_NEAR(token.logprob, log_softmax_at(logits, token.id), 1e-5) << "top_p " << top_p << " min_p " << min_p;
    }
  }
}

TEST(SampleToken, SameSeedAndStepGiveTheSameToken) {
  const std::vector<float> logits = random_logits(5000, 3, 1.0f);
  msg::TokenSampling params;
  params.seed = 1234;
  params.top_p = 0.9f;
  std::set<int32_t> distinct;
  for (uint64_t step = 0; step < 50; ++step) {
    const int32_t first = draw_at(logits.data(), 5000, params, step).id;
    EXPECT_EQ(draw_at(logits.data(), 5000, params, step).id, first);
    distinct.insert(first);
  }
  EXPECT_GT(distinct.size(), 30u);  // a flat distribution: steps must not all draw alike
  msg::TokenSampling other = params;
  other.seed = 1235;
  int same = 0;
  for (uint64_t step = 0; step < 50; ++step)
    same += draw_at(logits.data(), 5000, params, step).id == draw_at(logits.data(), 5000, other, step).id;
  EXPECT_LT(same, 10);
}

TEST(SampleToken, DrawsFollowTheTemperedSoftmax) {
  const std::vector<float> logits = {1.0f, 0.0f, 2.0f, -1.0f, 0.5f};
  msg::TokenSampling params;
  params.temperature = 0.8f;
  params.seed = 42;
  constexpr int kDraws = 20000;
  const auto counts = histogram(logits, params, kDraws);
  double normalizer = 0.0;
  for (float l : logits) normalizer += std::exp(l / params.temperature);
  double chi_square = 0.0;
  for (int32_t id = 0; id < 5; ++id) {
    const double expected = kDraws * std::exp(logits[id] / params.temperature) / normalizer;
    const double observed = counts.count(id) ? counts.at(id) : 0;
    chi_square += (observed - expected) * (observed - expected) / expected;
  }
  // 4 degrees of freedom: P(χ² > 18.5) ≈ 0.001. The seed is fixed, so this is deterministic.
  EXPECT_LT(chi_square, 18.5);
}

TEST(SampleToken, TopKOneAndATinyTopPAreGreedy) {
  const std::vector<float> logits = random_logits(151936, 4);
  const int32_t argmax = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  msg::TokenSampling top_k_one;
  top_k_one.top_k = 1;
  msg::TokenSampling tiny_top_p;
  tiny_top_p.top_p = 1e-6f;
  for (uint64_t step = 0; step < 10; ++step) {
    EXPECT_EQ(draw_at(logits.data(), 151936, top_k_one, step).id, argmax);
    EXPECT_EQ(draw_at(logits.data(), 151936, tiny_top_p, step).id, argmax);
  }
}

TEST(SampleToken, TopKKeepsOnlyTheKMostProbable) {
  const std::vector<float> logits = {0.0f, 5.0f, 1.0f, 4.9f, 4.8f, -2.0f};
  msg::TokenSampling params;
  params.top_k = 3;
  params.temperature = 5.0f;  // flat enough that every survivor gets drawn
  const auto counts = histogram(logits, params, 600);
  EXPECT_EQ(counts.size(), 3u);
  for (int32_t id : {1, 3, 4}) EXPECT_GT(counts.count(id), 0u) << id;
}

TEST(SampleToken, TopPKeepsTheSmallestSetReachingTheMass) {
  // Probabilities 0.5, 0.3, 0.15, 0.05 (ids 2, 0, 3, 1): top_p 0.7 keeps {2, 0}; 0.85 adds 3.
  const std::vector<float> logits = {std::log(0.3f), std::log(0.05f), std::log(0.5f), std::log(0.15f)};
  msg::TokenSampling params;
  params.top_p = 0.7f;
  auto counts = histogram(logits, params, 2000);
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_NEAR(counts[2] / 2000.0, 0.5 / 0.8, 0.04);
  params.top_p = 0.85f;
  counts = histogram(logits, params, 2000);
  EXPECT_EQ(counts.size(), 3u);
  EXPECT_EQ(counts.count(1), 0u);
}

TEST(SampleToken, TopPWidensPastItsFirstWindowOnAFlatVocabulary) {
  // 151936 equal logits: top_p 0.5 must keep the lower half of the ids, far beyond the first window.
  const std::vector<float> logits(151936, 0.0f);
  msg::TokenSampling params;
  params.top_p = 0.5f;
  params.seed = 3;
  int32_t largest = 0;
  for (uint64_t step = 0; step < 40; ++step)
    largest = std::max(largest, draw_at(logits.data(), 151936, params, step).id);
  EXPECT_LT(largest, 151936 / 2 + 1);
  EXPECT_GT(largest, 151936 / 4);
}

TEST(SampleToken, MinPDropsTokensBelowItsShareOfTheTop) {
  // Relative to the top token: 1, 0.5, 0.2, 0.05. min_p 0.3 keeps ids 0 and 1 only.
  const std::vector<float> logits = {0.0f, std::log(0.5f), std::log(0.2f), std::log(0.05f)};
  msg::TokenSampling params;
  params.min_p = 0.3f;
  const auto counts = histogram(logits, params, 2000);
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_NEAR(counts.at(0) / 2000.0, 1.0 / 1.5, 0.04);
}

TEST(ValidateSamplingParams, NamesTheBadField) {
  const auto expect_rejected = [](msg::TokenSampling params, const std::string& field) {
    try {
      validate(params);
      ADD_FAILURE() << field << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
    const float logit = 0.0f;
    EXPECT_THROW(draw_at(&logit, 1, params, 0), Error);
  };
  msg::TokenSampling p;
  EXPECT_NO_THROW(validate(p));
  p.temperature = -0.1f;
  expect_rejected(p, "temperature");
  p = {};
  p.temperature = std::nanf("");
  expect_rejected(p, "temperature");
  p = {};
  p.temperature = std::numeric_limits<float>::infinity();  // msgpack can carry it; it was accepted
  expect_rejected(p, "temperature");
  for (float bad : {0.0f, 1.5f, -1.0f}) {
    p = {};
    p.top_p = bad;
    expect_rejected(p, "top_p");
  }
  for (float bad : {-0.5f, 1.01f}) {
    p = {};
    p.min_p = bad;
    expect_rejected(p, "min_p");
  }
  p = {};
  p.top_k = -2;
  expect_rejected(p, "top_k");
  p = {};
  p.top_k = 0;
  p.min_p = 1.0f;
  p.top_p = 1.0f;
  EXPECT_NO_THROW(validate(p));
}

TEST(CounterUniform, IsAStatelessUniformStream) {
  double sum = 0.0;
  std::set<double> seen;
  for (uint64_t counter = 0; counter < 10000; ++counter) {
    const double u = counter_uniform(7, counter);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    EXPECT_EQ(u, counter_uniform(7, counter));
    sum += u;
    seen.insert(u);
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.01);
  EXPECT_EQ(seen.size(), 10000u);
  EXPECT_NE(counter_uniform(7, 0), counter_uniform(8, 0));
}

}  // namespace
}  // namespace moe
