// The scheduler's host cache of routing rows for the benchmark model's shape (qwen3-moe-small: 12
// MoE layers, top-8): bytes it holds per KV slot (reported as a counter) and the cost of storing a
// step's rows by slot and gathering a request's rows back.
#include <benchmark/benchmark.h>

#include <numeric>
#include <vector>

#include "capture/routing_host_cache.h"

namespace moe {
namespace {

constexpr int kLayers = 12, kTopK = 8;
constexpr int64_t kSlots = 65536;

// range(0) = tokens in the step; range(1) = 1 to keep router weights too (the server does).
void BM_HostCacheStoreAndGather(benchmark::State& state) {
  const int64_t tokens = state.range(0);
  const bool with_weights = state.range(1) != 0;
  RoutingHostCache cache(kSlots, kLayers, kTopK, with_weights);
  StagedRouting staged{1, tokens, kLayers, kTopK, std::vector<int16_t>(static_cast<size_t>(tokens) * kLayers * kTopK, 3),
                       with_weights ? std::vector<float>(static_cast<size_t>(tokens) * kLayers * kTopK, 0.125f)
                                    : std::vector<float>{}};
  std::vector<int32_t> slots(static_cast<size_t>(tokens));
  // Scattered slots, as a long-running pool hands them out.
  for (int64_t t = 0; t < tokens; ++t) slots[t] = static_cast<int32_t>((t * 7919) % kSlots);
  std::vector<int16_t> ids;
  std::vector<float> weights;
  for (auto _ : state) {
    cache.store(staged, slots);
    ids.clear();
    weights.clear();
    cache.gather(slots.data(), tokens, ids, with_weights ? &weights : nullptr);
    benchmark::DoNotOptimize(ids.data());
  }
  state.counters["host_cache_bytes_per_token"] = static_cast<double>(cache.bytes_per_token());
  state.counters["rows/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_HostCacheStoreAndGather)->ArgsProduct({{1, 32, 4096}, {0, 1}});

}  // namespace
}  // namespace moe
