// EAGLE3 speculative decoding (an EAGLE-3 head over three of the target's layers' hidden states)
// through the engine step over tests/data/qwen3-moe-tiny: greedy ids and the target's routing rows
// equal plain decoding's, alone, batched, in small prefill chunks and from the prefix cache, with a
// random head over a draft vocabulary of 4,096 ids (drafts almost always rejected) and with a head
// made to predict what a bigram copy of the target will say (most first drafts accepted); the head
// has no routing, so draft rows are refused; bad settings stop the start naming the flag.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "common/error.h"
#include "model/architectures/llama_eagle3.h"
#include "model/random_checkpoint.h"
#include "model/safetensors.h"
#include "serving_harness.h"
#include "support/eagle3_heads.h"
#include "worker/load_model_on_device.h"

namespace moe::testing {
namespace {

namespace fs = std::filesystem;

const std::string kFixture = std::string(MOE_TEST_DATA_DIR) + "/qwen3-moe-tiny";

// The fixture with every decoder layer's output projections zero: each layer's input is the token's
// embedding, and the model a bigram model (next token a function of the last), its routing alive.
std::string bigram_target() {
  const std::string dir = eagle3_test_dir("bigram_target");
  if (fs::exists(fs::path(dir) / "model.safetensors")) return dir;
  const ModelConfig config = load_model_config(kFixture);
  const Checkpoint ckpt = Checkpoint::open(kFixture);
  std::vector<TensorToWrite> tensors;
  for (const TensorSpec& spec : checkpoint_manifest(config)) {
    std::vector<float> v = ckpt.floats(spec.name, spec.shape);
    if (is_output_projection(spec.name)) std::fill(v.begin(), v.end(), 0.0f);
    tensors.push_back(make_tensor(spec.name, DType::F32, spec.shape, v));
  }
  fs::create_directories(dir);
  fs::copy_file(fs::path(kFixture) / "config.json", fs::path(dir) / "config.json");
  write_safetensors(dir + "/model.safetensors", tensors);
  return dir;
}

// A head over the whole vocabulary that, fed the bigram target's states (fc zero: h = 0), outputs
// rmsnorm(embed(x)) for its token x: q/k pick the normed embedding (scaled so a token attends to
// itself), v passes it, o keeps one head per KV head, the MLP adds nothing; then the target's final
// norm and lm_head. Its first drafts are the target's next tokens; deeper ones, fed its own output,
// are not.
std::string predicting_head() {
  const std::string target = bigram_target();
  RandomEagle3HeadOptions options;
  options.seed = 11;
  const std::string random = random_eagle3_head(target, "whole_vocab", options);
  const Checkpoint target_ckpt = Checkpoint::open(target);
  const Eagle3Plan plan = eagle3_plan();
  const int64_t H = 32, hd = 16;
  return edited_eagle3_head(
      random, "predicting", [](nlohmann::json&) {},
      [&](const std::string& name, std::vector<float>& w) {
        const auto set = [&](int64_t cols, int64_t r, int64_t c, float x) { w[static_cast<size_t>(r * cols + c)] = x; };
        if (name == plan.lm_head) w = target_ckpt.floats("lm_head.weight", {151936, H});
        if (name == plan.norm) w = target_ckpt.floats("model.norm.weight", {H});
        if (name == plan.input_norm || name == plan.hidden_norm || name == plan.post_attention_norm)
          std::fill(w.begin(), w.end(), 1.0f);
        if (name == plan.fc || name == plan.mlp.down || name == plan.attention.q_weight ||
            name == plan.attention.k_weight || name == plan.attention.v_weight || name == plan.attention.o_weight)
          std::fill(w.begin(), w.end(), 0.0f);
        for (int64_t i = 0; i < hd; ++i) {
          for (int64_t q = 0; q < 4; ++q)
            if (name == plan.attention.q_weight) set(2 * H, q * hd + i, (q / 2) * hd + i, 10.0f);
          for (int64_t j = 0; j < 2; ++j) {
            if (name == plan.attention.k_weight || name == plan.attention.v_weight) set(2 * H, j * hd + i, j * hd + i, 1.0f);
            if (name == plan.attention.o_weight) set(4 * hd, j * hd + i, 2 * j * hd + i, 1.0f);
          }
        }
      });
}

std::string random_head() {
  RandomEagle3HeadOptions options;
  options.seed = 7;
  options.draft_vocab_size = 4096;
  return random_eagle3_head(kFixture, "serving", options);
}

ModelLoader loader() {
  return [](const std::string& dir, std::optional<Quantization>) { return Model::load(dir); };
}

EngineSettings settings_for(const std::string& head, int64_t chunk) {
  EngineSettings s = HarnessOptions{}.settings;
  s.chunked_prefill_size = chunk;
  if (!head.empty()) {
    s.speculative_algorithm = "EAGLE3";
    s.speculative_draft_model_path = head;
    s.speculative_num_steps = 3;
    s.speculative_eagle_topk = 2;
    s.speculative_num_draft_tokens = 6;
  }
  return s;
}

std::unique_ptr<EngineCore> engine(const std::string& target, const std::string& head, int64_t chunk = 8192) {
  return make_engine(Model::load(target), settings_for(head, chunk), loader());
}

std::vector<msg::GenerateRequest> requests() {
  const std::vector<std::vector<int32_t>> prompts = {
      {11, 402, 93, 1500, 7, 7, 3021, 64, 808, 12},
      {11, 402, 93, 1500, 7, 7, 3021, 64, 19},
      {5},
      {151000, 3, 3, 3, 3, 250, 251, 252, 253, 254, 255, 256, 257, 258, 259, 260, 17},
  };
  std::vector<msg::GenerateRequest> out;
  for (size_t i = 0; i < prompts.size(); ++i) out.push_back(greedy_request("r" + std::to_string(i), prompts[i], 20));
  return out;
}

struct Eagle3Case {
  bool predicting;  // the bigram target and its predicting head; otherwise the fixture and a random head
};

class Eagle3Serving : public ::testing::TestWithParam<Eagle3Case> {};

TEST_P(Eagle3Serving, GreedyIdsAndRowsEqualPlainDecodingAloneBatchedChunkedAndCached) {
  const bool predicting = GetParam().predicting;
  const std::string target = predicting ? bigram_target() : kFixture;
  const std::string head = predicting ? predicting_head() : random_head();
  const std::vector<JoinedOutput> plain = run_joined(*engine(target, ""), requests());
  auto batched = engine(target, head);
  const std::vector<JoinedOutput> speculated = run_joined(*batched, requests());
  ASSERT_EQ(speculated.size(), plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(speculated[i].ids, plain[i].ids) << "batched request " << i;
    EXPECT_EQ(speculated[i].rows, plain[i].rows) << "batched request " << i;
    EXPECT_EQ(speculated[i].num_rows, plain[i].num_rows) << "batched request " << i;
  }
  const SchedulerStats stats = batched->service().stats();
  EXPECT_GT(stats.verify_passes, 0);
  // The first draft below each root is the target's next token (a verify keeps about one per pass).
  if (predicting) {
    EXPECT_GE(stats.accepted_drafts * 4, stats.verify_passes * 3) << stats.draft_tokens;
  }
  // Each alone, in prefill chunks of 3 tokens, then again from the prefix cache.
  auto chunked = engine(target, head, 3);
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < plain.size(); ++i) {
      const std::vector<JoinedOutput> one = run_joined(*chunked, {requests()[i]});
      const std::string how = pass == 0 ? "chunked" : "cached";
      EXPECT_EQ(one[0].ids, plain[i].ids) << how << " request " << i;
      EXPECT_EQ(one[0].rows, plain[i].rows) << how << " request " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(Heads, Eagle3Serving, ::testing::Values(Eagle3Case{false}, Eagle3Case{true}),
                         [](const ::testing::TestParamInfo<Eagle3Case>& info) {
                           return std::string(info.param.predicting ? "PredictingHead" : "RandomHead");
                         });

TEST(Eagle3Serving, DraftRowsAreRefusedTheHeadHasNoRouting) {
  auto core = engine(kFixture, random_head());
  msg::GenerateRequest r = requests()[0];
  r.routing.return_draft_routed_experts = true;
  core->run({r});
  ASSERT_EQ(core->errors().size(), 1u);
  EXPECT_NE(core->errors()[0].message.find("return_draft_routed_experts"), std::string::npos)
      << core->errors()[0].message;
}

void expect_start_refused(EngineSettings settings, const std::string& needle) {
  try {
    make_engine(Model::load(kFixture), settings, loader());
    ADD_FAILURE() << "started; expected an error naming " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Eagle3Refusals, StartStopsNamingTheFlag) {
  EngineSettings no_head = settings_for(random_head(), 8192);
  no_head.speculative_draft_model_path.clear();
  expect_start_refused(no_head, "EAGLE3 needs --speculative-draft-model-path");
  EngineSettings quantized = settings_for(random_head(), 8192);
  quantized.speculative_draft_model_quantization = "int8";
  expect_start_refused(quantized, "--speculative-draft-model-quantization is for --speculative-algorithm STANDALONE");
  // A model checkpoint where the head should be.
  expect_start_refused(settings_for(kFixture, 8192), "LlamaForCausalLMEagle3");
  // A head that does not fit the target names the flag and what does not fit.
  const std::string wide = edited_eagle3_head(
      random_head(), "wide", [](nlohmann::json& c) { c["target_hidden_size"] = 48; },
      [](const std::string&, std::vector<float>&) {});
  expect_start_refused(settings_for(wide, 8192), "--speculative-draft-model-path " + wide);
  EngineOptions gpu;
  gpu.device = "cuda";
  gpu.speculative_algorithm = "EAGLE3";
  try {
    model_options(gpu);
    ADD_FAILURE() << "EAGLE3 accepted with --device cuda";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("EAGLE3 runs on the CPU model only"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moe::testing
