// The detokenizer's per-completion assembly: streamed chunks add up to the whole reply, stop strings
// cut across tokens, routing rows honour start_len, dtype and raw/base64.
#include <gtest/gtest.h>

#include <cstring>

#include "capture/routing_encoding.h"
#include "detokenizer/detokenizer_state.h"

namespace moe {
namespace {

tokenizer::Tokenizer& qwen3() {
  static tokenizer::Tokenizer tok = tokenizer::Tokenizer::load(std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer");
  return tok;
}

constexpr int kLayers = 2, kTopK = 3;

// One row per token: row r holds experts r, r+1, ... so rows are recognisable.
msg::RoutingRows rows_from(int first_row, int count) {
  msg::RoutingRows rows{kLayers, kTopK, {}, {}};
  for (int r = first_row; r < first_row + count; ++r)
    for (int j = 0; j < kLayers * kTopK; ++j) rows.expert_ids.push_back(static_cast<int16_t>((r + j) % 64));
  return rows;
}

// Items for `ids`, one token each; the first also carries `prompt_rows` prompt rows and the options.
std::vector<msg::DetokenizeItem> items_for(const std::vector<int32_t>& ids, const msg::RequestOptions& options,
                                           int prompt_rows) {
  std::vector<msg::DetokenizeItem> items;
  int next_row = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    msg::DetokenizeItem item;
    item.rid = "r1";
    if (i == 0) item.options = options;
    item.output_ids = {ids[i]};
    item.output_logprobs = {-0.5f * static_cast<float>(i)};
    // Token i's item brings the rows computed in its step: the prompt's for the first, then the
    // row of the token before it (the last token's own row is never computed).
    const int count = i == 0 ? prompt_rows : 1;
    item.routed_experts = rows_from(next_row, count);
    next_row += count;
    item.prompt_tokens = prompt_rows;
    if (i + 1 == ids.size()) item.finish_reason = msg::FinishReason{msg::FinishKind::Length, {}, {}, ""};
    items.push_back(std::move(item));
  }
  return items;
}

std::vector<msg::TextOutput> run(DetokenizerState& state, const std::vector<msg::DetokenizeItem>& items) {
  std::vector<msg::TextOutput> outputs;
  for (const auto& item : items) {
    auto result = state.apply(msg::DetokenizeBatch{{item}});
    for (auto& o : result.outputs) outputs.push_back(std::move(o));
  }
  return outputs;
}

TEST(DetokenizerState, StreamedChunksAddUpToTheNonStreamedReply) {
  const std::string text = "naïve café — 你好，世界 👍🏽 done";
  const auto ids = qwen3().encode(text);
  msg::RequestOptions options;
  options.return_logprob = true;
  options.routing.return_routed_experts = true;
  options.routing.raw = true;
  options.routing.dtype = msg::RoutedExpertsDtype::Int16;
  DetokenizerState whole(qwen3(), 64);
  const auto final_only = run(whole, items_for(ids, options, 4));
  ASSERT_EQ(final_only.size(), 1u);
  EXPECT_EQ(final_only[0].text, text);
  EXPECT_EQ(final_only[0].output_ids, ids);
  EXPECT_EQ(final_only[0].output_logprobs.size(), ids.size());
  ASSERT_TRUE(final_only[0].routed_experts);
  const int64_t rows = 4 + static_cast<int64_t>(ids.size()) - 1;
  EXPECT_EQ(final_only[0].routed_experts->shape, (std::vector<int64_t>{rows, kLayers, kTopK}));
  EXPECT_EQ(final_only[0].routed_experts->data.size(), static_cast<size_t>(rows * kLayers * kTopK * 2));

  options.stream = true;
  DetokenizerState streamed(qwen3(), 64);
  const auto chunks = run(streamed, items_for(ids, options, 4));
  ASSERT_EQ(chunks.size(), ids.size());
  std::string joined_text, joined_rows;
  std::vector<int32_t> joined_ids;
  for (const auto& c : chunks) {
    joined_text += c.text;
    joined_ids.insert(joined_ids.end(), c.output_ids.begin(), c.output_ids.end());
    joined_rows += c.routed_experts->data;
  }
  EXPECT_EQ(joined_text, text);
  EXPECT_EQ(joined_ids, ids);
  EXPECT_EQ(joined_rows, final_only[0].routed_experts->data);
  EXPECT_TRUE(chunks.back().finish_reason.has_value());
  EXPECT_EQ(streamed.live_completions(), 0u);
}

// Prompt logprobs ride the first item: the first output that follows carries them with each
// token's text (and the alternatives' texts), once, streamed or not.
TEST(DetokenizerState, PromptLogprobsGetTheirTextsAndGoOutOnce) {
  const auto prompt = qwen3().encode("Hello world");
  const auto ids = qwen3().encode(" and more");
  ASSERT_GE(prompt.size(), 2u);
  for (const bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "streamed" : "whole");
    msg::RequestOptions options;
    options.return_logprob = true;
    options.top_logprobs_num = 1;
    options.logprob_start_len = 0;
    options.stream = stream;
    std::vector<msg::DetokenizeItem> items = items_for(ids, options, 0);
    items[0].input_token_ids = prompt;
    items[0].input_token_logprobs.assign(prompt.size(), -1.0f);
    items[0].input_top_logprobs.assign(prompt.size(), msg::TokenAlternatives{{prompt.back()}, {-1.0f}, {}});
    items[0].input_top_logprobs[0] = {};
    DetokenizerState state(qwen3(), 64);
    const auto outputs = run(state, items);
    ASSERT_FALSE(outputs.empty());
    const msg::TextOutput& first = outputs.front();
    EXPECT_EQ(first.input_token_ids, prompt);
    EXPECT_EQ(first.input_token_logprobs, items[0].input_token_logprobs);
    ASSERT_EQ(first.input_token_texts.size(), prompt.size());
    std::string joined;
    for (const std::string& t : first.input_token_texts) joined += t;
    EXPECT_EQ(joined, "Hello world");
    ASSERT_EQ(first.input_top_logprobs.size(), prompt.size());
    EXPECT_TRUE(first.input_top_logprobs[0].ids.empty());
    EXPECT_EQ(first.input_top_logprobs[1].texts, std::vector<std::string>{first.input_token_texts.back()});
    for (size_t i = 1; i < outputs.size(); ++i) EXPECT_TRUE(outputs[i].input_token_ids.empty());
  }
}

TEST(DetokenizerState, StopStringStraddlingTokensCutsTheReply) {
  const auto ids = qwen3().encode("The answer is 42. STOP here please");
  msg::RequestOptions options;
  options.sampling.stop = {"STOP"};
  DetokenizerState state(qwen3(), 64);
  std::vector<msg::TextOutput> outputs;
  std::vector<msg::Abort> reported;
  for (const auto& item : items_for(ids, options, 1)) {
    auto result = state.apply(msg::DetokenizeBatch{{item}});
    for (auto& o : result.outputs) outputs.push_back(std::move(o));
    for (auto& stop : result.stopped) reported.push_back(std::move(stop));
  }
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].text, "The answer is 42. ");
  ASSERT_TRUE(outputs[0].finish_reason);
  EXPECT_EQ(outputs[0].finish_reason->kind, msg::FinishKind::Stop);
  EXPECT_EQ(outputs[0].finish_reason->matched_text, "STOP");
  // Reported once, with the tokens the reply kept: up to the one that completed "STOP".
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_EQ(reported[0].rid, "r1");
  EXPECT_TRUE(reported[0].stop_string);
  EXPECT_EQ(reported[0].kept_tokens, outputs[0].completion_tokens);
  EXPECT_EQ(qwen3().decode(std::vector<int32_t>(ids.begin(), ids.begin() + reported[0].kept_tokens)).find("STOP"),
            std::string("The answer is 42. ").size());
}

// The rows of a raw int16 reply, as ints.
std::vector<int16_t> raw_rows(const msg::EncodedArray& array) {
  std::vector<int16_t> rows(array.data.size() / sizeof(int16_t));
  std::memcpy(rows.data(), array.data.data(), array.data.size());
  return rows;
}

TEST(DetokenizerState, StopStringWithIncludeLastWaitsForTheLastKeptTokensRow) {
  const auto ids = qwen3().encode("The answer is 42. STOP here please");
  constexpr int kPromptRows = 5;
  for (const bool include_last : {false, true}) {
    SCOPED_TRACE(include_last ? "include_last" : "P+G-1 rows");
    msg::RequestOptions options;
    options.sampling.stop = {"STOP"};
    options.routing.return_routed_experts = true;
    options.routing.include_last = include_last;
    options.routing.dtype = msg::RoutedExpertsDtype::Int16;
    options.routing.raw = true;
    DetokenizerState state(qwen3(), 64);
    std::vector<msg::TextOutput> outputs;
    int64_t kept = -1;
    size_t released_at = 0;
    const auto items = items_for(ids, options, kPromptRows);
    for (size_t i = 0; i < items.size(); ++i) {
      auto result = state.apply(msg::DetokenizeBatch{{items[i]}});
      for (const auto& stop : result.stopped) kept = stop.kept_tokens;
      if (!result.outputs.empty()) released_at = i;
      for (auto& o : result.outputs) outputs.push_back(std::move(o));
    }
    ASSERT_EQ(outputs.size(), 1u);
    ASSERT_GT(kept, 0);
    // Without include_last the reply goes with the stop; with it, one item later, when the row of
    // the last kept token (fed in the next step) has come.
    EXPECT_EQ(released_at, static_cast<size_t>(kept - 1 + (include_last ? 1 : 0)));
    EXPECT_EQ(outputs[0].text, "The answer is 42. ");
    EXPECT_EQ(outputs[0].output_ids, std::vector<int32_t>(ids.begin(), ids.begin() + kept));
    const int64_t rows = kPromptRows + kept - (include_last ? 0 : 1);
    EXPECT_EQ(outputs[0].routed_experts->shape[0], rows);
    EXPECT_EQ(raw_rows(*outputs[0].routed_experts), rows_from(0, static_cast<int>(rows)).expert_ids);
    EXPECT_EQ(state.live_completions(), 0u);
  }
}

TEST(DetokenizerState, AHeldStopStringReplyGoesWhenTheSchedulerEndsTheCompletion) {
  const auto ids = qwen3().encode("The answer is 42. STOP here please");
  msg::RequestOptions options;
  options.sampling.stop = {"STOP"};
  options.routing.return_routed_experts = true;
  options.routing.include_last = true;
  DetokenizerState state(qwen3(), 64);
  int64_t kept = -1;
  for (const auto& item : items_for(ids, options, 1)) {
    const auto result = state.apply(msg::DetokenizeBatch{{item}});
    EXPECT_TRUE(result.outputs.empty());
    if (!result.stopped.empty()) {
      kept = result.stopped[0].kept_tokens;
      break;
    }
  }
  ASSERT_GT(kept, 0);
  // The scheduler's final item, without the row (the request had ended meanwhile): the held reply
  // goes with the rows it has and the stop string's reason.
  msg::DetokenizeItem final_item;
  final_item.rid = "r1";
  final_item.prompt_tokens = 1;
  final_item.finish_reason = msg::FinishReason{msg::FinishKind::Abort, {}, {}, "gone"};
  const auto result = state.apply(msg::DetokenizeBatch{{final_item}});
  ASSERT_EQ(result.outputs.size(), 1u);
  EXPECT_EQ(result.outputs[0].finish_reason->kind, msg::FinishKind::Stop);
  EXPECT_EQ(result.outputs[0].finish_reason->matched_text, "STOP");
  EXPECT_EQ(result.outputs[0].routed_experts->shape[0], kept);  // 1 prompt row + kept - 1
  EXPECT_EQ(state.live_completions(), 0u);
}

TEST(DetokenizerState, RoutingStartLenDtypeAndBase64) {
  const auto ids = qwen3().encode("one two three four");
  msg::RequestOptions options;
  options.routing.return_routed_experts = true;
  options.routing.start_len = 3;  // int32 base64 by default
  DetokenizerState state(qwen3(), 64);
  const auto out = run(state, items_for(ids, options, 5));
  ASSERT_EQ(out.size(), 1u);
  const auto& re = *out[0].routed_experts;
  EXPECT_FALSE(re.raw);
  EXPECT_EQ(re.dtype, "int32");
  const int64_t rows = 5 + static_cast<int64_t>(ids.size()) - 1 - 3;
  EXPECT_EQ(re.shape[0], rows);
  const std::string bytes = base64_decode(re.data);
  ASSERT_EQ(bytes.size(), static_cast<size_t>(rows * kLayers * kTopK * 4));
  int32_t first;
  std::memcpy(&first, bytes.data(), 4);
  EXPECT_EQ(first, 3);  // row 3's first expert is 3 + 0
}

// uint8 on such a model is refused at the front door (RequestPreparer), before the request runs.
TEST(DetokenizerState, AutoForAModelWithMoreThan256ExpertsIsInt16) {
  msg::RequestOptions options;
  options.routing.return_routed_experts = true;
  options.routing.dtype = msg::RoutedExpertsDtype::Auto;
  DetokenizerState state(qwen3(), 300);
  auto good = items_for(qwen3().encode("fine"), options, 2);
  for (auto& item : good) item.rid = "r2";
  const DetokenizerState::Result result = state.apply(msg::DetokenizeBatch{good});
  ASSERT_EQ(result.outputs.size(), 1u);
  EXPECT_EQ(result.outputs[0].routed_experts->dtype, "int16");
}

}  // namespace
}  // namespace moe

namespace moe {
namespace {

// The draft's rows (1 layer, top-1, of a 300-expert draft) take the same positions as the target's:
// start_len skips them alike and `auto` resolves for the draft's experts (an explicit dtype the draft
// cannot use is refused at the front door, RequestPreparer).
TEST(DetokenizerState, DraftRowsFollowTheTargetsPositionsInTheirOwnArray) {
  const auto ids = qwen3().encode("one two three");
  msg::RequestOptions options;
  options.routing.return_routed_experts = true;
  options.routing.return_draft_routed_experts = true;
  options.routing.raw = true;
  options.routing.dtype = msg::RoutedExpertsDtype::Auto;
  options.routing.start_len = 2;
  std::vector<msg::DetokenizeItem> items = items_for(ids, options, 4);
  int16_t next = 0;
  for (msg::DetokenizeItem& item : items) {
    item.draft_routed_experts = {1, 1, {}, {}};
    for (int64_t r = 0; r < item.routed_experts.num_rows(); ++r) item.draft_routed_experts.expert_ids.push_back(next++);
  }
  DetokenizerState state(qwen3(), 64, 300);
  const auto outputs = run(state, items);
  ASSERT_EQ(outputs.size(), 1u);
  const int64_t rows = 4 + static_cast<int64_t>(ids.size()) - 1 - 2;
  ASSERT_TRUE(outputs[0].routed_experts && outputs[0].draft_routed_experts);
  EXPECT_EQ(outputs[0].routed_experts->dtype, "uint8");
  const msg::EncodedArray& draft = *outputs[0].draft_routed_experts;
  EXPECT_EQ(draft.shape, (std::vector<int64_t>{rows, 1, 1}));
  EXPECT_EQ(draft.dtype, "int16");
  std::vector<int16_t> values(static_cast<size_t>(rows));
  ASSERT_EQ(draft.data.size(), values.size() * 2);
  std::memcpy(values.data(), draft.data.data(), draft.data.size());
  for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(values[static_cast<size_t>(r)], r + 2);
}

// A model of 3 decoder layers whose MoE layers are 1 and 2 (kLayers): "all" gives each row an entry
// per decoder layer, the dense layer 0's zeros (ids) and 0.0 (weights), as SGLang's rows; "moe" and
// an unset axis (what the front door never sends on) the MoE layers' rows as captured.
TEST(DetokenizerState, RoutedExpertsLayersSpreadsRowsOverEveryDecoderLayer) {
  const RoutingLayerAxis axis{3, {1, 2}};
  const auto ids = qwen3().encode("one two three");
  for (const auto layers : {std::optional<msg::RoutedExpertsLayers>{msg::RoutedExpertsLayers::All},
                            std::optional<msg::RoutedExpertsLayers>{msg::RoutedExpertsLayers::Moe},
                            std::optional<msg::RoutedExpertsLayers>{}}) {
    msg::RequestOptions options;
    options.routing.return_routed_experts = true;
    options.routing.return_router_weights = true;
    options.routing.raw = true;
    options.routing.layers = layers;
    std::vector<msg::DetokenizeItem> items = items_for(ids, options, 4);
    for (auto& item : items)
      for (size_t i = 0; i < item.routed_experts.expert_ids.size(); ++i) item.routed_experts.weights.push_back(0.5f + float(i));
    DetokenizerState state(qwen3(), 64, 0, axis);
    const std::vector<msg::TextOutput> outputs = run(state, items);
    ASSERT_EQ(outputs.size(), 1u);
    const msg::EncodedArray& experts = *outputs[0].routed_experts;
    const msg::EncodedArray& weights = *outputs[0].router_weights;
    const int64_t rows = 4 + static_cast<int64_t>(ids.size()) - 1;
    const bool all = layers == msg::RoutedExpertsLayers::All;
    ASSERT_EQ(experts.shape, (std::vector<int64_t>{rows, all ? 3 : kLayers, kTopK}));
    ASSERT_EQ(weights.shape, experts.shape);
    std::vector<int32_t> got(experts.data.size() / 4);
    std::memcpy(got.data(), experts.data.data(), experts.data.size());
    std::vector<float> got_weights(weights.data.size() / 4);
    std::memcpy(got_weights.data(), weights.data.data(), weights.data.size());
    const msg::RoutingRows expected = rows_from(0, static_cast<int>(rows));
    for (int64_t r = 0; r < rows; ++r)
      for (int l = 0; l < (all ? 3 : kLayers); ++l)
        for (int k = 0; k < kTopK; ++k) {
          const size_t at = static_cast<size_t>((r * (all ? 3 : kLayers) + l) * kTopK + k);
          const int moe_layer = all ? l - 1 : l;
          if (moe_layer < 0) {
            EXPECT_EQ(got[at], 0);
            EXPECT_EQ(got_weights[at], 0.0f);
          } else {
            EXPECT_EQ(got[at], expected.expert_ids[static_cast<size_t>((r * kLayers + moe_layer) * kTopK + k)]);
          }
        }
  }
}

}  // namespace
}  // namespace moe
