// One decode step (and one prefill) of the whole model on a random checkpoint of realistic shape:
// Qwen3-MoE, hidden 1024, 64 experts, top-8, expert width 256, 4 layers, vocab 151936, bf16.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "model/model.h"
#include "model/random_checkpoint.h"

namespace moe {
namespace {

constexpr int kContext = 128;  // tokens already in each sequence's KV before the measured step

nlohmann::json bench_config() {
  return {{"architectures", {"Qwen3MoeForCausalLM"}}, {"vocab_size", 151936}, {"hidden_size", 1024},
          {"intermediate_size", 3072}, {"moe_intermediate_size", 256}, {"num_hidden_layers", 4},
          {"num_attention_heads", 16}, {"num_key_value_heads", 4}, {"head_dim", 64}, {"num_experts", 64},
          {"num_experts_per_tok", 8}, {"norm_topk_prob", true}, {"rope_theta", 1000000.0},
          {"rms_norm_eps", 1e-6}, {"tie_word_embeddings", false}, {"max_position_embeddings", 32768}};
}

// The checkpoint is written once per process into a temporary directory and removed at exit.
Model& bench_model() {
  static const std::string dir = [] {
    auto path = std::filesystem::temp_directory_path() / ("moe_bench_model_" + std::to_string(::getpid()));
    write_random_checkpoint(bench_config(), path.string(), RandomCheckpointOptions{});
    std::atexit([] { std::filesystem::remove_all(std::filesystem::temp_directory_path() /
                                                 ("moe_bench_model_" + std::to_string(::getpid()))); });
    return path.string();
  }();
  static std::unique_ptr<Model> model = Model::load(dir);
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
  Model& model = bench_model();
  KvCache kv = model.make_kv_cache(static_cast<int64_t>(sequences) * (kContext + 1));
  const ForwardBatch batch = make_batch(sequences, 1);
  std::vector<float> logits;
  for (auto _ : state) model.forward(batch, kv, logits);
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(sequences), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_DecodeStep)->Arg(1)->Arg(32)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Prefill(benchmark::State& state) {
  const int tokens = static_cast<int>(state.range(0));
  Model& model = bench_model();
  KvCache kv = model.make_kv_cache(kContext + tokens);
  const ForwardBatch batch = make_batch(1, tokens);
  std::vector<float> logits;
  for (auto _ : state) model.forward(batch, kv, logits);
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Prefill)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace moe
