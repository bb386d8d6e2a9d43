// A model cut into pipeline stages computes what the whole model computes: the stages run one after
// the other in one thread, each over its own KV cache and with its own MoE layers' routing capture,
// give the whole model's logits and routing bit for bit, at prefill and at the decode step after it.
// Also: how layers are split between stages, and the bad splits refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "common/error.h"
#include "model/layer_range.h"
#include "model/model.h"
#include "support/golden_support.h"

namespace moe::testing {
namespace {

// Records the router's ids per MoE layer index of the model (or stage) that calls it.
class RecordingCapture : public RoutingCapture {
 public:
  void on_routing(int moe_layer, int64_t num_tokens, int top_k, const int32_t* ids, const float*) override {
    rows[moe_layer].assign(ids, ids + num_tokens * top_k);
  }
  std::map<int, std::vector<int32_t>> rows;
};

struct StepOutput {
  std::vector<float> logits;
  std::map<int, std::vector<int32_t>> routing;  // by the model's MoE layer index
};

// Every golden prompt as one sequence (slots laid out one prompt after another), or, with `decode`,
// one more token per sequence after its prompt.
ForwardBatch golden_batch(const Golden& golden, const std::vector<int32_t>& decode_tokens = {}) {
  ForwardBatch batch;
  int32_t next_slot = 0;
  for (size_t i = 0; i < golden.cases.size(); ++i) {
    const std::vector<int32_t>& prompt = golden.cases[i].prompt_ids;
    std::vector<int32_t> slots(prompt.size() + 1);
    for (int32_t& s : slots) s = next_slot++;
    if (decode_tokens.empty()) {
      slots.pop_back();
      batch.add_sequence(prompt, slots, true);
    } else {
      batch.add_sequence({decode_tokens[i]}, slots, true);
    }
  }
  return batch;
}

int64_t slots_needed(const Golden& golden) {
  int64_t n = 0;
  for (const GoldenCase& c : golden.cases) n += static_cast<int64_t>(c.prompt_ids.size()) + 1;
  return n;
}

class PipelineStages : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { golden_ = load_golden(GetParam()); }

  // Prefill then one decode step of every case through `stages` (one model = the whole model).
  std::vector<StepOutput> run(std::vector<std::unique_ptr<Model>>& stages) {
    std::vector<KvCache> caches;
    for (auto& stage : stages) caches.push_back(stage->make_kv_cache(slots_needed(golden_)));
    std::vector<StepOutput> outputs;
    std::vector<int32_t> decode;
    for (int step = 0; step < 2; ++step) {
      const ForwardBatch batch = golden_batch(golden_, decode);
      StepOutput out;
      std::vector<float> hidden(static_cast<size_t>(batch.num_tokens() * stages[0]->config().hidden_size));
      for (size_t s = 0; s < stages.size(); ++s) {
        RecordingCapture capture;
        const int first_moe = moe_layers_of(stages[s]->config().moe_layer_ids, stages[s]->layers()).begin;
        stages[s]->forward_stage(batch, caches[s], hidden.data(), out.logits, &capture);
        for (auto& [layer, ids] : capture.rows) out.routing[first_moe + layer] = ids;
      }
      const int64_t vocab = stages[0]->config().vocab_size;
      decode.clear();
      for (size_t i = 0; i < golden_.cases.size(); ++i) {
        const float* row = out.logits.data() + i * vocab;
        decode.push_back(static_cast<int32_t>(std::max_element(row, row + vocab) - row));
      }
      outputs.push_back(std::move(out));
    }
    return outputs;
  }

  std::vector<std::unique_ptr<Model>> load_stages(const std::vector<LayerRange>& ranges) {
    std::vector<std::unique_ptr<Model>> stages;
    for (const LayerRange& range : ranges) {
      ModelOptions options;
      options.layers = range;
      stages.push_back(Model::load(golden_.model_dir, options));
    }
    return stages;
  }

  Golden golden_;
};

TEST_P(PipelineStages, StagesInSequenceEqualTheWholeModel) {
  std::vector<std::unique_ptr<Model>> whole;
  whole.push_back(Model::load(golden_.model_dir));
  const std::vector<StepOutput> expected = run(whole);
  const int num_layers = whole[0]->config().num_hidden_layers;
  ASSERT_EQ(static_cast<int>(expected[0].routing.size()), golden_.num_moe_layers);
  for (int pp = 2; pp <= num_layers; ++pp) {
    SCOPED_TRACE("pp " + std::to_string(pp));
    std::vector<std::unique_ptr<Model>> stages = load_stages(split_layers(num_layers, pp));
    const std::vector<StepOutput> got = run(stages);
    for (size_t step = 0; step < got.size(); ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      EXPECT_EQ(got[step].logits, expected[step].logits);
      EXPECT_EQ(got[step].routing, expected[step].routing);
    }
  }
}

TEST_P(PipelineStages, EachStageHoldsOnlyItsLayersKv) {
  std::vector<std::unique_ptr<Model>> stages = load_stages({{0, 1}, {1, load_model_config(golden_.model_dir).num_hidden_layers}});
  const std::unique_ptr<Model> whole = Model::load(golden_.model_dir);
  const int64_t whole_bytes = whole->make_kv_cache(64).bytes();
  EXPECT_EQ(stages[0]->make_kv_cache(64).bytes() * whole->config().num_hidden_layers, whole_bytes);
  EXPECT_TRUE(stages[0]->is_first_stage());
  EXPECT_FALSE(stages[0]->is_last_stage());
  EXPECT_TRUE(stages[1]->is_last_stage());
  // A stage runs only as a stage: the whole-model entry point refuses it.
  std::vector<float> logits;
  KvCache kv = stages[0]->make_kv_cache(64);
  EXPECT_THROW(stages[0]->forward(golden_batch(golden_), kv, logits), Error);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PipelineStages, ::testing::ValuesIn(kGoldenFixtures), fixture_test_name);
// Stages of a model whose KV rows are latent attention's (latent then rotary key), not keys and values.
INSTANTIATE_TEST_SUITE_P(LatentAttention, PipelineStages, ::testing::Values("deepseek-v3-tiny"), fixture_test_name);

TEST(LayerSplit, BalancedByLayerCountEarlierStagesTakeTheRemainder) {
  EXPECT_EQ(split_layers(11, 3), (std::vector<LayerRange>{{0, 4}, {4, 8}, {8, 11}}));
  EXPECT_EQ(split_layers(4, 2), (std::vector<LayerRange>{{0, 2}, {2, 4}}));
  EXPECT_EQ(split_layers(3, 1), (std::vector<LayerRange>{{0, 3}}));
  EXPECT_EQ(split_layers(11, 3, {3, 4, 4}), (std::vector<LayerRange>{{0, 3}, {3, 7}, {7, 11}}));
}

TEST(LayerSplit, BadSplitsAreRefused) {
  EXPECT_THROW(split_layers(4, 5), Error);             // more stages than layers
  EXPECT_THROW(split_layers(4, 0), Error);
  EXPECT_THROW(split_layers(11, 3, {4, 4}), Error);    // two counts for three stages
  EXPECT_THROW(split_layers(11, 3, {4, 4, 4}), Error);  // sums to 12
  EXPECT_THROW(split_layers(4, 2, {4, 0}), Error);     // an empty stage
  EXPECT_EQ(parse_layer_split("4,4,3"), (std::vector<int>{4, 4, 3}));
  EXPECT_THROW(parse_layer_split("4,,3"), Error);
  EXPECT_THROW(parse_layer_split("4;4"), Error);
  EXPECT_THROW(parse_layer_split("-1,2"), Error);
  EXPECT_THROW(parse_layer_split(""), Error);
}

TEST(LayerSplit, MoeLayersOfAStage) {
  EXPECT_EQ(moe_layers_of({0, 1, 2, 3}, {1, 3}), (LayerRange{1, 3}));
  EXPECT_EQ(moe_layers_of({1, 3}, {0, 2}), (LayerRange{0, 1}));  // layers 0 dense, 1 MoE
  EXPECT_EQ(moe_layers_of({1, 3}, {2, 4}), (LayerRange{1, 2}));
}

}  // namespace
}  // namespace moe::testing
