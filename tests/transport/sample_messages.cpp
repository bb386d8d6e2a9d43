#include "sample_messages.h"

namespace moe::test {
namespace {

msg::SamplingParams sample_sampling() {
  msg::SamplingParams params;
  params.temperature = 0.7f;
  params.top_p = 0.9f;
  params.top_k = 40;
  params.min_p = 0.05f;
  params.presence_penalty = -0.5f;
  params.frequency_penalty = 1.25f;
  params.repetition_penalty = 1.1f;
  params.logit_bias = {{151645, -100.0f}, {0, 2.5f}};
  params.max_new_tokens = 512;
  params.min_new_tokens = 3;
  params.stop = {"\n\n", "</answer>", "ünïcode"};
  params.stop_token_ids = {151645, 151643};
  params.ignore_eos = true;
  params.skip_special_tokens = false;
  params.n = 3;
  params.seed = 18446744073709551557ull;  // needs all 64 bits
  return params;
}

msg::RoutingOptions sample_routing_options() {
  return {.return_routed_experts = true,
          .start_len = 17,
          .dtype = msg::RoutedExpertsDtype::Uint8,
          .include_last = true,
          .return_router_weights = true,
          .weights_dtype = msg::RouterWeightsDtype::Float16,
          .raw = true};
}

// rows × layers × top_k ids counting down through int16's range, with weights when asked.
msg::RoutingRows sample_rows(int rows, int layers, int top_k, bool with_weights) {
  msg::RoutingRows routing{.num_layers = layers, .top_k = top_k, .expert_ids = {}, .weights = {}};
  for (int i = 0; i < rows * layers * top_k; ++i) {
    routing.expert_ids.push_back(static_cast<int16_t>(32767 - 37 * i));
    if (with_weights) routing.weights.push_back(1.0f / static_cast<float>(i + 1));
  }
  return routing;
}

}  // namespace

std::vector<msg::Message> sample_messages() {
  std::vector<msg::Message> messages;

  msg::GenerateRequest generate;
  generate.rid = "req-Ω-1";
  generate.text = std::string("Hello\0world", 11);  // an embedded NUL must survive
  generate.messages = std::vector<msg::ChatMessage>{{"system", "Be brief."}, {"user", "Hi"}};
  generate.sampling = sample_sampling();
  generate.stream = true;
  generate.return_logprob = true;
  generate.top_logprobs_num = 20;
  generate.logprob_start_len = 2;
  generate.speculative = false;
  generate.chat_template_kwargs = R"({"enable_thinking": false})";
  generate.routing = sample_routing_options();
  messages.emplace_back(generate);

  msg::TokenizedRequest tokenized;
  tokenized.rid = "req-2";
  tokenized.input_ids = {0, 1, 151935, 2147483647};
  tokenized.sampling = sample_sampling();
  tokenized.stream = true;
  tokenized.return_logprob = true;
  tokenized.routing = sample_routing_options();
  messages.emplace_back(tokenized);

  msg::WorkerBatch batch{.step = 1ull << 40,
                         .token_ids = {5, 6, 7, 8},
                         .positions = {0, 1, 2, 9},
                         .sequences = {},
                         .capture_routing = true,
                         .capture_router_weights = true,
                         .stage_instances = {0x1234567890abcdefull, 7}};
  batch.sequences.push_back({.id = (1ull << 50) + 3,
                             .num_new_tokens = 3,
                             .new_slots = {10, 11, 12},
                             .needs_logits = true,
                             .sampling = {{0.5f, 0.8f, 20, 0.1f}, 42, 0, true}});
  batch.sequences.push_back({.id = 17,
                             .num_new_tokens = 1,
                             .kept_slots = 9,
                             .new_slots = {99},
                             .needs_logits = false,
                             .sampling = {{0.0f, 1.0f, -1, 0.0f}, 7, 9, false}});
  batch.sequences.back().sampling.top_logprobs = 5;
  batch.sequences.back().sampling.generated_ids = {4, 4, 151935};
  batch.sequences.back().sampling.suppressed_ids = {151645};
  batch.sequences.back().sampling.repetition_penalty = 1.5f;
  batch.sequences.back().sampling.logit_bias = {{3, 1.0f}};
  batch.sequences.back().prompt_logprob_ids = {151935};  // the prompt token after its one new token
  batch.sequences.front().tree_parents = {-1, 0, 0};  // a draft tree: the root and two children
  batch.sequences.front().draft_topk = 2;             // drafted by the worker's draft model first
  batch.max_tree_experts = 6;
  batch.future_tokens = {{.token_index = 3, .step = (1ull << 40) - 1, .sample = 2}};
  batch.ended_sequences = {16, (1ull << 50) + 1};
  messages.emplace_back(batch);

  msg::WorkerResult result{
      .step = 99, .sampled_ids = {151645, 3}, .logprobs = {-0.25f, -7.5f}, .routing = {}, .worker_instance = 1ull << 63};
  result.top_logprobs = {{{151645, 2}, {-0.25f, -1.5f}, {}}, {{3, 9}, {-7.5f, -8.0f}, {}}};
  result.sampled_counts = {2};  // the tree's accepted draft and one more
  result.verify_experts = {3, 8};
  result.drafted_tokens = {151645, 3, 9};  // the tree the draft model chose
  result.drafted_parents = {-1, 0, 0};
  result.prompt_logprobs = {-3.5f};
  result.prompt_top_logprobs = {{{151935, 2}, {-3.5f, -4.0f}, {}}};
  result.routing.push_back({.step = 98, .rows = sample_rows(4, 3, 2, true)});
  result.routing.push_back({.step = 99, .rows = sample_rows(2, 3, 2, false)});
  messages.emplace_back(result);
  msg::RoutingUpdate routing_only{.routing = {}, .worker_instance = 77};
  routing_only.routing.push_back({.step = 100, .rows = sample_rows(1, 3, 2, true), .first_layer = 5});
  messages.emplace_back(routing_only);

  msg::DetokenizeBatch detokenize;
  msg::DetokenizeItem& first = detokenize.items.emplace_back();
  first.rid = "a";
  first.index = 2;
  first.output_ids = {11, 12};
  first.output_logprobs = {-1.0f, -2.0f};
  first.output_top_logprobs = {{{11}, {-1.0f}, {}}, {{12}, {-2.0f}, {}}};
  first.finish_reason = msg::FinishReason{msg::FinishKind::Stop, 151645, std::nullopt, ""};
  first.prompt_tokens = 30;
  first.cached_tokens = 16;
  first.weight_version = "step-7";
  first.input_token_ids = {30, 31};
  first.input_token_logprobs = {-0.5f, -1.5f};
  first.input_top_logprobs = {{}, {{31}, {-1.5f}, {}}};
  first.options = msg::RequestOptions{
      .sampling = sample_sampling(), .stream = true, .return_logprob = true, .routing = sample_routing_options()};
  first.routed_experts = sample_rows(2, 4, 8, true);
  msg::DetokenizeItem& aborted = detokenize.items.emplace_back();
  aborted.rid = "b";
  aborted.output_ids = {13};
  aborted.finish_reason = msg::FinishReason{msg::FinishKind::Abort, std::nullopt, "x", "gone"};
  aborted.prompt_tokens = 5;
  messages.emplace_back(detokenize);

  msg::TextOutputBatch text;
  msg::TextOutput& full = text.outputs.emplace_back();
  full.rid = "a";
  full.index = 1;
  full.output_ids = {7, 8};
  full.output_logprobs = {-0.5f, -0.75f};
  full.output_top_logprobs = {{{7, 1}, {-0.5f, -0.6f}, {"Once", "\xEF\xBF\xBD"}}, {{8}, {-0.75f}, {" upon"}}};
  full.finish_reason = msg::FinishReason{msg::FinishKind::Length, std::nullopt, std::nullopt, ""};
  full.prompt_tokens = 12;
  full.cached_tokens = 4;
  full.weight_version = "step-7";
  full.input_token_ids = {3, 4};
  full.input_token_logprobs = {-2.0f, -0.125f};
  full.input_top_logprobs = {{}, {{4, 5}, {-0.125f, -3.0f}, {" there", "\xEF\xBF\xBD"}}};
  full.text = "Once upon";
  full.output_token_texts = {"Once", " upon"};
  full.completion_tokens = 2;
  full.routed_experts = msg::EncodedArray{std::string("\x01\x00\xff", 3), true, {13, 4, 2}, "int16"};
  full.router_weights = msg::EncodedArray{"AAAA", false, {13, 4, 2}, "float16"};
  full.input_token_texts = {"Hi", " there"};
  msg::TextOutput& empty = text.outputs.emplace_back();
  empty.rid = "b";
  empty.prompt_tokens = 1;
  messages.emplace_back(text);

  messages.emplace_back(msg::Abort{.rid = "a", .reason = "client disconnected"});
  messages.emplace_back(msg::Abort{.rid = "b", .reason = "STOP", .index = 2, .stop_string = true});
  messages.emplace_back(msg::ErrorReply{.rid = "r", .message = "prompt too long", .code = 400, .source = "tokenizer",
                                        .param = "sampling_params.max_new_tokens"});
  messages.emplace_back(msg::Ready{.actor = "scheduler", .pid = 4242});
  messages.emplace_back(msg::Heartbeat{.instance = 0xfedcba9876543210ull,
                                      .settings = {.model_fingerprint = 1ull << 60,
                                                   .kv_slots = 4097,
                                                   .max_batch_tokens = 8192,
                                                   .capture_routing = true,
                                                   .capture_router_weights = false,
                                                   .ep_size = 4,
                                                   .pp_size = 3,
                                                   .pp_rank = 2,
                                                   .layer_begin = 8,
                                                   .layer_end = 11,
                                                   .draft_fingerprint = 3ull << 62,
                                                   .device = "cuda",
                                                   .moe_backend = "cuda",
                                                   .quantization = "int4",
                                                   .quantization_group_size = 64,
                                                   .kernel_dtype = "bf16",
                                                   .speculative_algorithm = "STANDALONE",
                                                   .speculative_num_steps = 3,
                                                   .speculative_eagle_topk = 2,
                                                   .speculative_num_draft_tokens = 6,
                                                   .max_tree_experts = 12,
                                                   .draft_quantization = "int8"}});
  const msg::UpdateWeights update{
      .id = 3, .model_path = "/ckpt/step-8", .weight_version = "step-8", .abort_all_requests = true, .worker_instance = 5};
  messages.emplace_back(update);
  messages.emplace_back(msg::UpdateWeights{.id = 4, .model_path = "/ckpt", .weight_version = std::nullopt});
  msg::UpdateWeights receive{.id = 6, .model_path = "/ckpt", .weight_version = "step-9"};
  receive.group = {.action = msg::WeightGroupAction::Receive,
                   .group_name = "g",
                   .master_address = "10.0.0.1",
                   .master_port = 29500,
                   .rank_offset = 1,
                   .world_size = 2,
                   .names = {"model.embed_tokens.weight", "lm_head.weight"},
                   .dtypes = {"bfloat16", "float32"},
                   .shapes = {{16, 8}, {16, 8}}};
  messages.emplace_back(receive);
  messages.emplace_back(msg::WeightsUpdated{.request = update,
                                            .success = true,
                                            .message = "loaded",
                                            .model_fingerprint = 1ull << 62,
                                            .weight_version = "step-8",
                                            .worker_instance = 5});
  return messages;
}

}  // namespace moe::test
