// The MoE layer at a realistic shape (hidden 1024, 64 experts, top-8, expert width 256, bf16 weights):
// the router, each expert-parallel op, and both runner backends, for T = 1, 32 and 512 tokens.
#include <benchmark/benchmark.h>

#include "../../tests/moe/moe_fixtures.h"
#include "moe/expert_placement.h"
#include "moe/moe_ops.h"
#include "moe/moe_runner.h"

namespace moe {
namespace {

constexpr int kExperts = 64;
constexpr int kTopK = 8;
constexpr int64_t kHidden = 1024;
constexpr int64_t kWidth = 256;

// Built once: 64 experts of bf16 weights are ~100 MB.
const testing::RandomExperts& experts() {
  static const testing::RandomExperts instance = testing::random_experts(kExperts, kHidden, kWidth, DType::BF16, 1);
  return instance;
}

// A batch of T tokens: activations and a uniform random routing.
struct Batch {
  explicit Batch(int64_t num_tokens)
      : hidden(testing::random_floats(num_tokens * kHidden, 2)),
        routing(testing::random_routing(num_tokens, kExperts, kTopK, 3)),
        mapping(ExpertPlacement::uniform(kExperts, 1).device_expert_mapping[0]) {
    prepare_moe_routing_tensors(routing.ids.data(), routing.weights.data(), num_tokens, kTopK, mapping, kExperts,
                                tensors);
  }
  std::vector<float> hidden;
  Routing routing;
  std::vector<int32_t> mapping;
  MoeRoutingTensors tensors;
};

// Runs `body` once untimed (it sizes the buffers every later call reuses; at T = 512 that first
// touch is slow enough to be the only iteration measured), then times it, reporting tokens/s.
template <class Body>
void measure(benchmark::State& state, Body&& body) {
  body();
  for (auto _ : state) body();
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(state.iterations() * state.range(0)),
                                                  benchmark::Counter::kIsRate);
}

void BM_RouteTokens(benchmark::State& state) {
  const int64_t T = state.range(0);
  const auto router = testing::random_weight(kExperts, kHidden, DType::BF16, 4);
  const Batch batch(T);
  Routing routing;
  measure(state, [&] {
    route_tokens(batch.hidden.data(), T, router->view, kTopK, true, routing);
    benchmark::DoNotOptimize(routing.ids.data());
  });
}

void BM_PrepareMoeRoutingTensors(benchmark::State& state) {
  const int64_t T = state.range(0);
  Batch batch(T);
  measure(state, [&] {
    prepare_moe_routing_tensors(batch.routing.ids.data(), batch.routing.weights.data(), T, kTopK, batch.mapping,
                                kExperts, batch.tensors);
    benchmark::DoNotOptimize(batch.tensors.routed_tokens.data());
  });
}

void BM_ProjectionToIntermediate(benchmark::State& state) {
  const int64_t T = state.range(0);
  const Batch batch(T);
  const std::vector<WeightView>& gate = experts().weights.gate;  // D = 1: every expert is local
  std::vector<float> out;
  measure(state, [&] {
    projection_to_intermediate(batch.hidden.data(), T, batch.tensors.routed_tokens, batch.tensors.num_routed_tokens,
                               gate, out);
    benchmark::DoNotOptimize(out.data());
  });
}

void BM_ProjectionToOutput(benchmark::State& state) {
  const int64_t T = state.range(0);
  const Batch batch(T);
  const std::vector<WeightView>& down = experts().weights.down;  // D = 1: every expert is local
  std::vector<float> act;
  projection_to_intermediate(batch.hidden.data(), T, batch.tensors.routed_tokens, batch.tensors.num_routed_tokens,
                             experts().weights.gate, act);
  std::vector<float> out(static_cast<size_t>(T * kHidden));
  measure(state, [&] {
    projection_to_output(act.data(), batch.tensors.token_idx_map, batch.tensors.routed_tokens,
                         batch.tensors.num_routed_tokens, batch.tensors.routed_token_weights, down, T, kTopK,
                         out.data());
    benchmark::DoNotOptimize(out.data());
  });
}

// A whole routed-expert layer through one backend; range(1) is the expert-parallel size D.
void BM_MoeRunner(benchmark::State& state, MoeBackend backend) {
  const int64_t T = state.range(0);
  const Batch batch(T);
  const auto runner = MoeRunner::create(backend, ExpertPlacement::uniform(kExperts, static_cast<int>(state.range(1))));
  std::vector<float> out(static_cast<size_t>(T * kHidden));
  measure(state, [&] {
    runner->run(batch.hidden.data(), T, batch.routing, experts().weights, out.data());
    benchmark::DoNotOptimize(out.data());
  });
}

void token_counts(benchmark::internal::Benchmark* b) {
  b->Arg(1)->Arg(32)->Arg(512)->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_RouteTokens)->Apply(token_counts);
BENCHMARK(BM_PrepareMoeRoutingTensors)->Apply(token_counts);
BENCHMARK(BM_ProjectionToIntermediate)->Apply(token_counts);
BENCHMARK(BM_ProjectionToOutput)->Apply(token_counts);
BENCHMARK_CAPTURE(BM_MoeRunner, reference, MoeBackend::Reference)
    ->ArgsProduct({{1, 32, 512}, {1}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MoeRunner, grouped, MoeBackend::Grouped)
    ->ArgsProduct({{1, 32, 512}, {1, 8}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace moe
