// Greedy draws made on the device: the greedy_pick kernel against the host's sampler (first_max's
// id, sample_token's log-probability) on rows with ties, NaN and -infinity, and the CUDA model's
// forward_greedy against its own logits through prefill, uncaptured and graph-replayed decode steps.
// Skipped where no GPU is visible.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cuda/cuda_model.h"
#include "cuda/device_array.h"
#include "cuda/kernels.h"
#include "cuda/stream.h"
#include "kernels/first_max.h"
#include "sampling/sampler.h"
#include "support/golden_support.h"

namespace moe::testing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

SampledToken host_greedy(const float* row, int64_t vocab) {
  msg::TokenSampling sampling;
  sampling.temperature = 0.0f;
  sampling.return_logprob = true;
  return sample_token(row, vocab, sampling);
}

// Picks of `rows` rows of `vocab` logits made by the kernel.
GreedyPicks device_picks(const std::vector<float>& logits, int64_t rows, int64_t vocab) {
  cuda::Stream stream;
  const auto device = cuda::DeviceArray<float>::from_host(logits);
  cuda::DeviceArray<int32_t> ids(static_cast<size_t>(rows));
  cuda::DeviceArray<float> logprobs(static_cast<size_t>(rows));
  cuda::DeviceArray<unsigned char> scratch(cuda::greedy_pick_scratch_bytes(rows, vocab));
  cuda::greedy_pick(device.data(), rows, vocab, scratch.data(), ids.data(), logprobs.data(), stream.get());
  GreedyPicks picks{std::vector<int32_t>(rows), std::vector<float>(rows)};
  cuda::check(cudaMemcpyAsync(picks.ids.data(), ids.data(), rows * sizeof(int32_t), cudaMemcpyDeviceToHost,
                              stream.get()), "ids");
  cuda::check(cudaMemcpyAsync(picks.logprobs.data(), logprobs.data(), rows * sizeof(float), cudaMemcpyDeviceToHost,
                              stream.get()), "logprobs");
  cuda::check(cudaStreamSynchronize(stream.get()), "sync");
  return picks;
}

TEST(CudaGreedyPickTest, MatchesTheHostSamplerOnTiesNanAndInfinity) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  // One chunk of a block, several, and the benchmark model's vocabulary.
  for (int64_t vocab : {int64_t{1}, int64_t{37}, int64_t{1000}, int64_t{10000}, int64_t{151936}}) {
    SCOPED_TRACE("vocab " + std::to_string(vocab));
    std::vector<std::vector<float>> rows;
    const auto random_row = [&] {
      std::vector<float> row(static_cast<size_t>(vocab));
      for (float& x : row) x = normal(rng);
      return row;
    };
    rows.push_back(random_row());
    // The maximum several times over: the lowest id wins, wherever the copies fall among the threads.
    std::vector<float> ties = random_row();
    for (int64_t i = vocab / 3; i < vocab; i += vocab / 7 + 1) ties[i] = 100.0f;
    rows.push_back(ties);
    std::vector<float> last = random_row();  // the maximum in the very last entry
    last.back() = 50.0f;
    rows.push_back(last);
    std::vector<float> minus_inf(static_cast<size_t>(vocab), -kInf);  // nothing above -inf: id 0
    rows.push_back(minus_inf);
    std::vector<float> one_finite = minus_inf;  // a single finite logit: log-probability 0
    one_finite[vocab - 1] = -3.0f;
    rows.push_back(one_finite);
    if (vocab > 1) {
      std::vector<float> nan = random_row();  // NaN never picked, not even first
      nan[0] = std::nanf("");
      nan[vocab / 2] = std::nanf("");
      rows.push_back(nan);
    }

    std::vector<float> all;
    for (const auto& row : rows) all.insert(all.end(), row.begin(), row.end());
    const GreedyPicks picks = device_picks(all, static_cast<int64_t>(rows.size()), vocab);
    for (size_t r = 0; r < rows.size(); ++r) {
      SCOPED_TRACE("row " + std::to_string(r));
      const float* row = rows[r].data();
      EXPECT_EQ(picks.ids[r], first_max(row, vocab));
      const bool has_nan = std::any_of(rows[r].begin(), rows[r].end(), [](float x) { return std::isnan(x); });
      if (r == 3) {  // the row of -inf
        EXPECT_EQ(picks.logprobs[r], -kInf);
      } else if (!has_nan) {  // the host's sum over a NaN is NaN; the device leaves NaN out
        const SampledToken expected = host_greedy(row, vocab);
        EXPECT_EQ(picks.ids[r], expected.id);
        EXPECT_NEAR(picks.logprobs[r], expected.logprob, 1e-5f * std::max(1.0f, std::fabs(expected.logprob)));
      } else {
        EXPECT_TRUE(std::isfinite(picks.logprobs[r]));
        EXPECT_LE(picks.logprobs[r], 0.0f);
      }
    }
  }
}

// forward_greedy's picks are the greedy draws of forward's logits for the same batch, whether the
// step is a prefill, an uncaptured decode or a graph replay (a decode batch of 3, padded to 4).
TEST(CudaGreedyPickTest, ModelPicksAreTheGreedyDrawsOfItsLogits) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const Golden golden = load_golden("qwen3-moe-tiny");
  for (bool graphs : {false, true}) {
    SCOPED_TRACE(graphs ? "graphs" : "no graphs");
    ModelOptions options;
    options.device = Device::Cuda;
    options.cuda_graphs = graphs;
    cuda::CudaModel model(golden.model_dir, options);
    KvCache kv = model.make_kv_cache(1024);
    const int64_t vocab = model.config().vocab_size;
    std::vector<float> logits;
    GreedyPicks picks;
    // Runs `batch` both ways (the same K/V written twice) and compares.
    const auto check = [&](const ForwardBatch& batch) {
      model.forward(batch, kv, logits, nullptr);
      model.forward_greedy(batch, kv, picks, nullptr);
      const auto rows = static_cast<size_t>(batch.num_logit_rows());
      ASSERT_EQ(picks.ids.size(), rows);
      ASSERT_EQ(picks.logprobs.size(), rows);
      for (size_t r = 0; r < rows; ++r) {
        const SampledToken expected = host_greedy(logits.data() + r * vocab, vocab);
        EXPECT_EQ(picks.ids[r], expected.id) << "row " << r;
        EXPECT_NEAR(picks.logprobs[r], expected.logprob, 1e-4f) << "row " << r;
      }
    };
    std::vector<std::vector<int32_t>> tokens;
    const auto slots_of = [&](size_t s) {
      std::vector<int32_t> slots;
      for (size_t p = 0; p < tokens[s].size(); ++p) slots.push_back(static_cast<int32_t>(s * 300 + p));
      return slots;
    };
    ForwardBatch prefill;
    for (size_t s = 0; s < 3; ++s) {
      tokens.push_back(golden.cases.at(s).prompt_ids);
      prefill.add_sequence(tokens[s], slots_of(s), true);
    }
    check(prefill);
    for (int step = 0; step < 6; ++step) {
      SCOPED_TRACE("decode step " + std::to_string(step));
      ForwardBatch decode;
      for (size_t s = 0; s < 3; ++s) {
        tokens[s].push_back(static_cast<int32_t>(100 + 17 * step + s));
        decode.add_sequence({tokens[s].back()}, slots_of(s), true);
      }
      check(decode);
    }
    if (graphs) EXPECT_GE(model.graphs_captured(), 2);  // both keys: logits and picks
  }
}

}  // namespace
}  // namespace moe::testing
