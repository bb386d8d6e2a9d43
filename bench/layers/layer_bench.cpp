// Each layer kind of the benchmark model (qwen3-moe-small shapes, bf16 weights) on its own, for a
// decode step (1 or 32 tokens) and a prefill (512 tokens): attention, router, routed experts, lm_head.
// Loads a one-layer checkpoint (or $MOE_BENCH_MODEL's first layer).
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

#include "kernels/linear.h"
#include "model/architecture.h"
#include "model/attention_layer.h"
#include "model/kv_row_width.h"
#include "model/moe_block.h"
#include "model/safetensors.h"
#include "moe/moe_runner.h"
#include "support/bench_checkpoint.h"

namespace moe {
namespace {

constexpr int kDecodeContext = 512;  // tokens each decoding sequence already holds in its KV

// The first layer's weights of the benchmark checkpoint, loaded once.
struct LayerWeights {
  ModelConfig config;
  Checkpoint checkpoint;
  ModelPlan plan;
  AttentionLayer attention;
  WeightView router, lm_head;
  ExpertWeights experts;

  explicit LayerWeights(const std::string& dir)
      : config(load_model_config(dir)),
        checkpoint(Checkpoint::open(dir)),
        plan(model_plan(config)),
        attention(checkpoint, config, plan.layers[0].gqa, 0) {
    const MoeTensorNames& names = plan.layers[0].moe;
    const int64_t H = config.hidden_size;
    router = checkpoint.matrix(names.router, config.num_experts, H);
    lm_head = checkpoint.matrix(plan.lm_head, config.vocab_size, H);
    experts = load_routed_experts(checkpoint, config, names);
  }
};

LayerWeights& layer_weights() {
  // Loading tiles the bf16 weights into memory, so no page faults are left to time.
  static LayerWeights weights(bench::benchmark_checkpoint(1));
  return weights;
}

// Unit-variance activations, like the RMS-normalised input every layer sees.
std::vector<float> random_activations(int64_t count) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = normal(rng);
  return values;
}

// range(0) = tokens; range(1) = 1 for decode (that many sequences of one new token after
// kDecodeContext cached ones), 0 for one sequence's prefill of all of them.
ForwardBatch attention_batch(int tokens, bool decode) {
  ForwardBatch batch;
  const int sequences = decode ? tokens : 1, new_tokens = decode ? 1 : tokens;
  const int prefix = decode ? kDecodeContext : 0;
  for (int s = 0; s < sequences; ++s) {
    std::vector<int32_t> slots(prefix + new_tokens), ids(new_tokens, 1);
    for (int i = 0; i < prefix + new_tokens; ++i) slots[i] = s * (prefix + new_tokens) + i;
    batch.add_sequence(ids, slots, true);
  }
  return batch;
}

void set_token_rate(benchmark::State& state, int64_t tokens) {
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Attention(benchmark::State& state) {
  LayerWeights& w = layer_weights();
  const int tokens = static_cast<int>(state.range(0));
  const bool decode = state.range(1) == 1;
  const ForwardBatch batch = attention_batch(tokens, decode);
  int64_t slots = 0;
  for (const BatchSequence& seq : batch.sequences) slots += static_cast<int64_t>(seq.kv_slots.size());
  KvCache kv({kv_row_floats(w.config, AttentionKind::Gqa)}, slots);
  // Decode reads a full context: fill the cached keys and values once.
  const std::vector<float> filler = random_activations(kv.row_size(0));
  for (int64_t slot = 0; slot < kv.num_slots(); ++slot) std::copy(filler.begin(), filler.end(), kv.row(0, slot));
  const std::vector<float> x = random_activations(tokens * w.config.hidden_size);
  std::vector<float> out(x.size());
  for (auto _ : state) w.attention.forward(x.data(), batch, kv, out.data());
  set_token_rate(state, tokens);
}
BENCHMARK(BM_Attention)->ArgNames({"tokens", "decode"})->Args({1, 1})->Args({32, 1})->Args({512, 0})
    ->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();

void BM_Router(benchmark::State& state) {
  LayerWeights& w = layer_weights();
  const int tokens = static_cast<int>(state.range(0));
  const std::vector<float> x = random_activations(tokens * w.config.hidden_size);
  Routing routing;
  for (auto _ : state) route_tokens(x.data(), tokens, w.router, w.config.num_experts_per_tok, true, routing);
  set_token_rate(state, tokens);
}
BENCHMARK(BM_Router)->ArgName("tokens")->Arg(1)->Arg(32)->Arg(512)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime();

void BM_Experts(benchmark::State& state) {
  LayerWeights& w = layer_weights();
  const int tokens = static_cast<int>(state.range(0));
  const std::vector<float> x = random_activations(tokens * w.config.hidden_size);
  Routing routing;
  route_tokens(x.data(), tokens, w.router, w.config.num_experts_per_tok, true, routing);
  auto runner = MoeRunner::create(MoeBackend::Auto, ExpertPlacement::uniform(w.config.num_experts, 1));
  std::vector<float> out(x.size());
  for (auto _ : state) runner->run(x.data(), tokens, routing, w.experts, out.data());
  set_token_rate(state, tokens);
}
BENCHMARK(BM_Experts)->ArgName("tokens")->Arg(1)->Arg(32)->Arg(512)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();

void BM_LmHead(benchmark::State& state) {
  LayerWeights& w = layer_weights();
  const int tokens = static_cast<int>(state.range(0));
  const std::vector<float> x = random_activations(tokens * w.config.hidden_size);
  std::vector<float> logits(static_cast<size_t>(tokens * w.config.vocab_size));
  for (auto _ : state) linear(x.data(), tokens, w.lm_head, logits.data());
  set_token_rate(state, tokens);
  state.SetBytesProcessed(state.iterations() * w.lm_head.rows * w.lm_head.cols * 2);
}
BENCHMARK(BM_LmHead)->ArgName("tokens")->Arg(1)->Arg(32)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();

}  // namespace
}  // namespace moe
