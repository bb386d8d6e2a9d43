// STREAM-style memory bandwidth over buffers far larger than any cache: the ceiling of decode,
// which streams every active weight once per token. Copy and triad as STREAM counts them (no
// write-allocate traffic), plus a read-only sum, the access pattern of a bf16 GEMV.
#include <benchmark/benchmark.h>

#include <memory>
#include <thread>
#include <vector>

namespace {

constexpr int64_t kElements = int64_t{64} << 20;  // 256 MiB per float buffer

struct Buffers {
  std::unique_ptr<float[]> a{new float[kElements]}, b{new float[kElements]}, c{new float[kElements]};
  Buffers() {
    for (int64_t i = 0; i < kElements; ++i) a[i] = 1.0f, b[i] = 2.0f, c[i] = 0.5f;
  }
};

Buffers& buffers() {
  static Buffers instance;
  return instance;
}

// Runs body(begin, end) over [0, kElements) split across `threads` threads.
template <typename Body>
void split(int threads, Body body) {
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) workers.emplace_back(body, kElements * t / threads, kElements * (t + 1) / threads);
  body(0, kElements / threads);
  for (std::thread& w : workers) w.join();
}

void BM_Copy(benchmark::State& state) {
  Buffers& m = buffers();
  for (auto _ : state) {
    split(static_cast<int>(state.range(0)), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) m.a[i] = m.b[i];
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kElements * 2 * static_cast<int64_t>(sizeof(float)));
}

void BM_Triad(benchmark::State& state) {
  Buffers& m = buffers();
  const float scalar = 3.0f;
  for (auto _ : state) {
    split(static_cast<int>(state.range(0)), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) m.a[i] = m.b[i] + scalar * m.c[i];
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kElements * 3 * static_cast<int64_t>(sizeof(float)));
}

void BM_ReadSum(benchmark::State& state) {
  Buffers& m = buffers();
  for (auto _ : state) {
    std::vector<float> partial(static_cast<size_t>(state.range(0)));
    split(static_cast<int>(state.range(0)), [&](int64_t begin, int64_t end) {
      // Eight independent sums so the loop is bound by loads, not by the add latency.
      float s[8] = {};
      for (int64_t i = begin; i + 8 <= end; i += 8)
        for (int k = 0; k < 8; ++k) s[k] += m.b[i + k];
      partial[begin * static_cast<int64_t>(partial.size()) / kElements] = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
    });
    benchmark::DoNotOptimize(partial.data());
  }
  state.SetBytesProcessed(state.iterations() * kElements * static_cast<int64_t>(sizeof(float)));
}

BENCHMARK(BM_Copy)->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Triad)->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ReadSum)->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
