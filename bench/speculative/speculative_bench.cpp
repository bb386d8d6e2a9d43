// Speculative decoding (NGRAM drafts, STANDALONE draft models, tree verify) on the benchmark model
// through the engine step (EngineCore), greedy: output tokens/s with speculation and without, at
// batch 1 and 8, on a repetitive workload (each prompt is 16 tokens said four times) and a random
// one; the acceptance; and --max-tree-experts, with the bytes of expert weights a verify pass reads
// (distinct experts per MoE layer x layers x one expert's gate, up and down matrices).
// Arguments: spec (0 off, 1 NGRAM, 2 STANDALONE with the target as its own draft: the acceptance
// ceiling, 3 STANDALONE with $MOE_BENCH_DRAFT_MODEL as draft), batch, workload (0 random,
// 1 repetitive), max_tree_experts. STANDALONE drafts chains: 4 steps, top-k 1, 5 tokens.
// Set MOE_BENCH_MODEL to the checkpoint moe-make-checkpoint wrote (bench/RESULTS.md), and
// MOE_BENCH_DRAFT_MODEL to a draft: e.g. the target's first layers (moe-make-checkpoint
// --truncate-from), or where it holds no checkpoint yet, the benchmark config cut to 2 layers with
// random weights is written there. MOE_BENCH_DRAFT_QUANTIZATION (unquant, int8 or int4; unset: as
// the target, which is not quantized here) is the drafts' --speculative-draft-model-quantization.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <vector>

#include "engine/engine_core.h"
#include "model/random_checkpoint.h"
#include "support/bench_checkpoint.h"
#include "tokenizer/tokenizer.h"

namespace moe {
namespace {

constexpr int kPromptTokens = 64;
constexpr int kNewTokens = 64;

// The one loaded benchmark model, lent to every engine (loading and tiling it takes seconds).
Model& shared_model() {
  static std::unique_ptr<Model> model = Model::load(bench::benchmark_checkpoint());
  return *model;
}

// An engine's model that forwards to the shared one.
class BorrowedModel final : public Model {
 public:
  explicit BorrowedModel(Model& model) : model_(model) {}
  const ModelConfig& config() const override { return model_.config(); }
  KvCache make_kv_cache(int64_t num_slots) const override { return model_.make_kv_cache(num_slots); }
  void forward(const ForwardBatch& batch, KvCache& kv, std::vector<float>& logits, RoutingCapture* capture) override {
    model_.forward(batch, kv, logits, capture);
  }

 private:
  Model& model_;
};

enum class Speculation { Off = 0, Ngram = 1, StandaloneSelf = 2, StandaloneSmall = 3 };

// The 2-layer draft: $MOE_BENCH_DRAFT_MODEL (written there when it holds no checkpoint yet), or the
// benchmark support's temporary truncated copy.
std::string small_draft() {
  const char* dir = std::getenv("MOE_BENCH_DRAFT_MODEL");
  if (dir == nullptr) return bench::benchmark_checkpoint(2);
  if (!std::filesystem::exists(std::filesystem::path(dir) / "config.json"))
    write_random_checkpoint(bench::benchmark_config(2), dir, RandomCheckpointOptions{});
  return dir;
}

std::unique_ptr<EngineCore> make_engine(Speculation speculation, int max_tree_experts) {
  EngineCoreOptions options;
  options.settings.max_total_tokens = 8192;
  options.settings.max_running_requests = 64;
  options.settings.context_length = 32768;
  options.settings.disable_radix_cache = true;  // every round prefills its prompts alike
  if (speculation == Speculation::Ngram) {
    options.settings.speculative_algorithm = "NGRAM";
    options.settings.speculative_num_steps = 4;
    options.settings.speculative_eagle_topk = 2;
    options.settings.speculative_num_draft_tokens = 8;
    options.settings.max_tree_experts = max_tree_experts;
  }
  if (speculation == Speculation::StandaloneSelf || speculation == Speculation::StandaloneSmall) {
    options.settings.speculative_algorithm = "STANDALONE";
    options.settings.speculative_draft_model_path =
        speculation == Speculation::StandaloneSelf ? bench::benchmark_checkpoint() : small_draft();
    const char* quantization = std::getenv("MOE_BENCH_DRAFT_QUANTIZATION");
    options.settings.speculative_draft_model_quantization = quantization ? quantization : "";
    options.settings.speculative_num_steps = 4;
    options.settings.speculative_eagle_topk = 1;
    options.settings.speculative_num_draft_tokens = 5;
    options.settings.max_tree_experts = max_tree_experts;
  }
  options.seed_source = 1;
  return std::make_unique<EngineCore>(std::make_unique<BorrowedModel>(shared_model()),
                                      tokenizer::Tokenizer::load(MOE_TOKENIZER_DIR), options);
}

std::vector<msg::GenerateRequest> round_requests(int batch, bool repetitive, int round) {
  std::mt19937 rng(static_cast<uint32_t>(1000 * round + batch));
  std::uniform_int_distribution<int32_t> token(0, 150000);
  std::vector<msg::GenerateRequest> requests(static_cast<size_t>(batch));
  for (int i = 0; i < batch; ++i) {
    msg::GenerateRequest& r = requests[i];
    r.rid = "r" + std::to_string(round) + "-" + std::to_string(i);
    std::vector<int32_t> prompt;
    const int distinct = repetitive ? kPromptTokens / 4 : kPromptTokens;
    for (int t = 0; t < distinct; ++t) prompt.push_back(token(rng));
    while (static_cast<int>(prompt.size()) < kPromptTokens) prompt.push_back(prompt[prompt.size() - distinct]);
    r.input_ids = prompt;
    r.sampling.temperature = 0.0f;
    r.sampling.max_new_tokens = kNewTokens;
    r.sampling.ignore_eos = true;
  }
  return requests;
}

void BM_Generate(benchmark::State& state) {
  const auto speculation = static_cast<Speculation>(state.range(0));
  const int batch = static_cast<int>(state.range(1));
  const bool repetitive = state.range(2) != 0;
  const int max_tree_experts = static_cast<int>(state.range(3));
  std::unique_ptr<EngineCore> engine = make_engine(speculation, max_tree_experts);
  engine->run(round_requests(batch, repetitive, -1));  // untimed: faults in pages and buffers
  const SchedulerStats before = engine->service().stats();
  int round = 0;
  int64_t tokens = 0;
  double seconds = 0.0;
  for (auto _ : state) {
    const auto requests = round_requests(batch, repetitive, round++);
    const auto start = std::chrono::steady_clock::now();
    for (const msg::TextOutput& out : engine->run(requests)) tokens += static_cast<int64_t>(out.output_ids.size());
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const SchedulerStats after = engine->service().stats();
  const ModelConfig& config = engine->config();
  const double verifies = static_cast<double>(after.verify_passes - before.verify_passes);
  const double drafts = static_cast<double>(after.draft_tokens - before.draft_tokens);
  const double accepted = static_cast<double>(after.accepted_drafts - before.accepted_drafts);
  const double layer_passes = static_cast<double>(after.verify_layer_passes - before.verify_layer_passes);
  const double experts = static_cast<double>(after.verify_distinct_experts - before.verify_distinct_experts);
  const double expert_bytes = 3.0 * static_cast<double>(config.moe_intermediate_size) *
                              static_cast<double>(config.hidden_size) * 2.0;  // bf16 gate, up, down
  state.counters["out_tok/s"] = static_cast<double>(tokens) / seconds;
  state.counters["accept_len"] = verifies > 0 ? 1.0 + accepted / verifies : 0.0;
  state.counters["accept_rate"] = drafts > 0 ? accepted / drafts : 0.0;
  state.counters["verifies"] = verifies;
  state.counters["experts/layer/verify"] = layer_passes > 0 ? experts / layer_passes : 0.0;
  state.counters["expert_MB/verify"] =
      layer_passes > 0 ? experts / layer_passes * config.num_moe_layers() * expert_bytes / 1e6 : 0.0;
}

void Arguments(benchmark::internal::Benchmark* b) {
  for (int batch : {1, 8})
    for (int repetitive : {1, 0}) {
      for (int spec : {0, 1, 2, 3}) b->Args({spec, batch, repetitive, 0});
    }
  for (int batch : {1, 8})
    for (int limit : {8, 16, 32, 64}) b->Args({1, batch, 1, limit});
  for (int batch : {1, 8})
    for (int repetitive : {1, 0})
      for (int limit : {8, 16}) b->Args({3, batch, repetitive, limit});
}
BENCHMARK(BM_Generate)
    ->ArgNames({"spec", "batch", "repetitive", "max_tree_experts"})
    ->Apply(Arguments)
    ->Iterations(3)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace
}  // namespace moe
