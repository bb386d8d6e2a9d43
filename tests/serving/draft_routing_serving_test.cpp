// return_draft_routed_experts through the engine step: the STANDALONE draft's routing comes apart
// from the target's, one row per position of routed_experts. The target's rows stay the golden ones;
// with the target as its own draft the draft's rows are the golden rows too, and a smaller draft's
// rows are that model's own routing of the same tokens (a teacher-forced run of it alone). Requests
// the server cannot serve are refused with the field named. An int4-quantized draft's rows are the
// quantized model's own routing.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "common/json_file.h"
#include "golden_serving_test.h"
#include "model/random_checkpoint.h"
#include "speculative_checks.h"

namespace moe::testing {
namespace {

std::string fixture_dir(const std::string& fixture) { return std::string(MOE_TEST_DATA_DIR) + "/" + fixture; }

std::unique_ptr<EngineCore> drafting(const std::string& draft_dir, int topk, int draft_tokens,
                                     const std::string& draft_quantization = "") {
  HarnessOptions options;
  options.settings = with_standalone_draft(options.settings, draft_dir, topk, draft_tokens);
  options.settings.speculative_draft_model_quantization = draft_quantization;
  return make_pipeline(options);
}

std::vector<msg::GenerateRequest> asking_draft_rows(std::vector<msg::GenerateRequest> requests) {
  for (msg::GenerateRequest& r : requests) r.routing.return_draft_routed_experts = true;
  return requests;
}

class DraftRoutingServing : public SpeculativeServingTest {
 protected:
  // `draft` run alone over each golden case's prompt and the ids of reply `prefix`<i> (teacher-forced):
  // its own routing of the reply's tokens, P+G rows per case.
  std::vector<JoinedOutput> teacher_forced(std::unique_ptr<Model> draft,
                                           const std::map<std::pair<std::string, int32_t>, JoinedOutput>& joined,
                                           const std::string& prefix) const {
    std::vector<msg::GenerateRequest> forced;
    for (size_t i = 0; i < golden_.cases.size(); ++i) {
      std::vector<int32_t> ids = golden_.cases[i].prompt_ids;
      const std::vector<int32_t>& out = joined.at({prefix + std::to_string(i), 0}).ids;
      ids.insert(ids.end(), out.begin(), out.end());
      forced.push_back(greedy_request("f" + std::to_string(i), ids, 1));
    }
    return run_engine(std::move(draft), forced);
  }
};

TEST_F(DraftRoutingServing, TheTargetAsItsOwnDraftReturnsTheGoldenRowsForBoth) {
  for (const auto& [topk, tokens] : {std::pair{1, 5}, std::pair{2, 8}}) {
    auto engine = drafting(fixture_dir("qwen3-moe-tiny"), topk, tokens);
    const auto joined = join_outputs(engine->run(asking_draft_rows(all_cases("s"))));
    expect_all_golden(joined, "s");
    for (size_t i = 0; i < golden_.cases.size(); ++i) {
      const JoinedOutput& out = joined.at({"s" + std::to_string(i), 0});
      EXPECT_EQ(out.draft_num_rows, out.num_rows) << "case " << i;
      EXPECT_EQ(out.draft_rows, out.rows) << "case " << i << ", top-k " << topk;
    }
    expect_drafts_accepted(*engine);
  }
}

TEST_F(DraftRoutingServing, TheTargetsRowsAreTheSameWithTheFlagOnAndOff) {
  auto engine = drafting(fixture_dir("mixtral-tiny"), 2, 8);
  const auto on = join_outputs(engine->run(asking_draft_rows(all_cases("on"))));
  const auto off = join_outputs(engine->run(all_cases("off")));
  expect_all_golden(on, "on");
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    const JoinedOutput& a = on.at({"on" + std::to_string(i), 0});
    const JoinedOutput& b = off.at({"off" + std::to_string(i), 0});
    EXPECT_EQ(a.ids, b.ids);
    EXPECT_EQ(a.rows, b.rows);
    EXPECT_GT(a.draft_num_rows, 0);
    EXPECT_EQ(b.draft_num_rows, 0);
  }
}

// mixtral-tiny (3 layers, 8 experts, top-2) drafting for qwen3-moe-tiny: its rows are its own routing
// of the reply's tokens, which a plain run of mixtral-tiny over prompt + output (teacher-forced) gives;
// with include_last and start_len as for the target's rows.
TEST_F(DraftRoutingServing, ASmallerDraftsRowsAreItsOwnRoutingOfTheSameTokens) {
  const std::string draft = fixture_dir("mixtral-tiny");
  auto engine = drafting(draft, 2, 8);
  std::vector<msg::GenerateRequest> requests = asking_draft_rows(all_cases("d"));
  for (msg::GenerateRequest& r : asking_draft_rows(all_cases("last"))) {
    r.routing.include_last = true;
    r.routing.start_len = 3;
    requests.push_back(r);
  }
  const auto joined = join_outputs(engine->run(requests));
  const ModelConfig draft_config = load_model_config(draft);
  const auto row_size = static_cast<size_t>(draft_config.num_moe_layers() * draft_config.num_experts_per_tok);
  const std::vector<JoinedOutput> own = teacher_forced(Model::load(draft), joined, "d");
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    const JoinedOutput& d = joined.at({"d" + std::to_string(i), 0});
    const JoinedOutput& last = joined.at({"last" + std::to_string(i), 0});
    const size_t rows = golden_.cases[i].prompt_ids.size() + golden_.max_new_tokens;  // P+G: include_last
    ASSERT_EQ(own[i].num_rows, static_cast<int64_t>(rows));
    ASSERT_EQ(d.draft_num_rows, static_cast<int64_t>(rows - 1)) << "case " << i;
    EXPECT_EQ(d.draft_rows, std::vector<int32_t>(own[i].rows.begin(), own[i].rows.end() - row_size)) << "case " << i;
    ASSERT_EQ(last.draft_num_rows, static_cast<int64_t>(rows - 3)) << "case " << i;
    EXPECT_EQ(last.draft_rows, std::vector<int32_t>(own[i].rows.begin() + 3 * row_size, own[i].rows.end()))
        << "case " << i;
    EXPECT_EQ(last.draft_num_rows, last.num_rows);
  }
}

// --speculative-draft-model-quantization int4: the draft proposes (and routes) as mixtral-tiny with
// int4 projections, the target still decides every kept token. The draft's rows are the quantized
// model's own routing, which on these tokens differs from the float model's somewhere (else the
// test could not tell the two apart).
TEST_F(DraftRoutingServing, AnInt4DraftsRowsAreTheQuantizedModelsOwnRouting) {
  const std::string draft = fixture_dir("mixtral-tiny");
  auto engine = drafting(draft, 2, 8, "int4");
  const auto joined = join_outputs(engine->run(asking_draft_rows(all_cases("q"))));
  expect_all_golden(joined, "q");
  EXPECT_GT(engine->service().stats().verify_passes, 0);
  ModelOptions int4;
  int4.quantization = Quantization::Int4;
  const std::vector<JoinedOutput> quantized = teacher_forced(Model::load(draft, int4), joined, "q");
  const std::vector<JoinedOutput> float_rows = teacher_forced(Model::load(draft), joined, "q");
  const ModelConfig draft_config = load_model_config(draft);
  const auto row_size = static_cast<size_t>(draft_config.num_moe_layers() * draft_config.num_experts_per_tok);
  bool differs = false;
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    const JoinedOutput& q = joined.at({"q" + std::to_string(i), 0});
    const std::vector<int32_t> expected(quantized[i].rows.begin(), quantized[i].rows.end() - row_size);
    ASSERT_EQ(q.draft_num_rows, q.num_rows) << "case " << i;
    EXPECT_EQ(q.draft_rows, expected) << "case " << i;
    differs = differs || expected != std::vector<int32_t>(float_rows[i].rows.begin(), float_rows[i].rows.end() - row_size);
  }
  EXPECT_TRUE(differs) << "int4 and float mixtral-tiny route every position alike: the test cannot see the quantization";
}

// A draft whose layers are all dense (Qwen3's mlp_only_layers) has no routing to report.
std::string dense_draft() {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("moe_dense_draft_" + std::to_string(::getpid()));
  if (!std::filesystem::exists(dir / "config.json")) {
    nlohmann::json config = read_json_file(fixture_dir("qwen3-moe-tiny") + "/config.json");
    config["num_hidden_layers"] = 2;
    config["max_window_layers"] = 2;
    config["mlp_only_layers"] = {0, 1};
    write_random_checkpoint(config, dir.string(), RandomCheckpointOptions{});
  }
  return dir.string();
}

TEST_F(DraftRoutingServing, RequestsTheServerCannotServeAreRefusedNamingTheField) {
  const auto refused = [&](EngineCore& engine, msg::GenerateRequest request, const std::string& why) {
    const std::optional<msg::ErrorReply> error = engine.submit(request);
    ASSERT_TRUE(error.has_value()) << why;
    EXPECT_EQ(error->code, 400) << why;
    EXPECT_NE(error->message.find("return_draft_routed_experts"), std::string::npos) << why << ": " << error->message;
  };
  const msg::GenerateRequest asking = asking_draft_rows(all_cases("e")).front();
  msg::GenerateRequest without_target_rows = asking;
  without_target_rows.routing.return_routed_experts = false;
  refused(*drafting(fixture_dir("mixtral-tiny"), 2, 8), without_target_rows, "without return_routed_experts");
  refused(*make_pipeline({}), asking, "no speculation");
  HarnessOptions ngram;
  ngram.settings.speculative_algorithm = "NGRAM";
  refused(*make_pipeline(ngram), asking, "NGRAM: no draft model");
  refused(*drafting(dense_draft(), 2, 8), asking, "a dense draft");
  std::filesystem::remove_all(dense_draft());
}

}  // namespace
}  // namespace moe::testing
