#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/exp_sum.h"
#include "kernels/first_max.h"
#include "sampling/logit_adjustments.h"

namespace moe {
namespace {

// The message every range check shares: "<field> must be <range>, got <value>".
[[noreturn]] void reject(const char* field, const char* range, const std::string& value) {
  throw Error(std::string("sampling parameter ") + field + " must be " + range + ", got " + value);
}

void check_top_logprobs(int32_t top_logprobs) {
  if (top_logprobs < 0 || top_logprobs > kMaxTopLogprobs) reject("top_logprobs", "in [0, 20]", std::to_string(top_logprobs));
}

// splitmix64's finaliser: a bijection on 64 bits whose output bits each depend on every input bit.
uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// top-p first ranks this many candidates and widens only if their mass falls short: the nucleus of
// a real model's distribution is usually far smaller than the vocabulary.
constexpr size_t kFirstTopPWindow = 1024;
constexpr size_t kTopPWindowGrowth = 16;
// Selecting n of V ids uses a bounded heap while n < V / kHeapSelectionRatio, else nth_element.
constexpr size_t kHeapSelectionRatio = 16;

// Tokens still in the running. weight_by_id[id] = exp((logit - max) / T), the unnormalised
// probability (1 for the most probable token); set only for the ids in `ids`. One per thread,
// reused, so that a vocabulary-sized call allocates (and page-faults) nothing once warm.
struct Candidates {
  std::vector<int32_t> ids;
  std::vector<int32_t> ranked;  // scratch for top-p's ranking
  std::vector<float> weight_by_id;
  double total = 0.0;   // Σ weight over ids
  bool sorted = false;  // ids in descending probability (ties: lower id first); else every id in id order
};

// Most probable first; equal logits put the lower id first, as greedy does.
auto more_probable(const float* logits) {
  return [logits](int32_t a, int32_t b) { return logits[a] != logits[b] ? logits[a] > logits[b] : a < b; };
}

// out = the n most probable ids, most probable first. For a small n, a bounded heap whose top is
// the weakest kept id: one comparison per token and rare replacements, far cheaper than ranking
// the whole vocabulary; for a large n, a selection and a sort of the front.
void most_probable(const float* logits, int64_t vocab_size, size_t n, std::vector<int32_t>& out) {
  const auto better = more_probable(logits);
  out.clear();
  if (n * kHeapSelectionRatio >= static_cast<size_t>(vocab_size)) {
    out.resize(static_cast<size_t>(vocab_size));
    std::iota(out.begin(), out.end(), 0);
    const auto front_end = out.begin() + static_cast<std::ptrdiff_t>(n);
    std::nth_element(out.begin(), front_end, out.end(), better);
    std::sort(out.begin(), front_end, better);
    out.resize(n);
    return;
  }
  for (int32_t id = 0; id < vocab_size; ++id) {
    if (out.size() < n) {
      out.push_back(id);
      std::push_heap(out.begin(), out.end(), better);
    } else if (better(id, out.front())) {
      std::pop_heap(out.begin(), out.end(), better);
      out.back() = id;
      std::push_heap(out.begin(), out.end(), better);
    }
  }
  std::sort_heap(out.begin(), out.end(), better);
}

// Every token, or the top_k most probable (sorted) when top-k is on and smaller than the vocabulary.
void take_top_k(const float* logits, int64_t vocab_size, const msg::DrawSettings& params, float max_logit,
                Candidates& c) {
  c.sorted = params.top_k > 0 && params.top_k < vocab_size;
  const float inverse_temperature = 1.0f / params.temperature;
  c.weight_by_id.resize(static_cast<size_t>(vocab_size));
  if (!c.sorted) {
    c.ids.resize(static_cast<size_t>(vocab_size));
    std::iota(c.ids.begin(), c.ids.end(), 0);
    c.total = sum_of_exps(logits, vocab_size, max_logit, inverse_temperature, c.weight_by_id.data());
    return;
  }
  most_probable(logits, vocab_size, static_cast<size_t>(params.top_k), c.ids);
  c.total = 0.0;
  for (int32_t id : c.ids) {
    c.weight_by_id[id] = std::exp((logits[id] - max_logit) * inverse_temperature);
    c.total += c.weight_by_id[id];
  }
}

// Keeps the shortest most-probable prefix whose mass reaches top_p of the total (a token stays when
// the mass before it is still short), ranking only as far as needed.
void apply_top_p(Candidates& c, float top_p, const float* logits) {
  const double target = static_cast<double>(top_p) * c.total;
  const size_t count = c.ids.size();
  size_t window = c.sorted ? count : std::min(count, kFirstTopPWindow);
  for (;;) {
    // Unsorted candidates are the whole vocabulary, so ranking the vocabulary ranks them.
    if (c.sorted)
      c.ranked.assign(c.ids.begin(), c.ids.end());
    else
      most_probable(logits, static_cast<int64_t>(count), window, c.ranked);
    double mass = 0.0;
    for (size_t i = 0; i < window; ++i) {
      if (mass >= target) {  // target > 0, so the most probable token always stays
        c.ranked.resize(i);
        std::swap(c.ids, c.ranked);
        c.total = mass;
        c.sorted = true;
        return;
      }
      mass += c.weight_by_id[c.ranked[i]];
    }
    if (window == count) return;  // rounding kept the whole set
    window = std::min(count, window * kTopPWindowGrowth);
  }
}

// Drops tokens whose probability is below min_p × the top token's; as weights are relative to the
// top token (weight 1), that is a weight below min_p.
void apply_min_p(Candidates& c, float min_p) {
  std::erase_if(c.ids, [&](int32_t id) { return c.weight_by_id[id] < min_p; });
  c.total = 0.0;
  for (int32_t id : c.ids) c.total += c.weight_by_id[id];
}

// Inverse-CDF draw over the candidates in their current order.
int32_t draw(const Candidates& c, double uniform) {
  const double target = uniform * c.total;
  double mass = 0.0;
  for (int32_t id : c.ids) {
    mass += c.weight_by_id[id];
    if (mass > target) return id;
  }
  return c.ids.back();  // rounding left the target at the very top of the mass
}

// `token`'s log-probability under the raw row (log_softmax, given its maximum and Σ e^(logit - max)),
// and the `top` most probable tokens' under the same.
SampledToken logprobs_of(const float* logits, int64_t vocab_size, int32_t token, int32_t top, float max_logit,
                         double partition) {
  const double log_partition = std::log(partition);
  auto logprob = [&](int32_t id) { return static_cast<float>(logits[id] - max_logit - log_partition); };
  SampledToken out{token, logprob(token), {}};
  if (top > 0) {
    thread_local std::vector<int32_t> ranked;
    most_probable(logits, vocab_size, std::min<size_t>(static_cast<size_t>(top), static_cast<size_t>(vocab_size)),
                  ranked);
    for (int32_t id : ranked) {
      out.top.ids.push_back(id);
      out.top.logprobs.push_back(logprob(id));
    }
  }
  return out;
}

}  // namespace

void validate(const msg::DrawSettings& params) {
  // Written as !(in range) so that NaN is rejected too.
  if (!(params.temperature >= 0.0f && std::isfinite(params.temperature)))
    reject("temperature", ">= 0 and finite", std::to_string(params.temperature));
  if (!(params.top_p > 0.0f && params.top_p <= 1.0f)) reject("top_p", "in (0, 1]", std::to_string(params.top_p));
  if (params.top_k < -1) reject("top_k", "-1 (off), 0 (off) or positive", std::to_string(params.top_k));
  if (!(params.min_p >= 0.0f && params.min_p <= 1.0f)) reject("min_p", "in [0, 1]", std::to_string(params.min_p));
  if (!(params.presence_penalty >= -2.0f && params.presence_penalty <= 2.0f))
    reject("presence_penalty", "in [-2, 2]", std::to_string(params.presence_penalty));
  if (!(params.frequency_penalty >= -2.0f && params.frequency_penalty <= 2.0f))
    reject("frequency_penalty", "in [-2, 2]", std::to_string(params.frequency_penalty));
  if (!(params.repetition_penalty > 0.0f && params.repetition_penalty <= 2.0f))
    reject("repetition_penalty", "in (0, 2]", std::to_string(params.repetition_penalty));
  for (const msg::TokenBias& bias : params.logit_bias)
    if (!(bias.bias >= -100.0f && bias.bias <= 100.0f))
      reject("logit_bias", "a map of token ids to biases in [-100, 100]", std::to_string(bias.bias));
}

double counter_uniform(uint64_t seed, uint64_t counter) {
  // Mixing the seed first keeps nearby seeds' streams unrelated; the top 53 bits fill the mantissa.
  const uint64_t bits = mix64(mix64(seed) ^ counter);
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

SampledToken token_logprob(const float* logits, int64_t vocab_size, int32_t token, int32_t top_logprobs) {
  if (vocab_size < 1 || token < 0 || token >= vocab_size)
    throw Error("token_logprob: token " + std::to_string(token) + " is outside a vocabulary of " +
                std::to_string(vocab_size));
  check_top_logprobs(top_logprobs);
  const float max_logit = logits[first_max(logits, vocab_size)];
  return logprobs_of(logits, vocab_size, token, top_logprobs, max_logit, sum_of_exps(logits, vocab_size, max_logit, 1.0f));
}

SampledToken sample_token(const float* logits, int64_t vocab_size, const msg::TokenSampling& params) {
  validate(params);
  if (vocab_size < 1) throw Error("sample_token: vocabulary size must be positive, got " + std::to_string(vocab_size));
  check_top_logprobs(params.top_logprobs);
  // The token is drawn from the row as the request adjusts it (penalties, bias, banned stop tokens).
  const float* row = logits;
  if (adjusts_logits(params)) {
    thread_local std::vector<float> adjusted;
    adjusted.resize(static_cast<size_t>(vocab_size));
    adjust_logits(logits, vocab_size, params, adjusted.data());
    row = adjusted.data();
  }
  // first_max returns the first maximum, so greedy ties go to the lowest id.
  const int64_t top = first_max(row, vocab_size);
  const float row_max = row[top];

  int32_t id = static_cast<int32_t>(top);
  double partition = 0.0;  // the log-probability's Σ e^(logit - max), once summed (it is at least 1)
  if (params.temperature > 0.0f) {
    thread_local Candidates candidates;
    take_top_k(row, vocab_size, params, row_max, candidates);
    // At temperature 1 with every raw logit a candidate, that total is the same sum over the same terms.
    if (row == logits && params.temperature == 1.0f && !candidates.sorted) partition = candidates.total;
    if (params.top_p < 1.0f) apply_top_p(candidates, params.top_p, row);
    if (params.min_p > 0.0f) apply_min_p(candidates, params.min_p);
    id = draw(candidates, counter_uniform(params.seed, params.step));
  }

  // Log-probabilities are the model's (log_softmax of the raw logits), whatever adjusted the draw.
  const float max_logit = row == logits ? row_max : logits[first_max(logits, vocab_size)];
  if (partition == 0.0) partition = sum_of_exps(logits, vocab_size, max_logit, 1.0f);
  return logprobs_of(logits, vocab_size, id, params.top_logprobs, max_logit, partition);
}

}  // namespace moe
