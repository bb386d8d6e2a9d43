#pragma once
// The benchmark model (bench/configs/qwen3-moe-small.json) as a checkpoint on disk, shared by the
// kernel and decode benchmarks: $MOE_BENCH_MODEL when set (made once with moe-make-checkpoint, or
// written there by the first benchmark that finds the directory without one, and kept), otherwise
// written into a temporary directory that is removed at exit.
#include <nlohmann/json.hpp>
#include <string>

namespace moe::bench {

// The benchmark model's config.json, with num_hidden_layers overridden when layers > 0.
nlohmann::json benchmark_config(int layers = 0);

// A checkpoint directory of the benchmark model. With layers > 0 and no $MOE_BENCH_MODEL, a
// truncated copy of that many layers is written (same shapes, fewer layers: quick to make).
const std::string& benchmark_checkpoint(int layers = 0);

}  // namespace moe::bench
