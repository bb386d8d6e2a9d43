// NEXTN speculative decoding (the checkpoint's next-token-prediction layer as a one-layer draft)
// through the engine step, on random checkpoints of the DeepSeek-V3 and GLM-4.5 fixtures' shapes
// written with their MTP layer: greedy ids and the target's routing rows equal plain decoding's,
// alone, batched, in small prefill chunks and from the prefix cache; the layer's own rows
// (draft_routed_experts) are one per target row and do not depend on how the prompt was chunked or
// cached; a checkpoint without the layer, or a family without one, is refused naming what is missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_file.h"
#include "model/random_checkpoint.h"
#include "model/safetensors.h"
#include "serving_harness.h"

namespace moe::testing {
namespace {

namespace fs = std::filesystem;

std::string fixture_dir(const std::string& fixture) { return std::string(MOE_TEST_DATA_DIR) + "/" + fixture; }

// A random checkpoint of the fixture's config (num_nextn_predict_layers 1), MTP layer included,
// written once per test process.
std::string checkpoint_with_nextn(const std::string& fixture) {
  const fs::path dir = fs::temp_directory_path() / ("moe_nextn_" + std::to_string(::getpid()) + "_" + fixture);
  if (!fs::exists(dir / "config.json")) {
    const nlohmann::json config = read_json_file(fixture_dir(fixture) + "/config.json");
    EXPECT_EQ(config.at("num_nextn_predict_layers").get<int>(), 1);
    RandomCheckpointOptions options;
    options.seed = 5;
    write_random_checkpoint(config, dir.string(), options);
  }
  return dir.string();
}

// The random checkpoint made predictable, so that most drafts are accepted: every decoder layer's
// output projections are zero, which leaves the target a bigram model (its hidden state at q is
// final_norm(embed(x_q))), and the MTP layer passes the embedding through (eh_proj [I | 0], enorm of
// ones, the target's embedding, its final norm as shared_head.norm and lm_head as its head, as real
// checkpoints repeat them), so it predicts what
// the target will, up to its own attention and MoE branches, kept small (their output projections
// scaled by 1/50) but alive: its routing still depends on what its KV cache holds.
std::string predictable_checkpoint_with_nextn(const std::string& fixture) {
  const fs::path dir = fs::path(checkpoint_with_nextn(fixture) + "_predictable");
  if (fs::exists(dir / "config.json")) return dir.string();
  const std::string source = checkpoint_with_nextn(fixture);
  const ModelConfig config = load_model_config(source);
  const Checkpoint ckpt = Checkpoint::open(source);
  const std::string nextn = "model.layers." + std::to_string(config.num_hidden_layers) + ".";
  const int64_t H = config.hidden_size;
  std::vector<TensorToWrite> tensors;
  for (const TensorSpec& spec : checkpoint_manifest(config)) {
    std::vector<float> v = ckpt.floats(spec.name, spec.shape);
    const bool in_nextn = spec.name.rfind(nextn, 0) == 0;
    const bool output_projection = is_output_projection(spec.name);
    if (output_projection)
      for (float& x : v) x = in_nextn ? x / 50 : 0.0f;
    if (spec.name == nextn + "eh_proj.weight")
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < 2 * H; ++j) v[static_cast<size_t>(i * 2 * H + j)] = i == j ? 1.0f : 0.0f;
    if (spec.name == nextn + "enorm.weight") std::fill(v.begin(), v.end(), 1.0f);
    if (spec.name == nextn + "shared_head.norm.weight") v = ckpt.floats("model.norm.weight", spec.shape);
    if (spec.name == nextn + "shared_head.head.weight") v = ckpt.floats("lm_head.weight", spec.shape);
    if (spec.name == nextn + "embed_tokens.weight") v = ckpt.floats("model.embed_tokens.weight", spec.shape);
    tensors.push_back(make_tensor(spec.name, DType::F32, spec.shape, v));
  }
  fs::create_directories(dir);
  fs::copy_file(fs::path(source) / "config.json", dir / "config.json");
  write_safetensors((dir / "model.safetensors").string(), tensors);
  return dir.string();
}

ModelLoader loader(bool nextn) {
  return [nextn](const std::string& dir, std::optional<Quantization>) {
    ModelOptions options;
    options.nextn = nextn;
    return Model::load(dir, options);
  };
}

EngineSettings settings_for(bool nextn, int64_t chunk) {
  EngineSettings s = HarnessOptions{}.settings;
  s.chunked_prefill_size = chunk;
  s.context_length = 4096;  // the fixtures' max_position_embeddings
  if (nextn) {
    s.speculative_algorithm = "NEXTN";
    s.speculative_num_steps = 3;
    s.speculative_eagle_topk = 2;
    s.speculative_num_draft_tokens = 6;
  }
  return s;
}

std::unique_ptr<EngineCore> engine(const std::string& dir, bool nextn, int64_t chunk = 8192) {
  return make_engine(loader(nextn)(dir, std::nullopt), settings_for(nextn, chunk), loader(nextn));
}

// Prompts of the fixtures' 4,096-token vocabulary, some sharing a prefix.
std::vector<msg::GenerateRequest> requests(bool draft_rows) {
  const std::vector<std::vector<int32_t>> prompts = {
      {11, 402, 93, 1500, 7, 7, 3021, 64, 808, 12},
      {11, 402, 93, 1500, 7, 7, 3021, 64, 19},
      {5},
      {4000, 3, 3, 3, 3, 250, 251, 252, 253, 254, 255, 256, 257, 258, 259, 260, 17},
  };
  std::vector<msg::GenerateRequest> out;
  for (size_t i = 0; i < prompts.size(); ++i) {
    msg::GenerateRequest r = greedy_request("r" + std::to_string(i), prompts[i], 20);
    r.routing.return_draft_routed_experts = draft_rows;
    out.push_back(r);
  }
  return out;
}

struct NextnCase {
  std::string fixture;
  bool predictable;  // most drafts accepted; otherwise random MTP weights, whose drafts are rejected
};

class NextnServing : public ::testing::TestWithParam<NextnCase> {};

TEST_P(NextnServing, GreedyIdsAndRowsEqualPlainDecodingAloneBatchedChunkedAndCached) {
  const NextnCase& param = GetParam();
  const std::string dir =
      param.predictable ? predictable_checkpoint_with_nextn(param.fixture) : checkpoint_with_nextn(param.fixture);
  const std::vector<JoinedOutput> plain = run_joined(*engine(dir, false), requests(false));
  const auto expect_plain = [&](const std::vector<JoinedOutput>& got, const std::string& how) {
    ASSERT_EQ(got.size(), plain.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].ids, plain[i].ids) << how << " request " << i;
      EXPECT_EQ(got[i].rows, plain[i].rows) << how << " request " << i;
      EXPECT_EQ(got[i].num_rows, plain[i].num_rows) << how << " request " << i;
    }
  };
  // Batched, with the layer's rows asked for.
  auto batched = engine(dir, true);
  const std::vector<JoinedOutput> speculated = run_joined(*batched, requests(true));
  expect_plain(speculated, "batched");
  const SchedulerStats stats = batched->service().stats();
  EXPECT_GT(stats.verify_passes, 0);
  // A tree of two branches keeps one: about one draft of two at each depth when they predict well.
  if (param.predictable) {
    EXPECT_GT(stats.accepted_drafts, stats.verify_passes) << stats.draft_tokens;
  }
  for (size_t i = 0; i < speculated.size(); ++i) {
    const JoinedOutput& r = speculated[i];
    ASSERT_EQ(r.draft_num_rows, r.num_rows) << i;
    const int top_k = static_cast<int>(r.draft_rows.size() / static_cast<size_t>(r.draft_num_rows));
    // The first prompt token follows nothing, so the layer never sees it: its row alone is empty.
    for (int k = 0; k < top_k; ++k) EXPECT_EQ(r.draft_rows[static_cast<size_t>(k)], -1) << i;
    for (size_t e = static_cast<size_t>(top_k); e < r.draft_rows.size(); ++e) EXPECT_GE(r.draft_rows[e], 0) << i;
  }
  // Each alone, in prefill chunks of 3 tokens, then again from the prefix cache: the same ids and
  // rows, and the layer's rows of the same positions the same as when batched unchunked.
  auto chunked = engine(dir, true, 3);
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < plain.size(); ++i) {
      const std::vector<JoinedOutput> one = run_joined(*chunked, {requests(true)[i]});
      const std::string how = pass == 0 ? "chunked" : "cached";
      EXPECT_EQ(one[0].ids, plain[i].ids) << how << " request " << i;
      EXPECT_EQ(one[0].rows, plain[i].rows) << how << " request " << i;
      EXPECT_EQ(one[0].draft_rows, speculated[i].draft_rows) << how << " request " << i;
      if (pass == 1 && requests(false)[i].input_ids->size() > 1) {
        EXPECT_GT(one[0].cached_tokens, 0) << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, NextnServing,
                         ::testing::Values(NextnCase{"glm4-moe-tiny", false}, NextnCase{"deepseek-v3-tiny", false},
                                           NextnCase{"glm4-moe-tiny", true}, NextnCase{"deepseek-v3-tiny", true}),
                         [](const ::testing::TestParamInfo<NextnCase>& info) {
                           std::string name = info.param.fixture + (info.param.predictable ? "_predictable" : "");
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

// The fixtures as transformers saved them hold no MTP layer: a NEXTN start names its tensors.
TEST(NextnRefusals, ACheckpointWithoutTheLayerNamesWhatIsMissing) {
  for (const std::string fixture : {"glm4-moe-tiny", "deepseek-v3-tiny"}) {
    try {
      loader(true)(fixture_dir(fixture), std::nullopt);
      ADD_FAILURE() << fixture << " loaded with NEXTN";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("NEXTN"), std::string::npos) << message;
      EXPECT_NE(message.find("eh_proj.weight"), std::string::npos) << message;
      EXPECT_NE(message.find("model.layers."), std::string::npos) << message;
    }
  }
  try {
    loader(true)(fixture_dir("qwen3-moe-tiny"), std::nullopt);
    ADD_FAILURE() << "qwen3-moe-tiny loaded with NEXTN";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("num_nextn_predict_layers"), std::string::npos) << e.what();
  }
}

TEST(NextnRefusals, ADraftCheckpointBesideNextnIsRefusedNamingTheFlag) {
  EngineSettings s = settings_for(true, 8192);
  s.speculative_draft_model_path = fixture_dir("qwen3-moe-tiny");
  try {
    make_engine(loader(true)(checkpoint_with_nextn("glm4-moe-tiny"), std::nullopt), s, loader(true));
    ADD_FAILURE() << "started";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--speculative-draft-model-path"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moe::testing
