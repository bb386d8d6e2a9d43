// The step attention on the GPU as a layer calls it (DeviceBatch's query runs, attention_runs, then
// causal_attention) against the CPU attention (kernels/attention.h) over the same K/V, on a batch
// that mixes prefill chunks continuing cached prefixes (17, 64 and 300 new tokens; 300 spans several
// query tiles and key tiles), a run too short for the tiled kernel, one-token prompts and decodes, in
// scattered slots; GQA ratios 1 and 4, head_dim 16, 64 and 128, bf16 K/V (the tiled kernel on tensor
// cores takes the chunks) and float32 K/V (every token one at a time, exact as before). The output
// starts as NaN, so a row no kernel writes fails. Skipped where no GPU is visible.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/device.h"
#include "cuda/device_array.h"
#include "cuda/device_batch.h"
#include "cuda/kernels.h"
#include "cuda/stream.h"
#include "kernels/attention.h"
#include "kernels/weight.h"

namespace moe::testing {
namespace {

constexpr int kKvHeads = 2;

std::vector<float> random_values(size_t n, float sd, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// (new tokens, cached positions before them) of each sequence, in batch order.
struct SequenceShape {
  int32_t num_new, cached;
};
const std::vector<SequenceShape> kSequences = {
    {300, 100}, {1, 250}, {17, 0}, {1, 5}, {64, 37}, {15, 20}, {1, 0}, {17, 64},
};

// The batch over a random permutation of the pool's slots, and each sequence's slots for the CPU.
struct MixedBatch {
  ForwardBatch batch;
  std::vector<std::vector<int32_t>> slots;
  int64_t pool_slots = 0;
};

MixedBatch mixed_batch() {
  MixedBatch mixed;
  for (const SequenceShape& s : kSequences) mixed.pool_slots += s.num_new + s.cached;
  mixed.pool_slots += 7;  // slots no sequence owns
  std::vector<int32_t> permutation(static_cast<size_t>(mixed.pool_slots));
  std::iota(permutation.begin(), permutation.end(), 0);
  std::shuffle(permutation.begin(), permutation.end(), std::mt19937(4));
  size_t next = 0;
  for (const SequenceShape& s : kSequences) {
    std::vector<int32_t> seq_slots(permutation.begin() + static_cast<std::ptrdiff_t>(next),
                                   permutation.begin() + static_cast<std::ptrdiff_t>(next + s.num_new + s.cached));
    next += seq_slots.size();
    mixed.batch.add_sequence(std::vector<int32_t>(static_cast<size_t>(s.num_new), 1), seq_slots, true);
    mixed.slots.push_back(std::move(seq_slots));
  }
  return mixed;
}

// dtype bf16, head_dim, GQA group size.
class CudaTiledAttention : public ::testing::TestWithParam<std::tuple<bool, int, int>> {};

TEST_P(CudaTiledAttention, MixedBatchAgreesWithTheCpu) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const auto [bf16, head_dim, group] = GetParam();
  const int heads = kKvHeads * group;
  const MixedBatch mixed = mixed_batch();
  const int64_t T = mixed.batch.num_tokens();
  const int64_t q_width = int64_t{heads} * head_dim, kv_width = int64_t{kKvHeads} * head_dim;
  // Queries of sd 3: scores of sd about 3, a peaked softmax whose output a wrong mask or slot moves.
  const std::vector<float> q = random_values(static_cast<size_t>(T * q_width), 3.0f, 1);
  std::vector<float> keys = random_values(static_cast<size_t>(mixed.pool_slots * kv_width), 1.0f, 2);
  std::vector<float> values = random_values(static_cast<size_t>(mixed.pool_slots * kv_width), 1.0f, 3);
  std::vector<uint16_t> keys_bf16(keys.size()), values_bf16(values.size());
  for (size_t i = 0; i < keys.size(); ++i) {  // the CPU sees the values the pool holds
    keys_bf16[i] = float_to_bf16(keys[i]);
    values_bf16[i] = float_to_bf16(values[i]);
    if (bf16) {
      keys[i] = bf16_to_float(keys_bf16[i]);
      values[i] = bf16_to_float(values_bf16[i]);
    }
  }

  std::vector<AttentionSequence> sequences;
  for (size_t s = 0; s < kSequences.size(); ++s)
    sequences.push_back({kSequences[s].num_new, kSequences[s].cached, mixed.slots[s].data()});
  std::vector<float> want(q.size());
  causal_attention(q.data(), sequences, keys.data(), values.data(), kv_width, {heads, kKvHeads, head_dim},
                   want.data());

  cuda::Stream stream;
  cuda::DeviceBatch tables;
  tables.upload(mixed.batch, stream.get());
  auto q_dev = cuda::DeviceArray<float>::from_host(q);
  auto keys32 = cuda::DeviceArray<float>::from_host(keys), values32 = cuda::DeviceArray<float>::from_host(values);
  auto keys16 = cuda::DeviceArray<uint16_t>::from_host(keys_bf16);
  auto values16 = cuda::DeviceArray<uint16_t>::from_host(values_bf16);
  const cuda::KvPoolRef pool = bf16 ? cuda::KvPoolRef{keys16.data(), values16.data(), true}
                                    : cuda::KvPoolRef{keys32.data(), values32.data(), false};
  const cuda::QueryRuns runs = cuda::attention_runs(tables.query_runs(), T, pool, head_dim);
  // The chunks of 17 tokens or more: 5 + 1 + 1 + 1 tiles; 15 + 3 tokens one at a time.
  ASSERT_EQ(runs.num_tiles, bf16 ? 8 : 0);
  ASSERT_EQ(runs.num_single, bf16 ? 18 : T);

  const std::vector<float> nans(q.size(), std::nanf(""));
  auto out = cuda::DeviceArray<float>::from_host(nans);
  cuda::DeviceArray<float> partials(std::max<size_t>(1, cuda::attention_partials_size(runs.num_single, heads, head_dim)));
  const size_t counters = cuda::attention_counters_size(T, runs.num_single, heads);
  cuda::DeviceArray<int32_t> split_counters(std::max<size_t>(1, counters));
  cuda::check(cudaMemsetAsync(split_counters.data(), 0, split_counters.size() * sizeof(int32_t), stream.get()),
              "cudaMemsetAsync");
  const cuda::AttentionSplits split{counters ? partials.data() : nullptr, counters ? split_counters.data() : nullptr};
  cuda::causal_attention(q_dev.data(), runs, tables.attention_tables(), pool, heads, kKvHeads, head_dim, split,
                         out.data(), stream.get());
  std::vector<float> got(q.size());
  cuda::check(cudaMemcpyAsync(got.data(), out.data(), got.size() * sizeof(float), cudaMemcpyDeviceToHost, stream.get()),
              "cudaMemcpyAsync");
  cuda::check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");

  // bf16: q and the softmax weights are rounded to bf16 for the tensor cores (relative 2^-9 each):
  // under 0.01 on outputs of this size (about 0.3 on average) in a host simulation of the rounding;
  // a wrong mask, slot or tile moves them by tenths.
  const float tolerance = bf16 ? 3e-2f : 1e-4f;
  double magnitude = 0.0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < q_width; ++c) {
      const size_t i = static_cast<size_t>(t * q_width + c);
      magnitude += std::fabs(want[i]);
      ASSERT_NEAR(got[i], want[i], tolerance) << "token " << t << " column " << c;
    }
  EXPECT_GT(magnitude / static_cast<double>(q.size()), 5 * tolerance) << "outputs too small for the tolerance";
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaTiledAttention,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(16, 64, 128), ::testing::Values(1, 4)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "Bf16" : "Float32") + "HeadDim" +
                                  std::to_string(std::get<1>(info.param)) + "Group" +
                                  std::to_string(std::get<2>(info.param));
                         });

}  // namespace
}  // namespace moe::testing
