// The float32 FMA peak of AVX2 and of AVX-512: independent multiply-add chains that never leave the
// registers, so nothing but the FMA units limits them. Eigen's GEMM (gemm_bench.cpp) is built for
// the x86-64-v3 baseline and cannot use AVX-512 even where the kernels do (half_gemm_avx512.cpp);
// this is the ceiling above both.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace {

// Enough independent chains to cover the FMA latency (4 cycles) on two FMA pipes, and few enough
// to leave room in AVX2's 16 registers for the two constants.
constexpr int kChains = 12;
constexpr int64_t kRounds = 4'000'000;

// Returns the FLOPs done: kRounds × kChains FMAs of 8 lanes.
double avx2_chains() {
  __m256 acc[kChains];
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f);
  for (__m256& v : acc) v = b;
  for (int64_t i = 0; i < kRounds; ++i) {
#pragma GCC unroll 12  // every chain in its own register
    for (__m256& v : acc) v = _mm256_fmadd_ps(a, v, b);
  }
  __m256 total = acc[0];
  for (int k = 1; k < kChains; ++k) total = _mm256_add_ps(total, acc[k]);
  benchmark::DoNotOptimize(total);
  return 2.0 * 8 * kChains * static_cast<double>(kRounds);
}

__attribute__((target("avx512f"))) double avx512_chains() {
  __m512 acc[kChains];
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
  for (__m512& v : acc) v = b;
  for (int64_t i = 0; i < kRounds; ++i) {
#pragma GCC unroll 12
    for (__m512& v : acc) v = _mm512_fmadd_ps(a, v, b);
  }
  __m512 total = acc[0];
  for (int k = 1; k < kChains; ++k) total = _mm512_add_ps(total, acc[k]);
  benchmark::DoNotOptimize(total);
  return 2.0 * 16 * kChains * static_cast<double>(kRounds);
}

// args: vector width in bits (256 or 512), threads (each runs its own chains).
void BM_FmaPeak(benchmark::State& state) {
  const bool wide = state.range(0) == 512;
  const int threads = static_cast<int>(state.range(1));
  if (wide && !__builtin_cpu_supports("avx512f")) {
    state.SkipWithError("this CPU has no AVX-512");
    return;
  }
  double flops = 0.0;
  for (auto _ : state) {
    std::vector<std::thread> workers;
    for (int t = 1; t < threads; ++t) workers.emplace_back([wide] { wide ? avx512_chains() : avx2_chains(); });
    flops += (wide ? avx512_chains() : avx2_chains()) * threads;
    for (std::thread& worker : workers) worker.join();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FmaPeak)
    ->ArgNames({"bits", "threads"})
    ->Args({256, 1})->Args({256, 2})->Args({512, 1})->Args({512, 2})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
