// Eigen float32 GEMM on the benchmark model's shapes, y[T, N] = x[T, K] · W[N, K]ᵀ: the compute
// ceiling of prefill. With threads > 1 the N output columns are split across threads, the way a
// parallel kernel would share them.
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <thread>
#include <vector>

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// args: T (tokens), N (output features), K (input features), threads.
void BM_EigenGemm(benchmark::State& state) {
  const int64_t T = state.range(0), N = state.range(1), K = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  const RowMatrix x = RowMatrix::Random(T, K), w = RowMatrix::Random(N, K);
  RowMatrix y(T, N);
  for (auto _ : state) {
    std::vector<std::thread> workers;
    auto share = [&](int t) {
      const int64_t begin = N * t / threads, end = N * (t + 1) / threads;
      y.middleCols(begin, end - begin).noalias() = x * w.middleRows(begin, end - begin).transpose();
    };
    for (int t = 1; t < threads; ++t) workers.emplace_back(share, t);
    share(0);
    for (std::thread& worker : workers) worker.join();
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(T * N * K) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

// q/o projections (1024 -> 1024) and k/v (1024 -> 256) over a 512-token prefill; one expert's
// gate/up (1024 -> 512) and down (512 -> 1024) over the 64 tokens it gets on average at top-8 of 64.
BENCHMARK(BM_EigenGemm)
    ->ArgNames({"T", "N", "K", "threads"})
    ->Args({512, 1024, 1024, 1})->Args({512, 1024, 1024, 2})
    ->Args({512, 256, 1024, 1})
    ->Args({64, 512, 1024, 1})->Args({64, 512, 1024, 2})
    ->Args({64, 1024, 512, 1})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
