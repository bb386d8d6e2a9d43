// causal_attention against reference::causal_attention, a straightforward double-precision
// softmax(q·kᵀ/√d)·v: grouped KV heads of ratio 1 to 8, head_dim with and without a partial SIMD
// chunk, decode after cached prefixes, prefills, KV slots in shuffled order and logits far past
// what a float exp can take.
#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/reference.h"

namespace moe {
namespace {

// Query/KV head counts and head_dim: GQA ratios 1, 3, 4, 7 and 8; head_dim 64 and 128 (the fast
// paths), 72 and 40 (multiples of 8 off the 64-wide tiles), 20 and 36 (a partial last chunk).
const AttentionShape kShapes[] = {{4, 4, 64}, {16, 4, 64}, {8, 2, 128}, {8, 1, 72},
                                  {16, 2, 20}, {6, 2, 40}, {7, 1, 36}};

// One sequence of a problem: how many positions it had cached and how many it adds.
struct SequenceSpec {
  int64_t prefix = 0, num_new = 0;
};

// Random queries and a KV cache shared by a batch of sequences, whose rows sit at shuffled slots
// with a row stride wider than a row.
struct Problem {
  AttentionShape shape;
  std::vector<SequenceSpec> specs;
  int64_t kv_stride = 0;
  std::vector<float> q, keys, values;
  std::vector<std::vector<int32_t>> slots;  // per sequence, by position

  int64_t q_width() const { return static_cast<int64_t>(shape.num_heads) * shape.head_dim; }
};

// q and k entries have standard deviation `spread`, so scores have about spread² of it.
Problem make_problem(const AttentionShape& shape, std::vector<SequenceSpec> specs, float spread = 1.0f) {
  Problem problem;
  problem.shape = shape;
  problem.specs = std::move(specs);
  int64_t positions = 0, num_new = 0;
  for (const SequenceSpec& spec : problem.specs) {
    positions += spec.prefix + spec.num_new;
    num_new += spec.num_new;
  }
  const int64_t num_slots = positions + 11;
  problem.kv_stride = static_cast<int64_t>(shape.num_kv_heads) * shape.head_dim + 5;
  std::mt19937 rng(static_cast<uint32_t>(shape.num_heads * 1000 + shape.head_dim * 10 + positions));
  std::normal_distribution<float> normal;
  problem.q.resize(num_new * problem.q_width());
  problem.keys.resize(num_slots * problem.kv_stride);
  problem.values.resize(problem.keys.size());
  for (float& v : problem.q) v = spread * normal(rng);
  for (float& v : problem.keys) v = spread * normal(rng);
  for (float& v : problem.values) v = normal(rng);
  std::vector<int32_t> all_slots(num_slots);
  std::iota(all_slots.begin(), all_slots.end(), 0);
  std::shuffle(all_slots.begin(), all_slots.end(), rng);
  auto next_slot = all_slots.begin();
  for (const SequenceSpec& spec : problem.specs) {
    problem.slots.emplace_back(next_slot, next_slot + spec.prefix + spec.num_new);
    next_slot += spec.prefix + spec.num_new;
  }
  return problem;
}

// Runs causal_attention on an output buffer full of NaN (every element must be written) and
// compares every element with the reference.
void expect_matches_reference(const Problem& p, double tolerance) {
  std::vector<AttentionSequence> sequences;
  for (size_t s = 0; s < p.specs.size(); ++s)
    sequences.push_back({p.specs[s].num_new, p.specs[s].prefix, p.slots[s].data()});
  std::vector<float> out(p.q.size(), std::nanf(""));
  causal_attention(p.q.data(), sequences, p.keys.data(), p.values.data(), p.kv_stride, p.shape, out.data());
  std::vector<double> want(p.q.size());
  reference::causal_attention(p.q.data(), sequences, p.keys.data(), p.values.data(), p.kv_stride, p.shape, want.data());
  const int hd = p.shape.head_dim;
  for (size_t e = 0; e < out.size(); ++e)
    ASSERT_NEAR(out[e], want[e], tolerance) << "token " << e / p.q_width() << " head " << e % p.q_width() / hd
                                            << " dim " << e % hd;
}

// Names a batch in failure messages.
std::string describe(const AttentionShape& shape, const std::vector<SequenceSpec>& specs) {
  std::ostringstream text;
  text << shape.num_heads << " heads, " << shape.num_kv_heads << " KV heads, head_dim " << shape.head_dim
       << ", sequences (prefix+new):";
  for (const SequenceSpec& spec : specs) text << " " << spec.prefix << "+" << spec.num_new;
  return text.str();
}

// Unit-variance values averaged in float: a few ulps of 1 of difference from the exact result.
constexpr double kTolerance = 1e-6;

// The check of one batch of sequences, named in any failure.
void check(const AttentionShape& shape, const std::vector<SequenceSpec>& specs, float spread = 1.0f,
           double tolerance = kTolerance) {
  SCOPED_TRACE(describe(shape, specs));
  expect_matches_reference(make_problem(shape, specs, spread), tolerance);
}

TEST(CausalAttention, DecodeAfterCachedPrefixesMatchesReference) {
  for (const AttentionShape& shape : kShapes)
    for (int64_t prefix : {0, 1, 7, 129}) check(shape, {{prefix, 1}});
}

TEST(CausalAttention, PrefillOfUpTo40TokensMatchesReference) {
  for (const AttentionShape& shape : kShapes)
    for (int64_t num_new = 1; num_new <= 40; ++num_new) check(shape, {{0, num_new}});
}

TEST(CausalAttention, LongPrefillAndChunkedPrefillMatchReference) {
  for (const AttentionShape& shape : kShapes) {
    check(shape, {{0, 300}});
    check(shape, {{45, 19}});
  }
}

// Scores with a spread of about 100 (up to ~400) overflow e^score in float unless the largest is
// subtracted first. The tolerance allows for the scores' own float rounding (~1e-5 of ~100s),
// which near-ties between the top scores turn into output differences.
TEST(CausalAttention, LargeLogitsMatchReference) {
  for (const AttentionShape& shape : kShapes) check(shape, {{60, 5}}, 10.0f, 2e-4);
}

// A batch as the model layer passes it: decode tokens of sequences with different contexts beside a
// prefill chunk, a whole prefill and a sequence with no new tokens, all in one cache.
TEST(CausalAttention, MixedBatchOfSequencesMatchesReference) {
  for (const AttentionShape& shape : kShapes)
    check(shape, {{129, 1}, {0, 1}, {30, 9}, {7, 1}, {0, 0}, {0, 23}, {64, 1}});
}

}  // namespace
}  // namespace moe
