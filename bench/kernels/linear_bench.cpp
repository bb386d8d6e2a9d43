// linear() on the benchmark model's projection shapes for 1 to 512 tokens: the half-precision
// GEMM (bf16 and f16 weights) and the quantized one (int8 with a scale per row, int4 with one per
// 128 columns) beside Eigen's float32 GEMM of the same shape, the compute ceiling; bf16 weights
// also with bf16 products (kernel:1, --kernel-dtype bf16: vdpbf16ps where the CPU has AVX-512 BF16,
// the float32 tiles on rounded activations under MOE_GEMM_ISA=avx512 or avx2), and quantized ones
// with integer products (kernel:2, --kernel-dtype int8), each beside kernel:0.
// Run with MOE_NUM_THREADS=1 for one core's figures; the GFLOP/s counter is per wall second. The
// weights of the 1024-row shapes (1–4 MB) stay in the last-level cache between iterations, so their
// 1-token rows overstate a memory-bound GEMV; the 65,536-row shape streams from memory.
#include <benchmark/benchmark.h>

#include <immintrin.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/linear.h"
#include "kernels/quantized_weight.h"
#include "kernels/weight_tiling.h"

namespace moe {
namespace {

// Weights stored in every dtype, holding the same bf16-representable values; the half-precision
// ones tiled, as a checkpoint's.
struct BenchWeights {
  std::vector<float> f32;
  weight_tiling::TiledWeight bf16, f16;
  quantized::QuantizedMatrix q8, q4;

  BenchWeights(int64_t rows, int64_t cols) {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<uint16_t> bf16_bits, f16_bits;
    for (int64_t i = 0; i < rows * cols; ++i) {
      bf16_bits.push_back(float_to_bf16(normal(rng)));
      f32.push_back(bf16_to_float(bf16_bits.back()));
      f16_bits.push_back(_cvtss_sh(f32.back(), 0));
    }
    bf16 = weight_tiling::tiled_copy(WeightView{bf16_bits.data(), DType::BF16, rows, cols});
    f16 = weight_tiling::tiled_copy(WeightView{f16_bits.data(), DType::F16, rows, cols});
    q8 = quantize(DType::Q8, 0, rows, cols);
    q4 = quantize(DType::Q4, 128, rows, cols);
  }
  quantized::QuantizedMatrix quantize(DType dtype, int64_t group, int64_t rows, int64_t cols) const {
    const int64_t stored = quantized::storage_group_size(group, cols, "bench");
    std::vector<int8_t> values(static_cast<size_t>(rows * cols));
    std::vector<float> scales(static_cast<size_t>(rows * quantized::num_groups(cols, stored)));
    quantized::quantize_symmetric(WeightView{f32.data(), DType::F32, rows, cols}, dtype, stored, values.data(),
                                  scales.data());
    return quantized::quantized_copy(dtype, values, rows, cols, std::move(scales), stored);
  }
  WeightView view(DType dtype, int64_t rows, int64_t cols) const {
    if (dtype == DType::BF16) return bf16.view;
    if (dtype == DType::F16) return f16.view;
    if (dtype == DType::Q8) return q8.view;
    if (dtype == DType::Q4) return q4.view;
    return WeightView{f32.data(), DType::F32, rows, cols};
  }
};

// One set of weights per shape, made on first use.
const BenchWeights& bench_weights(int64_t rows, int64_t cols) {
  static std::map<std::pair<int64_t, int64_t>, BenchWeights> made;
  return made.try_emplace({rows, cols}, rows, cols).first->second;
}

// args: tokens, rows (output features), cols (input features), dtype (DType's value), kernel
// (KernelDType's value).
void BM_Linear(benchmark::State& state) {
  const int64_t tokens = state.range(0), rows = state.range(1), cols = state.range(2);
  const DType dtype = static_cast<DType>(state.range(3));
  WeightView w = bench_weights(rows, cols).view(dtype, rows, cols);
  w.kernel_dtype = static_cast<KernelDType>(state.range(4));
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(tokens * cols)), y(static_cast<size_t>(tokens * rows));
  for (float& v : x) v = normal(rng);
  for (auto _ : state) {
    linear(x.data(), tokens, w, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(tokens * rows * cols) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(dtype_name(dtype)) + " " + kernel_dtype_name(w.kernel_dtype));
}

constexpr int64_t kStreamedRows = 65536;

void linear_shapes(benchmark::internal::Benchmark* bench) {
  bench->ArgNames({"T", "rows", "cols", "dtype", "kernel"});
  const auto f32 = static_cast<int64_t>(KernelDType::F32), bf16 = static_cast<int64_t>(KernelDType::BF16),
             int8 = static_cast<int64_t>(KernelDType::Int8);
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{1024, 1024}, {512, 1024}})
    for (const DType dtype : {DType::BF16, DType::F16, DType::Q8, DType::Q4, DType::F32})
      for (const int64_t tokens : {1, 2, 4, 8, 16, 32, 64, 128, 512}) {
        bench->Args({tokens, rows, cols, static_cast<int64_t>(dtype), f32});
        if (dtype == DType::BF16) bench->Args({tokens, rows, cols, static_cast<int64_t>(dtype), bf16});
        if (quantized::is_quantized(dtype)) bench->Args({tokens, rows, cols, static_cast<int64_t>(dtype), int8});
      }
  // 64 Mi weights (128 MB in bf16), past any last-level cache: few tokens stream their weights
  // from memory, as a decode step does.
  for (const DType dtype : {DType::BF16, DType::Q8, DType::Q4})
    for (const int64_t tokens : {1, 2, 4, 8}) {
      bench->Args({tokens, kStreamedRows, 1024, static_cast<int64_t>(dtype), f32});
      if (quantized::is_quantized(dtype)) bench->Args({tokens, kStreamedRows, 1024, static_cast<int64_t>(dtype), int8});
    }
}
BENCHMARK(BM_Linear)->Apply(linear_shapes)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime();

}  // namespace
}  // namespace moe
