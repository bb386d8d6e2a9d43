#include "support/golden_support.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "capture/routing_encoding.h"
#include "common/json_file.h"
#include "tokenizer/tokenizer.h"

namespace moe::testing {

Golden load_golden(const std::string& fixture) {
  Golden g;
  g.model_dir = std::string(MOE_TEST_DATA_DIR) + "/" + fixture;
  const nlohmann::json j = read_json_file(g.model_dir + "/golden.json");
  g.num_moe_layers = j.at("num_moe_layers").get<int>();
  g.top_k = j.at("top_k").get<int>();
  g.max_new_tokens = j.at("max_new_tokens").get<int>();
  for (const auto& c : j.at("cases")) {
    GoldenCase gc;
    gc.prompt_ids = c.at("prompt_ids").get<std::vector<int32_t>>();
    gc.output_ids = c.at("output_ids").get<std::vector<int32_t>>();
    gc.output_logprobs = c.at("output_logprobs").get<std::vector<float>>();
    gc.routed_experts = c.at("routed_experts").get<decltype(gc.routed_experts)>();
    gc.routed_weights = c.at("routed_weights").get<decltype(gc.routed_weights)>();
    gc.router_min_gap = c.at("router_min_gap").get<std::vector<float>>();
    gc.greedy_margin = c.at("greedy_margin").get<std::vector<float>>();
    g.cases.push_back(std::move(gc));
  }
  return g;
}

std::string fixture_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& ch : name)
    if (ch == '-') ch = '_';
  return name;
}

namespace {

template <typename T>
void append_as(const std::string& bytes, std::vector<int32_t>& out) {
  const size_t count = bytes.size() / sizeof(T);
  for (size_t i = 0; i < count; ++i) {
    T value;
    std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
    out.push_back(static_cast<int32_t>(value));
  }
}

}  // namespace

std::vector<int32_t> decode_routed_experts(const msg::EncodedArray& array) {
  const std::string bytes = array.raw ? array.data : base64_decode(array.data);
  std::vector<int32_t> ids;
  if (array.dtype == "int32")
    append_as<int32_t>(bytes, ids);
  else if (array.dtype == "int16")
    append_as<int16_t>(bytes, ids);
  else if (array.dtype == "uint8")
    append_as<uint8_t>(bytes, ids);
  else
    throw std::runtime_error("unexpected routed_experts dtype " + array.dtype);
  return ids;
}

std::map<std::pair<std::string, int32_t>, JoinedOutput> join_outputs(const std::vector<msg::TextOutput>& outputs) {
  std::map<std::pair<std::string, int32_t>, JoinedOutput> joined;
  for (const auto& o : outputs) {
    JoinedOutput& j = joined[{o.rid, o.index}];
    j.text += o.text;
    j.ids.insert(j.ids.end(), o.output_ids.begin(), o.output_ids.end());
    j.logprobs.insert(j.logprobs.end(), o.output_logprobs.begin(), o.output_logprobs.end());
    if (o.routed_experts) {
      const std::vector<int32_t> ids = decode_routed_experts(*o.routed_experts);
      j.rows.insert(j.rows.end(), ids.begin(), ids.end());
      j.num_rows += o.routed_experts->shape[0];
    }
    if (o.draft_routed_experts) {
      const std::vector<int32_t> ids = decode_routed_experts(*o.draft_routed_experts);
      j.draft_rows.insert(j.draft_rows.end(), ids.begin(), ids.end());
      j.draft_num_rows += o.draft_routed_experts->shape[0];
    }
    if (o.router_weights) {
      const std::string bytes = o.router_weights->raw ? o.router_weights->data : base64_decode(o.router_weights->data);
      const size_t old = j.weights.size();
      j.weights.resize(old + bytes.size() / sizeof(float));
      std::memcpy(j.weights.data() + old, bytes.data(), bytes.size());
    }
    if (!o.input_token_ids.empty()) {
      j.input_ids = o.input_token_ids;
      j.input_logprobs = o.input_token_logprobs;
      j.input_texts = o.input_token_texts;
      j.input_top = o.input_top_logprobs;
      ++j.input_chunks;
    }
    j.cached_tokens = o.cached_tokens;
    j.weight_version = o.weight_version;
    if (o.finish_reason) j.finish = o.finish_reason;
    ++j.chunks;
  }
  return joined;
}

msg::GenerateRequest greedy_request(const std::string& rid, const std::vector<int32_t>& ids, int max_new_tokens) {
  msg::GenerateRequest r;
  r.rid = rid;
  r.input_ids = ids;
  r.sampling.temperature = 0.0f;
  r.sampling.max_new_tokens = max_new_tokens;
  r.sampling.ignore_eos = true;
  r.return_logprob = true;
  r.routing.return_routed_experts = true;
  r.routing.raw = true;
  r.routing.dtype = msg::RoutedExpertsDtype::Int16;
  r.routing.layers = msg::RoutedExpertsLayers::Moe;  // the goldens' rows: MoE layers only
  return r;
}

std::vector<msg::GenerateRequest> greedy_requests(const Golden& golden, bool include_last) {
  std::vector<msg::GenerateRequest> requests;
  for (size_t i = 0; i < golden.cases.size(); ++i) {
    requests.push_back(greedy_request("case" + std::to_string(i), golden.cases[i].prompt_ids, golden.max_new_tokens));
    requests.back().routing.include_last = include_last;
  }
  return requests;
}

EngineSettings with_standalone_draft(EngineSettings settings, const std::string& draft_dir, int topk, int draft_tokens) {
  settings.speculative_algorithm = "STANDALONE";
  settings.speculative_draft_model_path = draft_dir;
  settings.speculative_num_steps = 4;
  settings.speculative_eagle_topk = topk;
  settings.speculative_num_draft_tokens = draft_tokens;
  return settings;
}

std::unique_ptr<EngineCore> make_engine(std::unique_ptr<Model> model, const EngineSettings& settings,
                                        ModelLoader load_checkpoint) {
  EngineCoreOptions options;
  options.settings = settings;
  options.load_checkpoint = std::move(load_checkpoint);
  return std::make_unique<EngineCore>(
      std::move(model), tokenizer::Tokenizer::load(std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer"), options);
}

std::vector<JoinedOutput> run_engine(std::unique_ptr<Model> model, const std::vector<msg::GenerateRequest>& requests,
                                     int64_t chunked_prefill_size) {
  EngineSettings settings;
  settings.max_total_tokens = 4096;
  settings.chunked_prefill_size = chunked_prefill_size;
  settings.enable_return_routed_experts = true;
  const std::unique_ptr<EngineCore> engine = make_engine(std::move(model), settings);
  auto joined = join_outputs(engine->run(requests));
  for (const msg::ErrorReply& e : engine->errors()) ADD_FAILURE() << e.rid << ": " << e.message;
  std::vector<JoinedOutput> results;
  for (const msg::GenerateRequest& r : requests) results.push_back(joined[{r.rid, 0}]);
  return results;
}

namespace {

// Expert `id` sits at rank j in ours; the golden rank j holds another expert. That is a legitimate
// reordering only if the golden puts `id` at an adjacent rank with a weight within weight_gap.
bool near_tie_swap(const std::vector<int32_t>& golden_ids, const std::vector<float>& golden_w, size_t j, int32_t id,
                   float weight_gap) {
  for (size_t other : {j - 1, j + 1}) {
    if (other >= golden_ids.size()) continue;
    if (golden_ids[other] == id && std::fabs(golden_w[other] - golden_w[j]) < weight_gap) return true;
  }
  return false;
}

}  // namespace

void expect_routing_matches_golden(const Golden& golden, const GoldenCase& c, const std::vector<int32_t>& rows,
                                   int64_t expected_rows, const NearTie& near_tie) {
  const int L = golden.num_moe_layers, K = golden.top_k;
  ASSERT_EQ(static_cast<int64_t>(rows.size()), expected_rows * L * K);
  for (int64_t pos = 0; pos < expected_rows; ++pos) {
    for (int l = 0; l < L; ++l) {
      const auto& want = c.routed_experts[pos][l];
      const auto& want_w = c.routed_weights[pos][l];
      for (int k = 0; k < K; ++k) {
        const int32_t got = rows[(pos * L + l) * K + k];
        if (got == want[k]) continue;
        // The k-th/(k+1)-th boundary is a near-tie: the last expert may legitimately differ.
        if (k == K - 1 && c.router_min_gap[pos] < near_tie.router_gap) continue;
        EXPECT_TRUE(near_tie_swap(want, want_w, static_cast<size_t>(k), got, near_tie.weight_gap))
            << "position " << pos << " layer " << l << " rank " << k << ": got expert " << got << ", golden "
            << want[k];
      }
    }
  }
}

void expect_matches_golden(const Golden& golden, const GoldenCase& c, const JoinedOutput& result,
                           int64_t expected_rows, const std::string& label) {
  SCOPED_TRACE(label);
  ASSERT_EQ(result.ids, c.output_ids);
  ASSERT_EQ(result.logprobs.size(), c.output_logprobs.size());
  for (size_t i = 0; i < c.output_logprobs.size(); ++i)
    EXPECT_NEAR(result.logprobs[i], c.output_logprobs[i], 1e-3) << "logprob of output " << i;
  ASSERT_EQ(result.num_rows, expected_rows);
  expect_routing_matches_golden(golden, c, result.rows, expected_rows);
}

namespace {

// One case of expect_bf16_agreement_with_golden; adds its agreeing and total outputs.
void expect_bf16_case_agreement(const Golden& golden, const GoldenCase& c, const JoinedOutput& got,
                                Bf16Agreement& agreement) {
  ASSERT_EQ(got.ids.size(), c.output_ids.size());
  const size_t same = static_cast<size_t>(
      std::mismatch(got.ids.begin(), got.ids.end(), c.output_ids.begin()).first - got.ids.begin());
  agreement.agreeing += same;
  agreement.total += c.output_ids.size();
  if (same < c.output_ids.size()) {
    EXPECT_LT(c.greedy_margin[same], kBf16LogitAllowance)
        << "output " << same << " is " << got.ids[same] << ", golden " << c.output_ids[same] << " with a margin of "
        << c.greedy_margin[same];
  }
  // Rows up to the position that fed the last agreeing output (the engine returns one fewer than the
  // golden's rows).
  const int64_t rows = static_cast<int64_t>(c.prompt_ids.size() + std::min(same, c.output_ids.size() - 1));
  const int64_t row_size = golden.num_moe_layers * golden.top_k;
  ASSERT_GE(got.num_rows, rows);
  const std::vector<int32_t> compared(got.rows.begin(), got.rows.begin() + rows * row_size);
  expect_routing_matches_golden(golden, c, compared, rows, NearTie{kBf16RouterAllowance, kBf16RouterAllowance});
}

}  // namespace

Bf16Agreement expect_bf16_agreement_with_golden(const Golden& golden, std::unique_ptr<Model> model) {
  const std::vector<JoinedOutput> results = run_engine(std::move(model), greedy_requests(golden));
  Bf16Agreement agreement;
  for (size_t i = 0; i < golden.cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    expect_bf16_case_agreement(golden, golden.cases[i], results.at(i), agreement);
  }
  return agreement;
}

std::vector<float> prompt_logits(Model& model, const Golden& golden) {
  ForwardBatch batch;
  int32_t next_slot = 0;
  for (const GoldenCase& c : golden.cases) {
    std::vector<int32_t> slots;
    for (size_t i = 0; i < c.prompt_ids.size(); ++i) slots.push_back(next_slot++);
    batch.add_sequence(c.prompt_ids, slots, true);
  }
  KvCache kv = model.make_kv_cache(next_slot);
  std::vector<float> logits;
  model.forward(batch, kv, logits);
  return logits;
}

void expect_logits_close(const std::vector<float>& reference, const std::vector<float>& other) {
  ASSERT_EQ(reference.size(), other.size());
  float worst = 0.0f, largest = 1.0f;
  for (size_t i = 0; i < reference.size(); ++i) {
    worst = std::max(worst, std::fabs(reference[i] - other[i]));
    largest = std::max(largest, std::fabs(reference[i]));
  }
  EXPECT_LT(worst, 1e-3f * largest);
}

LogitDrift measure_logit_drift(Model& reference, Model& other, const Golden& golden) {
  const std::vector<float> want = prompt_logits(reference, golden), got = prompt_logits(other, golden);
  EXPECT_EQ(got.size(), want.size());
  LogitDrift drift;
  if (got.size() != want.size()) return drift;
  const size_t vocab = want.size() / golden.cases.size();
  for (size_t row = 0; row < golden.cases.size(); ++row) {
    const float* w = want.data() + row * vocab;
    std::vector<size_t> order(vocab);
    for (size_t i = 0; i < vocab; ++i) order[i] = i;
    std::partial_sort(order.begin(), order.begin() + 2, order.end(), [&](size_t a, size_t b) { return w[a] > w[b]; });
    const float* g = got.data() + row * vocab;
    for (size_t i = 0; i < vocab; ++i)
      drift.logits = std::max(drift.logits, static_cast<double>(std::fabs(g[i] - w[i])));
    const double margin_change = (g[order[0]] - g[order[1]]) - (w[order[0]] - w[order[1]]);
    drift.margin = std::max(drift.margin, std::fabs(margin_change));
  }
  return drift;
}

void expect_batch_matches_golden(const Golden& golden, std::unique_ptr<Model> model, const std::string& label,
                                 int64_t chunk, bool include_last) {
  const auto results = run_engine(std::move(model), greedy_requests(golden, include_last), chunk);
  for (size_t i = 0; i < golden.cases.size(); ++i) {
    const auto& c = golden.cases[i];
    const int64_t rows = static_cast<int64_t>(c.prompt_ids.size()) + golden.max_new_tokens - (include_last ? 0 : 1);
    expect_matches_golden(golden, c, results[i], rows, label + " case " + std::to_string(i));
  }
}

void expect_each_case_alone_matches_golden(const Golden& golden, const std::function<std::unique_ptr<Model>()>& load) {
  const auto requests = greedy_requests(golden);
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto result = run_engine(load(), {requests[i]});
    const auto& c = golden.cases[i];
    expect_matches_golden(golden, c, result[0], static_cast<int64_t>(c.prompt_ids.size()) + golden.max_new_tokens - 1,
                          "alone case " + std::to_string(i));
  }
}

}  // namespace moe::testing
