// One decode step (and one prefill) of the whole benchmark model (bench/configs/qwen3-moe-small.json:
// Qwen3-MoE, hidden 1024, 12 layers, 64 experts, top-8, expert width 512, vocab 151936, bf16).
// Set MOE_BENCH_MODEL to a checkpoint made by moe-make-checkpoint to skip writing one per run, and
// MOE_BENCH_QUANTIZATION to int8 or int4 to run the model quantized at load (--quantization).
// Each benchmark runs with float32 products (kernel:0) and bf16 products (kernel:1, --kernel-dtype
// bf16), or with MOE_BENCH_QUANTIZATION integer products (kernel:2, --kernel-dtype int8) instead of
// bf16: two models loaded side by side in the one process; --benchmark_enable_random_interleaving
// alternates their repetitions.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <initializer_list>
#include <memory>

#include "model/model.h"
#include "support/bench_checkpoint.h"

namespace moe {
namespace {

constexpr int kContext = 128;  // tokens already in each sequence's KV before the measured step

ForwardBatch make_batch(int sequences, int new_tokens);

Quantization bench_quantization() {
  const char* quantization = std::getenv("MOE_BENCH_QUANTIZATION");
  return parse_quantization(quantization ? quantization : "");
}

// Loaded once per kernel dtype (KernelDType's value), then warmed by a 512-token prefill: it routes
// to every expert, so every weight page of the memory-mapped checkpoint is faulted in before
// anything is timed.
Model& bench_model(int64_t kernel_dtype) {
  static std::unique_ptr<Model> models[3];
  std::unique_ptr<Model>& model = models[kernel_dtype];
  if (!model) {
    ModelOptions options;
    options.quantization = bench_quantization();
    options.kernel_dtype = static_cast<KernelDType>(kernel_dtype);
    model = Model::load(bench::benchmark_checkpoint(), options);
    KvCache kv = model->make_kv_cache(kContext + 512);
    std::vector<float> logits;
    model->forward(make_batch(1, 512), kv, logits);
  }
  return *model;
}

// A batch of `sequences` sequences, each adding `new_tokens` tokens after kContext cached ones.
ForwardBatch make_batch(int sequences, int new_tokens) {
  ForwardBatch batch;
  for (int s = 0; s < sequences; ++s) {
    std::vector<int32_t> slots(kContext + new_tokens), tokens(new_tokens);
    for (int i = 0; i < kContext + new_tokens; ++i) slots[i] = s * (kContext + new_tokens) + i;
    for (int i = 0; i < new_tokens; ++i) tokens[i] = (s * 7919 + i * 104729) % 151936;
    batch.add_sequence(tokens, slots, true);
  }
  return batch;
}

void BM_DecodeStep(benchmark::State& state) {
  const int sequences = static_cast<int>(state.range(0));
  Model& model = bench_model(state.range(1));
  KvCache kv = model.make_kv_cache(static_cast<int64_t>(sequences) * (kContext + 1));
  const ForwardBatch batch = make_batch(sequences, 1);
  std::vector<float> logits;
  model.forward(batch, kv, logits);  // untimed: faults in the fresh KV cache and buffers
  for (auto _ : state) model.forward(batch, kv, logits);
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(sequences), benchmark::Counter::kIsIterationInvariantRate);
}
// Both kernel dtypes of each shape, float32 first.
void with_kernel_dtypes(benchmark::internal::Benchmark* bench, const char* name, std::initializer_list<int64_t> sizes) {
  bench->ArgNames({name, "kernel"});
  for (const int64_t size : sizes)
    for (const KernelDType kernel_dtype :
         {KernelDType::F32, bench_quantization() == Quantization::None ? KernelDType::BF16 : KernelDType::Int8})
      bench->Args({size, static_cast<int64_t>(kernel_dtype)});
}

BENCHMARK(BM_DecodeStep)->Apply([](auto* b) { with_kernel_dtypes(b, "batch", {1, 8, 32}); })->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();

void BM_Prefill(benchmark::State& state) {
  const int tokens = static_cast<int>(state.range(0));
  Model& model = bench_model(state.range(1));
  KvCache kv = model.make_kv_cache(kContext + tokens);
  const ForwardBatch batch = make_batch(1, tokens);
  std::vector<float> logits;
  for (auto _ : state) model.forward(batch, kv, logits);
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Prefill)->Apply([](auto* b) { with_kernel_dtypes(b, "tokens", {512}); })->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();

}  // namespace
}  // namespace moe
