// Throughput with routed-experts capture on (server flag on, every request asking, SGLang's default
// int32 base64 encoding) over capture off (no flag, no capturer), both measured in one process run,
// rounds alternating off/on/on/off, at concurrency 1 and 32, through the in-process serving
// pipeline on the benchmark model (bench/configs/qwen3-moe-small.json: $MOE_BENCH_MODEL, or a
// 4-layer copy written for the run). The counter `on_over_off` is the ratio (target >= 0.99).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <random>
#include <vector>

#include "engine/engine_core.h"
#include "support/bench_checkpoint.h"
#include "tokenizer/tokenizer.h"

namespace moe {
namespace {

constexpr int kPromptTokens = 64;
constexpr int kNewTokens = 32;

std::unique_ptr<EngineCore> make_pipeline(const std::string& dir, bool capture) {
  EngineCoreOptions options;
  options.settings.max_total_tokens = 8192;
  options.settings.max_running_requests = 64;
  options.settings.chunked_prefill_size = 8192;
  options.settings.context_length = 32768;
  options.settings.enable_return_routed_experts = capture;
  options.seed_source = 1;
  return std::make_unique<EngineCore>(Model::load(dir), tokenizer::Tokenizer::load(MOE_TOKENIZER_DIR), options);
}

// Round `round`'s requests: fresh random prompts (no prefix-cache hits across rounds), greedy,
// exactly kNewTokens each; with capture, each asks for its rows as SGLang clients do.
std::vector<msg::GenerateRequest> round_requests(int round, int count, bool capture) {
  std::mt19937 rng(static_cast<uint32_t>(round));
  std::uniform_int_distribution<int32_t> token(0, 150000);
  std::vector<msg::GenerateRequest> requests(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    msg::GenerateRequest& r = requests[i];
    r.rid = std::string("r").append(std::to_string(round)).append("-").append(std::to_string(i));
    r.input_ids.emplace();
    for (int t = 0; t < kPromptTokens; ++t) r.input_ids->push_back(token(rng));
    r.sampling.temperature = 0.0f;
    r.sampling.max_new_tokens = kNewTokens;
    r.sampling.ignore_eos = true;
    r.routing.return_routed_experts = capture;
  }
  return requests;
}

// Both pipelines over one checkpoint, each warmed by a round of its own before anything is timed:
// the first pass over a memory-mapped checkpoint pays its page faults, which would otherwise be
// charged to whichever configuration happened to run first.
struct Pipelines {
  std::unique_ptr<EngineCore> off, on;
};
Pipelines& pipelines() {
  static Pipelines both = [] {
    const std::string& dir = bench::benchmark_checkpoint(4);
    Pipelines made{make_pipeline(dir, false), make_pipeline(dir, true)};
    made.off->run(round_requests(-1, 2, false));
    made.on->run(round_requests(-2, 2, true));
    return made;
  }();
  return both;
}

// CPU seconds used by the whole process (every thread: the copy thread's work counts).
double process_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// Wall and process-CPU seconds of one round.
struct RoundTime {
  double wall = 0, cpu = 0;
  RoundTime& operator+=(const RoundTime& other) {
    wall += other.wall;
    cpu += other.cpu;
    return *this;
  }
};

// Runs one round at `concurrency` (1: one request after another; else all together).
RoundTime run_round(EngineCore& pipeline, const std::vector<msg::GenerateRequest>& requests, int concurrency,
                    benchmark::State& state) {
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = process_cpu_seconds();
  size_t outputs = 0;
  for (size_t first = 0; first < requests.size(); first += static_cast<size_t>(concurrency)) {
    const auto last = requests.begin() + static_cast<std::ptrdiff_t>(std::min(requests.size(), first + concurrency));
    outputs += pipeline.run({requests.begin() + static_cast<std::ptrdiff_t>(first), last}).size();
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  if (outputs != requests.size() || !pipeline.errors().empty()) state.SkipWithError("a request failed");
  return {took.count(), process_cpu_seconds() - cpu_start};
}

// range(0) = concurrency, range(1) = requests per round.
void BM_CaptureOnOverOff(benchmark::State& state) {
  const int concurrency = static_cast<int>(state.range(0));
  const int requests = static_cast<int>(state.range(1));
  Pipelines& both = pipelines();
  RoundTime off, on;
  std::vector<double> pair_ratios;
  int round = concurrency * 1000;
  for (auto _ : state) {
    ++round;
    // Off then on, on then off, ...: a drift in the machine's speed weighs on both alike.
    RoundTime round_off, round_on;
    if (round % 2 == 0) round_off = run_round(*both.off, round_requests(round, requests, false), concurrency, state);
    round_on = run_round(*both.on, round_requests(round, requests, true), concurrency, state);
    if (round % 2 == 1) round_off = run_round(*both.off, round_requests(round, requests, false), concurrency, state);
    off += round_off;
    on += round_on;
    pair_ratios.push_back(round_off.wall / round_on.wall);
  }
  // The median of the rounds' ratios: one round slowed by a neighbour on the machine does not move it.
  std::sort(pair_ratios.begin(), pair_ratios.end());
  const size_t mid = pair_ratios.size() / 2;
  state.counters["on_over_off_median"] =
      pair_ratios.size() % 2 ? pair_ratios[mid] : (pair_ratios[mid - 1] + pair_ratios[mid]) / 2;
  const double tokens = static_cast<double>(state.iterations()) * requests * kNewTokens;
  state.counters["off_tok/s"] = tokens / off.wall;
  state.counters["on_tok/s"] = tokens / on.wall;
  state.counters["on_over_off"] = off.wall / on.wall;
  // The same ratio in CPU time: what capture costs when the machine is shared and wall time is noise.
  state.counters["on_over_off_cpu"] = off.cpu / on.cpu;
  state.counters["host_cache_MiB"] = static_cast<double>(both.on->service().host_cache_bytes()) / (1 << 20);
}
// An even number of iterations, so off-first and on-first rounds balance.
BENCHMARK(BM_CaptureOnOverOff)->Args({1, 1})->Iterations(12)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK(BM_CaptureOnOverOff)->Args({32, 32})->Iterations(2)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
}  // namespace moe
