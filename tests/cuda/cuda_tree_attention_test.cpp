// The tree attention mask on the GPU: a draft tree uploaded by DeviceBatch (each tree token over the
// slots it sees) through the CUDA attention kernel gives what the CPU attention gives when each tree
// token attends as a one-token sequence over its visible slots (model/attention_layer.cpp), beside a
// plain sequence in the same batch; and on this tree that answer differs from attention over every
// earlier node, so a kernel that let siblings see each other fails. Skipped where no GPU is visible.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "cuda/device.h"
#include "cuda/device_array.h"
#include "cuda/device_batch.h"
#include "cuda/kernels.h"
#include "cuda/stream.h"
#include "kernels/attention.h"

namespace moe::testing {
namespace {

constexpr int kHeads = 4, kKvHeads = 2, kHeadDim = 64;
constexpr int64_t kSlots = 32;
constexpr int64_t kKvWidth = kKvHeads * kHeadDim, kQWidth = kHeads * kHeadDim;

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// A tree r -> a -> {b, d}, r -> c over a prefix of 6 positions in scattered slots, then a plain
// sequence of 3 new tokens over 2 cached positions.
ForwardBatch tree_and_plain_batch() {
  ForwardBatch batch;
  batch.add_tree_sequence({11, 12, 13, 14, 15}, {30, 2, 17, 5, 9, 21, 1, 28, 14, 7, 25}, {-1, 0, 0, 1, 1}, true);
  batch.add_sequence({16, 17, 18}, {3, 4, 10, 11, 12}, true);
  return batch;
}

// The CPU's attention of `batch` with every tree token as a one-token sequence over `views[i]`.
std::vector<float> cpu_attention(const ForwardBatch& batch, const std::vector<float>& q, const std::vector<float>& keys,
                                 const std::vector<float>& values,
                                 const std::vector<std::vector<int32_t>>& tree_views) {
  std::vector<AttentionSequence> sequences;
  size_t view = 0;
  int64_t t = 0;
  for (const BatchSequence& seq : batch.sequences) {
    if (seq.is_tree()) {
      for (int32_t i = 0; i < seq.num_new_tokens; ++i, ++view)
        sequences.push_back({1, static_cast<int64_t>(tree_views[view].size()) - 1, tree_views[view].data()});
    } else {
      sequences.push_back({seq.num_new_tokens, batch.positions[t], seq.kv_slots.data()});
    }
    t += seq.num_new_tokens;
  }
  std::vector<float> out(q.size());
  causal_attention(q.data(), sequences, keys.data(), values.data(), kKvWidth, {kHeads, kKvHeads, kHeadDim},
                   out.data());
  return out;
}

float largest_difference(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

TEST(CudaTreeAttention, EachTreeTokenSeesThePrefixAndItsAncestorsOnly) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const ForwardBatch batch = tree_and_plain_batch();
  const int64_t T = batch.num_tokens();
  const std::vector<float> q = random_values(static_cast<size_t>(T * kQWidth), 1);
  const std::vector<float> keys = random_values(static_cast<size_t>(kSlots * kKvWidth), 2);
  const std::vector<float> values = random_values(static_cast<size_t>(kSlots * kKvWidth), 3);

  const BatchSequence& tree = batch.sequences[0];
  std::vector<std::vector<int32_t>> masked, every_earlier_node;
  for (int32_t i = 0; i < tree.num_new_tokens; ++i) {
    masked.push_back(tree.visible_slots(i));
    // What a kernel ignoring the mask would read: the prefix and every node up to this one.
    every_earlier_node.emplace_back(tree.kv_slots.begin(), tree.kv_slots.begin() + tree.prefix_len() + i + 1);
  }
  const std::vector<float> want = cpu_attention(batch, q, keys, values, masked);
  ASSERT_GT(largest_difference(want, cpu_attention(batch, q, keys, values, every_earlier_node)), 0.1f)
      << "the tree's siblings must change the answer, or this test could not see a missing mask";

  cuda::Stream stream;
  cuda::DeviceBatch tables;
  tables.upload(batch, stream.get());
  auto q_dev = cuda::DeviceArray<float>::from_host(q);
  auto keys_dev = cuda::DeviceArray<float>::from_host(keys);
  auto values_dev = cuda::DeviceArray<float>::from_host(values);
  cuda::DeviceArray<float> out(q.size());
  cuda::DeviceArray<float> partials(std::max<size_t>(1, cuda::attention_partials_size(T, kHeads, kHeadDim)));
  const size_t counters = cuda::attention_counters_size(T, T, kHeads);
  cuda::DeviceArray<int32_t> split_counters(std::max<size_t>(1, counters));
  cuda::check(cudaMemsetAsync(split_counters.data(), 0, split_counters.size() * sizeof(int32_t), stream.get()),
              "cudaMemsetAsync");
  const cuda::AttentionSplits split{counters ? partials.data() : nullptr, counters ? split_counters.data() : nullptr};
  cuda::causal_attention(q_dev.data(), tables.query_runs(), tables.attention_tables(), {keys_dev.data(), values_dev.data(), false},
                         kHeads, kKvHeads, kHeadDim, split, out.data(), stream.get());
  std::vector<float> got(q.size());
  cuda::check(cudaMemcpyAsync(got.data(), out.data(), got.size() * sizeof(float), cudaMemcpyDeviceToHost, stream.get()),
              "cudaMemcpyAsync");
  cuda::check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < kQWidth; ++c) {
      const size_t i = static_cast<size_t>(t * kQWidth + c);
      ASSERT_NEAR(got[i], want[i], 1e-4f) << "token " << t << " column " << c;
    }
}

}  // namespace
}  // namespace moe::testing
