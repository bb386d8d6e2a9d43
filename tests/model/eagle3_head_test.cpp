// The EAGLE-3 head (SGLang's LlamaForCausalLMEagle3 layout) against a reference computed here with
// plain loops from the checkpoint's own tensors: fc over the three target states, and one token's
// forward (a one-token sequence attends to itself only, so attention is o_proj of v) with its d2t
// mapping into the target's vocabulary; and the checks a head must pass before it serves.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/error.h"
#include "model/architectures/llama_eagle3.h"
#include "model/eagle3_config.h"
#include "model/eagle3_head.h"
#include "model/model_config.h"
#include "model/safetensors.h"
#include "support/eagle3_heads.h"

namespace moe::testing {
namespace {

const std::string kTarget = std::string(MOE_TEST_DATA_DIR) + "/qwen3-moe-tiny";
constexpr int64_t kDraftVocab = 1000;

void embedding(int32_t token, float* out) {
  for (int i = 0; i < 32; ++i) out[i] = std::sin(0.01f * static_cast<float>(token) + static_cast<float>(i));
}

std::string unit_head() {
  RandomEagle3HeadOptions options;
  options.seed = 3;
  options.dtype = DType::F32;
  options.draft_vocab_size = kDraftVocab;
  return random_eagle3_head(kTarget, "unit", options);
}

std::vector<float> matvec(const std::vector<float>& w, const std::vector<float>& x, int64_t rows) {
  const auto cols = static_cast<int64_t>(x.size());
  std::vector<float> y(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += double{w[static_cast<size_t>(r * cols + c)]} * x[static_cast<size_t>(c)];
    y[static_cast<size_t>(r)] = static_cast<float>(sum);
  }
  return y;
}

std::vector<float> rms(const std::vector<float>& x, const std::vector<float>& weight, double eps) {
  double sq = 0;
  for (float v : x) sq += double{v} * v;
  const double scale = 1.0 / std::sqrt(sq / static_cast<double>(x.size()) + eps);
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = static_cast<float>(x[i] * scale * weight[i]);
  return y;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-4 * (1 + std::fabs(want[i]))) << what << " " << i;
}

TEST(Eagle3Head, FcAndOneTokensForwardMatchAReferenceAndDraftIdsMapThroughD2t) {
  const std::string dir = unit_head();
  const ModelConfig target = load_model_config(kTarget);
  const Eagle3Config config = load_eagle3_config(dir);
  Eagle3Head head(dir, target, embedding);
  // SGLang's default for a target of 4 layers: the inputs of layers 2, 4/2 and 4-3.
  EXPECT_EQ(head.captured_layers(), (std::vector<int>{2, 2, 1}));
  const Checkpoint ckpt = Checkpoint::open(dir);
  const Eagle3Plan plan = eagle3_plan();
  const int64_t H = 32, I = config.layer.intermediate_size, hd = 16;
  auto tensor = [&](const std::string& name, std::vector<int64_t> shape) { return ckpt.floats(name, shape); };

  std::vector<float> aux(3 * H);
  for (size_t i = 0; i < aux.size(); ++i) aux[i] = std::cos(0.37f * static_cast<float>(i));
  std::vector<float> h;
  head.project(aux.data(), 1, h);
  expect_near(h, matvec(tensor(plan.fc, {H, 3 * H}), aux, H), "fc");

  // One token at position 0 (in slot 5): it attends to itself alone.
  const int32_t token = 777;
  ForwardBatch batch;
  batch.add_sequence({token}, {5}, true);
  KvCache kv = head.make_kv_cache(8);
  std::vector<float> hidden, logits;
  head.forward(batch, h.data(), kv, hidden, logits, nullptr);

  std::vector<float> e(H);
  embedding(token, e.data());
  std::vector<float> joined = rms(e, tensor(plan.input_norm, {H}), 1e-6);
  const std::vector<float> g = rms(h, tensor(plan.hidden_norm, {H}), 1e-6);
  joined.insert(joined.end(), g.begin(), g.end());
  const std::vector<float> v = matvec(tensor(plan.attention.v_weight, {2 * hd, 2 * H}), joined, 2 * hd);
  std::vector<float> heads;  // four query heads, two per KV head: each one's output is its KV head's v
  for (int q = 0; q < 4; ++q) heads.insert(heads.end(), v.begin() + (q / 2) * hd, v.begin() + (q / 2 + 1) * hd);
  const std::vector<float> a = matvec(tensor(plan.attention.o_weight, {H, 4 * hd}), heads, H);
  std::vector<float> r(H);
  for (int64_t i = 0; i < H; ++i) r[i] = h[i] + a[i];
  const std::vector<float> n = rms(r, tensor(plan.post_attention_norm, {H}), 1e-6);
  const std::vector<float> gate = matvec(tensor(plan.mlp.gate, {I, H}), n, I), up = matvec(tensor(plan.mlp.up, {I, H}), n, I);
  std::vector<float> act(static_cast<size_t>(I));
  for (int64_t i = 0; i < I; ++i) act[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
  const std::vector<float> m = matvec(tensor(plan.mlp.down, {H, I}), act, H);
  std::vector<float> out(H);
  for (int64_t i = 0; i < H; ++i) out[i] = r[i] + m[i];
  expect_near(hidden, out, "hidden state (before the norm)");
  const std::vector<float> draft_logits =
      matvec(tensor(plan.lm_head, {kDraftVocab, H}), rms(out, tensor(plan.norm, {H}), 1e-6), kDraftVocab);

  // The writer spreads draft id d over the target's vocabulary at d * V / draft_vocab.
  const int64_t V = target.vocab_size;
  ASSERT_EQ(logits.size(), static_cast<size_t>(V));
  const std::vector<int64_t> d2t = ckpt.int64s(plan.d2t, kDraftVocab);
  int64_t mapped = 0;
  for (int64_t d = 0; d < kDraftVocab; ++d) {
    const int64_t id = d + d2t[static_cast<size_t>(d)];
    EXPECT_EQ(id, d * V / kDraftVocab);
    EXPECT_EQ(head.draft_to_target()[static_cast<size_t>(d)], id);
    EXPECT_NEAR(logits[static_cast<size_t>(id)], draft_logits[static_cast<size_t>(d)],
                2e-4 * (1 + std::fabs(draft_logits[static_cast<size_t>(d)])));
  }
  for (float x : logits) mapped += std::isfinite(x) ? 1 : 0;
  EXPECT_EQ(mapped, kDraftVocab);  // every other target id is -infinity: never proposed
}

// What a head that does not fit its target says at start.
void expect_refused(const std::string& dir, const std::string& needle) {
  try {
    Eagle3Head head(dir, load_model_config(kTarget), embedding);
    ADD_FAILURE() << dir << " loaded; expected an error naming " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

const auto kSameConfig = [](nlohmann::json&) {};
const auto kSameTensors = [](const std::string&, std::vector<float>&) {};

TEST(Eagle3HeadRefusals, SizesVocabulariesD2tAndLayersThatDoNotFitTheTarget) {
  const std::string source = unit_head();
  expect_refused(edited_eagle3_head(source, "target_hidden", [](nlohmann::json& c) { c["target_hidden_size"] = 64; },
                                    kSameTensors),
                 "target_hidden_size");
  expect_refused(edited_eagle3_head(source, "vocab", [](nlohmann::json& c) { c["vocab_size"] = 4096; }, kSameTensors),
                 "vocab_size 4096");
  expect_refused(edited_eagle3_head(source, "draft_vocab",
                                    [](nlohmann::json& c) { c["draft_vocab_size"] = 200000; }, kSameTensors),
                 "draft_vocab_size 200000 exceeds");
  std::vector<int64_t> out_of_range(kDraftVocab, 0);
  out_of_range[10] = 151936 - 10;  // draft 10 -> target 151936, one past the end
  expect_refused(edited_eagle3_head(source, "d2t_range", kSameConfig, kSameTensors, out_of_range),
                 "d2t[10] = 151926 maps outside");
  std::vector<int64_t> twice(kDraftVocab, 0);
  twice[4] = -1;  // draft 4 -> target 3, as draft 3
  expect_refused(edited_eagle3_head(source, "d2t_twice", kSameConfig, kSameTensors, twice),
                 "draft ids 3 and 4 both to target id 3");
  expect_refused(edited_eagle3_head(source, "layers",
                                    [](nlohmann::json& c) {
                                      c["eagle_config"] = {{"eagle_aux_hidden_state_layer_ids", {0, 1, 3}}};
                                    },
                                    kSameTensors),
                 "eagle_aux_hidden_state_layer_ids");
  expect_refused(edited_eagle3_head(source, "hidden", [](nlohmann::json& c) { c["hidden_size"] = 64; }, kSameTensors),
                 "hidden_size 64 differs");
  expect_refused(edited_eagle3_head(source, "arch",
                                    [](nlohmann::json& c) { c["architectures"] = {"LlamaForCausalLM"}; }, kSameTensors),
                 "LlamaForCausalLMEagle3");
}

// SGLang's layer choice: configured ids are layer outputs, read as the next layer's input.
TEST(Eagle3Config, ConfiguredLayerIdsAreTheNextLayersInputs) {
  Eagle3Config head;
  head.aux_layer_ids = {1, 23, 44};
  EXPECT_EQ(eagle3_captured_layers(head, 48), (std::vector<int>{2, 24, 45}));
  head.aux_layer_ids.clear();
  EXPECT_EQ(eagle3_captured_layers(head, 48), (std::vector<int>{2, 24, 45}));
  EXPECT_EQ(eagle3_captured_layers(head, 6), (std::vector<int>{2, 3, 3}));
  EXPECT_THROW(eagle3_captured_layers(head, 2), Error);
}

}  // namespace
}  // namespace moe::testing
