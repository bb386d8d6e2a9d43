// What capture adds to one forward step, without the model: the MoE layers' writes into the device
// buffer, the asynchronous copy to host memory and its hand-over, for the benchmark model's shape
// (qwen3-moe-small: 12 MoE layers, top-8). Compared with a step's forward time this bounds the
// throughput cost of capture independently of machine noise.
#include <benchmark/benchmark.h>

#include <vector>

#include "capture/routed_experts_capturer.h"
#include "capture/thread_copy_engine.h"

namespace moe {
namespace {

constexpr int kLayers = 12, kTopK = 8;

// range(0) = tokens in the step.
void BM_CapturerStep(benchmark::State& state) {
  const int64_t tokens = state.range(0);
  RoutedExpertsCapturer capturer(std::make_unique<ThreadCopyEngine>(RoutingBufferShape{kLayers, 8192, kTopK, true}));
  const std::vector<int32_t> ids(static_cast<size_t>(tokens) * kTopK, 5);
  const std::vector<float> weights(ids.size(), 0.125f);
  uint64_t step = 0;
  size_t staged_rows = 0;
  for (auto _ : state) {
    capturer.begin_step(++step, tokens);
    for (int layer = 0; layer < kLayers; ++layer) capturer.on_routing(layer, tokens, kTopK, ids.data(), weights.data());
    capturer.end_step();
    for (const StagedRouting& staged : capturer.take_ready()) staged_rows += static_cast<size_t>(staged.num_tokens);
  }
  for (const StagedRouting& staged : capturer.drain()) staged_rows += static_cast<size_t>(staged.num_tokens);
  if (staged_rows != static_cast<size_t>(tokens) * step) state.SkipWithError("a step's rows were lost");
  state.counters["rows/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CapturerStep)->Arg(1)->Arg(32)->Arg(2048)->UseRealTime();

}  // namespace
}  // namespace moe
