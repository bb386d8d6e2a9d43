// How fast routing leaves the engine: base64 of a packed array (target >= 1.5 GB/s on one core) and
// packing int16 rows into the requested dtype. Sizes are a request's worth of rows of the benchmark
// model (qwen3-moe-small: 12 MoE layers, top-8) at int32.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "capture/routing_encoding.h"
#include "moe/enum_names.h"

namespace moe {
namespace {

constexpr int kLayers = 12, kTopK = 8, kExperts = 64;

std::vector<int16_t> random_ids(size_t count) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> expert(0, kExperts - 1);
  std::vector<int16_t> ids(count);
  for (int16_t& id : ids) id = static_cast<int16_t>(expert(rng));
  return ids;
}

// range(0) = rows (tokens) of the request.
void BM_Base64Encode(benchmark::State& state) {
  const std::vector<int16_t> ids = random_ids(static_cast<size_t>(state.range(0)) * kLayers * kTopK);
  const std::string bytes = pack_routed_experts(ids.data(), ids.size(), RoutedExpertsDtype::Int32);
  std::string out;
  for (auto _ : state) {
    out.clear();
    base64_encode_append(bytes, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes.size()));
}
BENCHMARK(BM_Base64Encode)->Arg(64)->Arg(1024)->Arg(16384);

void BM_Base64Decode(benchmark::State& state) {
  const std::vector<int16_t> ids = random_ids(static_cast<size_t>(state.range(0)) * kLayers * kTopK);
  const std::string text = base64_encode(pack_routed_experts(ids.data(), ids.size(), RoutedExpertsDtype::Int32));
  for (auto _ : state) benchmark::DoNotOptimize(base64_decode(text));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_Base64Decode)->Arg(1024);

// range(0) = dtype (0 int32, 1 int16, 2 uint8); 1024 rows. Bytes processed = int16 ids read.
void BM_PackRoutedExperts(benchmark::State& state) {
  const RoutedExpertsDtype dtypes[] = {RoutedExpertsDtype::Int32, RoutedExpertsDtype::Int16, RoutedExpertsDtype::Uint8};
  const RoutedExpertsDtype dtype = dtypes[state.range(0)];
  const std::vector<int16_t> ids = random_ids(size_t{1024} * kLayers * kTopK);
  for (auto _ : state) benchmark::DoNotOptimize(pack_routed_experts(ids.data(), ids.size(), dtype));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(ids.size() * sizeof(int16_t)));
  state.SetLabel(std::string(msg::name_of(dtype)));
}
BENCHMARK(BM_PackRoutedExperts)->DenseRange(0, 2);

}  // namespace
}  // namespace moe
