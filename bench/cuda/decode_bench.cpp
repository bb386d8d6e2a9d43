// The benchmark model on the GPU through ModelWorker::execute, a server's step (forward on the device,
// greedy picks made there and copied back): decode tokens/s at batch 1 to 128 and prefill tokens/s
// of a 512-token prompt, in float32 and in bf16 products (--kernel-dtype bf16), each beside its HBM
// bound (the step's bf16 weight bytes over the measured device copy bandwidth), decode at batch 32
// over 1 and 2 expert-parallel shards on the one GPU, and the cost of routing capture at batch 64,
// capture on and off alternated in one run. Skipped without a CUDA device. MOE_BENCH_MODEL names the
// checkpoint (made there when the directory has none yet); without it one is written to a temporary
// directory.
#include <benchmark/benchmark.h>

#include <chrono>

#include "cuda/device.h"
#include "cuda/gpu_workload.h"

namespace moe::bench {
namespace {

bool skip_without_device(benchmark::State& state) {
  if (cuda::device_count() > 0) return false;
  state.SkipWithError("no CUDA device");
  return true;
}

// tokens/s measured, and the HBM bound of the same step beside it.
void report(benchmark::State& state, GpuWorkload& workload, double tokens_per_step, double weight_bytes) {
  state.counters["tok/s"] = benchmark::Counter(tokens_per_step, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["hbm_bound_tok/s"] = tokens_per_step * workload.bandwidth() / weight_bytes;
  state.counters["weights_MB/step"] = weight_bytes / 1e6;
  state.counters["copy_GB/s"] = workload.bandwidth() / 1e9;
  state.SetLabel(workload.device_name());
}

// The workload of range `index`: 0 float32, 1 bf16 products (--kernel-dtype bf16); over ep_size
// expert-parallel shards.
GpuWorkload& workload_of(const benchmark::State& state, int index, int ep_size = 1) {
  return GpuWorkload::get(state.range(index) ? KernelDType::BF16 : KernelDType::F32, ep_size);
}

// Decode steps of `sequences`, each adding one token at context 128, capture off. Beside tokens/s,
// the model's forward alone: picks_forward_ms ending in the device's greedy picks (as the step does;
// step - this = the worker's host part) and logits_forward_ms ending with the logits on the host
// (what a sampled step needs).
void measure_decode(benchmark::State& state, GpuWorkload& workload, int sequences) {
  msg::WorkerBatch batch = workload.decode_batch(sequences);
  const double bytes = workload.weight_bytes(batch);
  workload.execute(batch, false);  // untimed: cuBLAS picks its kernels for these shapes
  for (auto _ : state) workload.execute(batch, false);
  report(state, workload, static_cast<double>(sequences), bytes);
  // The forward's share of a step; the rest is the worker's batch conversion and answer, on the host.
  constexpr int kForwards = 50;
  for (bool greedy_picks : {true, false}) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kForwards; ++i) workload.forward_only(batch, greedy_picks);
    state.counters[greedy_picks ? "picks_forward_ms" : "logits_forward_ms"] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / kForwards;
  }
}

// range(0) = sequences in the batch; range(1) = bf16 products (1) or float32 (0), the rows of one
// batch size side by side.
void BM_GpuDecode(benchmark::State& state) {
  if (skip_without_device(state)) return;
  measure_decode(state, workload_of(state, 1), static_cast<int>(state.range(0)));
}
BENCHMARK(BM_GpuDecode)
    ->ArgNames({"batch", "bf16"})
    ->ArgsProduct({{1, 8, 32, 128}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Batch 32 over range(1) expert-parallel shards on this one GPU (--ep-size), range(0) as
// BM_GpuDecode's range(1): ep 1 beside ep 2 is what sharding costs when the shards take turns.
void BM_GpuDecodeExpertShards(benchmark::State& state) {
  if (skip_without_device(state)) return;
  constexpr int kBatch = 32;
  measure_decode(state, workload_of(state, 0, static_cast<int>(state.range(1))), kBatch);
}
BENCHMARK(BM_GpuDecodeExpertShards)
    ->ArgNames({"bf16", "ep"})
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// One 512-token prompt in one step, range(0) as BM_GpuDecode's range(1). Capture off.
void BM_GpuPrefill(benchmark::State& state) {
  if (skip_without_device(state)) return;
  GpuWorkload& workload = workload_of(state, 0);
  msg::WorkerBatch batch = workload.prefill_batch();
  const double bytes = workload.weight_bytes(batch);
  workload.execute(batch, false);
  for (auto _ : state) workload.execute(batch, false);
  report(state, workload, GpuWorkload::kPromptTokens, bytes);
}
BENCHMARK(BM_GpuPrefill)->ArgName("bf16")->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// Decode at batch 64 with every step captured (as when every request asks) against no capture, in
// alternating blocks of 25 steps (off on on off, repeated), so drift hits both alike. on/off is the
// ratio of their tokens/s.
void BM_GpuCaptureOnOverOff(benchmark::State& state) {
  if (skip_without_device(state)) return;
  constexpr int kBatch = 64, kRounds = 8, kBlock = 25;
  GpuWorkload& workload = GpuWorkload::get();
  msg::WorkerBatch batch = workload.decode_batch(kBatch);
  workload.execute(batch, false);
  workload.execute(batch, true);
  double seconds[2] = {0.0, 0.0};  // [capture off, on]
  const auto block = [&](bool capture) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kBlock; ++i) workload.execute(batch, capture);
    seconds[capture] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  for (auto _ : state)
    for (int round = 0; round < kRounds; ++round)
      for (bool capture : {false, true, true, false}) block(capture);
  const double steps = double{kRounds} * 2 * kBlock * static_cast<double>(state.iterations());
  const double off = kBatch * steps / seconds[0], on = kBatch * steps / seconds[1];
  state.counters["off_tok/s"] = off;
  state.counters["on_tok/s"] = on;
  state.counters["on/off"] = on / off;
  state.SetLabel(workload.device_name());
}
BENCHMARK(BM_GpuCaptureOnOverOff)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace moe::bench
