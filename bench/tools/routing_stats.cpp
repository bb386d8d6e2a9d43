// moe-routing-stats: runs random prompts through a checkpoint and reports, per MoE layer, how the
// router spreads tokens over the experts — the check that a random benchmark model's routing is not
// degenerate (every expert used, no expert taking most tokens).
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <random>
#include <vector>

#include "command_line/command_line.h"
#include "model/model.h"

namespace po = boost::program_options;

namespace {

// Counts, per MoE layer, how many tokens chose each expert.
class ExpertCounter final : public moe::RoutingCapture {
 public:
  ExpertCounter(int num_layers, int num_experts)
      : counts_(static_cast<size_t>(num_layers), std::vector<int64_t>(static_cast<size_t>(num_experts))) {}
  void on_routing(int moe_layer, int64_t num_tokens, int top_k, const int32_t* ids, const float*) override {
    for (int64_t i = 0; i < num_tokens * top_k; ++i) ++counts_[moe_layer][ids[i]];
  }
  const std::vector<std::vector<int64_t>>& counts() const { return counts_; }

 private:
  std::vector<std::vector<int64_t>> counts_;
};

}  // namespace

int main(int argc, char** argv) {
  std::string model_path;
  int num_prompts = 0, prompt_length = 0;
  po::options_description desc("moe-routing-stats options");
  desc.add_options()("help,h", "show this help")
      ("model-path", po::value(&model_path)->required(), "checkpoint directory")
      ("prompts", po::value(&num_prompts)->default_value(8), "random prompts")
      ("prompt-length", po::value(&prompt_length)->default_value(128), "tokens per prompt");
  try {
    if (!moe::parse_command_line(argc, argv, desc)) return 0;
    auto model = moe::Model::load(model_path);
    const moe::ModelConfig& config = model->config();
    ExpertCounter counter(config.num_moe_layers(), config.num_experts);
    std::mt19937 rng(1);
    std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(config.vocab_size - 1));
    moe::KvCache kv = model->make_kv_cache(prompt_length);
    std::vector<float> logits;
    for (int p = 0; p < num_prompts; ++p) {
      std::vector<int32_t> ids(static_cast<size_t>(prompt_length)), slots(ids.size());
      for (int i = 0; i < prompt_length; ++i) {
        ids[i] = token(rng);
        slots[i] = i;
      }
      moe::ForwardBatch batch;
      batch.add_sequence(ids, slots, true);
      model->forward(batch, kv, logits, &counter);
    }
    const double tokens = static_cast<double>(num_prompts) * prompt_length;
    std::printf("%d tokens, %d experts, top-%d: uniform share of tokens per expert = %.1f%%\n",
                static_cast<int>(tokens), config.num_experts, config.num_experts_per_tok,
                100.0 * config.num_experts_per_tok / config.num_experts);
    std::printf("layer  experts_used  min_share  max_share\n");
    for (size_t l = 0; l < counter.counts().size(); ++l) {
      const auto& c = counter.counts()[l];
      const auto [lo, hi] = std::minmax_element(c.begin(), c.end());
      const auto used = std::count_if(c.begin(), c.end(), [](int64_t n) { return n > 0; });
      std::printf("%5zu  %12ld  %8.1f%%  %8.1f%%\n", l, static_cast<long>(used), 100.0 * *lo / tokens,
                  100.0 * *hi / tokens);
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "moe-routing-stats: " << e.what() << "\n";
    return 1;
  }
}
