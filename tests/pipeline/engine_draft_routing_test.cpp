// moe::Engine with a STANDALONE draft: RoutingOptions::return_draft_routed_experts gives, beside the
// target's golden rows, the draft model's own rows of the same positions (draft_routed_experts:
// [rows, draft MoE layers, draft top_k] in the dtype asked for, what a teacher-forced run of the draft
// routes), only when asked; requests the engine cannot serve fail with RequestError 400 naming the
// field, as over HTTP; and EngineOptions::speculative_draft_model_quantization decides how the draft
// is quantized (by default as the target).
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include <gtest/gtest.h>

#include <boost/asio/use_future.hpp>
#include <future>

#include "common/error.h"
#include "model/model.h"
#include "model/model_config.h"
#include "moe/engine.h"
#include "pipeline_harness.h"

namespace moe::testing {
namespace {

const std::string kDraftDir = std::string(MOE_TEST_DATA_DIR) + "/mixtral-tiny";  // 3 MoE layers, 8 experts, top-2

class EngineDraftRouting : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { golden_ = new Golden(load_golden("qwen3-moe-tiny")); }
  static void TearDownTestSuite() { delete golden_; }

  // qwen3-moe-tiny drafted by mixtral-tiny, chains of 4, routing captured.
  static EngineOptions standalone() {
    EngineOptions o;
    o.model_path = golden_->model_dir;
    o.tokenizer_path = std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer";
    o.enable_return_routed_experts = true;
    o.max_total_tokens = 2048;
    static_cast<EngineSettings&>(o) = with_standalone_draft(o, kDraftDir, 1, 5);
    return o;
  }

  static msg::GenerateRequest asking(size_t case_index, const std::string& rid) {
    msg::GenerateRequest request = golden_request(*golden_, golden_->cases[case_index], rid);
    request.routing.return_draft_routed_experts = true;
    return request;
  }

  static std::vector<msg::TextOutput> generate(Engine& engine, const msg::GenerateRequest& request) {
    auto future = engine.async_generate(request, boost::asio::use_future);
    EXPECT_EQ(future.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    return future.get();
  }

  static std::vector<msg::TextOutput> stream(Engine& engine, const msg::GenerateRequest& request) {
    std::vector<msg::TextOutput> chunks;
    auto done = engine.async_generate_stream(
        request, [&](const msg::TextOutput& chunk) { chunks.push_back(chunk); }, boost::asio::use_future);
    EXPECT_EQ(done.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    done.get();
    return chunks;
  }

  // What `draft` routes, run alone over case i's prompt and `output_ids` (teacher-forced): the rows of
  // the P+G-1 positions a reply's rows cover, [rows][layer][k] flattened.
  static std::vector<int32_t> teacher_forced(std::unique_ptr<Model> draft, size_t case_index,
                                             const std::vector<int32_t>& output_ids) {
    std::vector<int32_t> ids = golden_->cases[case_index].prompt_ids;
    ids.insert(ids.end(), output_ids.begin(), output_ids.end());
    const ModelConfig& config = draft->config();
    const auto row = static_cast<size_t>(config.num_moe_layers() * config.num_experts_per_tok);
    const std::vector<int32_t> rows = run_engine(std::move(draft), {greedy_request("forced", ids, 1)}).at(0).rows;
    return {rows.begin(), rows.end() - static_cast<std::ptrdiff_t>(row)};  // less the row of the reply's last token
  }

  // Case i's draft rows from `engine`, which must be `draft`'s own routing of the reply's tokens.
  static void expect_draft_rows_of(Engine& engine, std::unique_ptr<Model> draft, size_t case_index,
                                   const std::string& label) {
    const JoinedOutput reply = join_outputs(generate(engine, asking(case_index, label))).at({label, 0});
    EXPECT_EQ(reply.draft_num_rows, reply.num_rows) << label;
    EXPECT_EQ(reply.draft_rows, teacher_forced(std::move(draft), case_index, reply.ids)) << label;
  }

  static Golden* golden_;
};
Golden* EngineDraftRouting::golden_ = nullptr;

TEST_F(EngineDraftRouting, DraftRowsComeApartShapedAsDocumentedAndOnlyWhenAsked) {
  Engine engine(standalone());
  const ModelConfig draft = load_model_config(kDraftDir);
  for (size_t i = 0; i < golden_->cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const std::vector<msg::TextOutput> outputs = generate(engine, asking(i, "a" + std::to_string(i)));
    ASSERT_EQ(outputs.size(), 1u);
    expect_golden_reply(*golden_, golden_->cases[i], join_reply(outputs));
    ASSERT_TRUE(outputs[0].draft_routed_experts);
    const msg::EncodedArray& rows = *outputs[0].draft_routed_experts;
    const auto positions = static_cast<int64_t>(golden_->cases[i].prompt_ids.size()) + golden_->max_new_tokens - 1;
    EXPECT_EQ(rows.shape, (std::vector<int64_t>{positions, draft.num_moe_layers(), draft.num_experts_per_tok}));
    EXPECT_EQ(rows.dtype, "int32");
    const std::vector<int32_t> ids = decode_routed_experts(rows);
    EXPECT_EQ(ids, teacher_forced(Model::load(kDraftDir), i, golden_->cases[i].output_ids));
  }

  // Not asked: no draft rows, the target's unchanged.
  const std::vector<msg::TextOutput> plain = generate(engine, golden_request(*golden_, golden_->cases[2], "plain"));
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_FALSE(plain[0].draft_routed_experts);
  expect_golden_reply(*golden_, golden_->cases[2], join_reply(plain));

  // The dtype asked for applies to both; streamed, each chunk has the rows of its positions.
  msg::GenerateRequest int16 = asking(2, "int16");
  int16.routing.dtype = msg::RoutedExpertsDtype::Int16;
  int16.routing.raw = true;
  const std::vector<msg::TextOutput> chunks = stream(engine, int16);
  ASSERT_EQ(chunks.size(), static_cast<size_t>(golden_->max_new_tokens));
  for (const msg::TextOutput& chunk : chunks) {
    ASSERT_TRUE(chunk.draft_routed_experts && chunk.routed_experts);
    EXPECT_EQ(chunk.draft_routed_experts->dtype, "int16");
    EXPECT_EQ(chunk.draft_routed_experts->shape.at(0), chunk.routed_experts->shape.at(0));
  }
  const JoinedOutput streamed = join_outputs(chunks).at({"int16", 0});
  EXPECT_EQ(streamed.ids, golden_->cases[2].output_ids);
  EXPECT_EQ(streamed.draft_rows, teacher_forced(Model::load(kDraftDir), 2, streamed.ids));
}

// As over HTTP: without capture the target's rows are refused first, naming the flag they need.
TEST_F(EngineDraftRouting, RequestsTheEngineCannotServeFailNamingTheField) {
  auto refused = [](Engine& engine, const msg::GenerateRequest& request, const std::string& why,
                    const std::string& named = "return_draft_routed_experts") {
    try {
      generate(engine, request);
      ADD_FAILURE() << "served " << why;
    } catch (const RequestError& e) {
      EXPECT_EQ(e.reply().code, 400) << why;
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << why << ": " << e.what();
    }
  };
  {
    Engine engine(standalone());
    msg::GenerateRequest without_target_rows = asking(0, "t");
    without_target_rows.routing.return_routed_experts = false;
    refused(engine, without_target_rows, "without return_routed_experts");
  }
  EngineOptions plain = standalone();
  plain.speculative_algorithm.clear();
  plain.speculative_draft_model_path.clear();
  Engine no_draft(plain);
  refused(no_draft, asking(0, "n"), "an engine without a draft model");
  EngineOptions uncaptured = standalone();
  uncaptured.enable_return_routed_experts = false;
  Engine without_capture(uncaptured);
  refused(without_capture, asking(0, "c"), "an engine without routing capture",
          "`return_routed_experts` needs a server started with --enable-return-routed-experts");
}

// A draft is quantized as the target unless speculative_draft_model_quantization says otherwise
// ("unquant": the checkpoint's dtype under an int4 target; "int4" under a float one). int4 and
// float mixtral-tiny route this case's tokens differently, so each engine's draft rows show which
// model drafted.
TEST_F(EngineDraftRouting, TheDraftIsQuantizedAsTheTargetUnlessItsOwnQuantizationIsGiven) {
  ModelOptions int4;
  int4.quantization = Quantization::Int4;
  const size_t c = 1;
  const std::vector<int32_t> golden_ids = golden_->cases[c].output_ids;
  ASSERT_NE(teacher_forced(Model::load(kDraftDir, int4), c, golden_ids),
            teacher_forced(Model::load(kDraftDir), c, golden_ids));

  EngineOptions int4_target = standalone();
  int4_target.quantization = "int4";
  {
    Engine as_target(int4_target);
    expect_draft_rows_of(as_target, Model::load(kDraftDir, int4), c, "as-target");
  }
  int4_target.speculative_draft_model_quantization = "unquant";
  {
    Engine unquantized(int4_target);
    expect_draft_rows_of(unquantized, Model::load(kDraftDir), c, "unquant");
  }
  EngineOptions float_target = standalone();
  float_target.speculative_draft_model_quantization = "int4";
  Engine int4_draft(float_target);
  expect_draft_rows_of(int4_draft, Model::load(kDraftDir, int4), c, "int4");
  const JoinedReply reply = join_reply(generate(int4_draft, golden_request(*golden_, golden_->cases[c], "g")));
  expect_golden_reply(*golden_, golden_->cases[c], reply);
}

TEST_F(EngineDraftRouting, ABadDraftQuantizationStopsTheStartNamingTheFlag) {
  EngineOptions bad = standalone();
  bad.speculative_draft_model_quantization = "int3";
  try {
    Engine engine(bad);
    ADD_FAILURE() << "int3 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--speculative-draft-model-quantization 'int3'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace moe::testing
