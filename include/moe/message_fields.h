#pragma once
// The field list of every message struct, in wire order: the codec packs a struct as a msgpack
// array of these fields and names them in decoding errors. A field added to a struct in
// include/moe/messages.h must be added here too (and kProtocolVersion bumped).
// The functions live in moe::msg so that argument-dependent lookup finds them from the codec.
#include <concepts>
#include <type_traits>

#include "moe/messages.h"

namespace moe::msg {

// M is T or const T: one visitor per struct serves both encoding and decoding.
template <class M, class T>
concept StructOf = std::same_as<std::remove_const_t<M>, T>;

// A struct built on DrawSettings lists its fields first.
template <class M, class Visit>
  requires std::derived_from<std::remove_const_t<M>, DrawSettings>
void visit_draw_fields(M& m, Visit&& visit) {
  visit("temperature", m.temperature);
  visit("top_p", m.top_p);
  visit("top_k", m.top_k);
  visit("min_p", m.min_p);
  visit("presence_penalty", m.presence_penalty);
  visit("frequency_penalty", m.frequency_penalty);
  visit("repetition_penalty", m.repetition_penalty);
  visit("logit_bias", m.logit_bias);
}

template <StructOf<TokenBias> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("id", m.id);
  visit("bias", m.bias);
}

template <StructOf<TokenAlternatives> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("ids", m.ids);
  visit("logprobs", m.logprobs);
  visit("texts", m.texts);
}

template <StructOf<SamplingParams> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit_draw_fields(m, visit);
  visit("max_new_tokens", m.max_new_tokens);
  visit("min_new_tokens", m.min_new_tokens);
  visit("stop", m.stop);
  visit("stop_token_ids", m.stop_token_ids);
  visit("ignore_eos", m.ignore_eos);
  visit("skip_special_tokens", m.skip_special_tokens);
  visit("n", m.n);
  visit("seed", m.seed);
}

template <StructOf<RoutingOptions> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("return_routed_experts", m.return_routed_experts);
  visit("start_len", m.start_len);
  visit("dtype", m.dtype);
  visit("include_last", m.include_last);
  visit("return_router_weights", m.return_router_weights);
  visit("weights_dtype", m.weights_dtype);
  visit("raw", m.raw);
  visit("return_draft_routed_experts", m.return_draft_routed_experts);
  visit("layers", m.layers);
}

template <StructOf<ChatMessage> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("role", m.role);
  visit("content", m.content);
  visit("extra_fields", m.extra_fields);
}

// RequestOptions' fields, which GenerateRequest and TokenizedRequest list after their own.
template <class M, class Visit>
  requires std::derived_from<std::remove_const_t<M>, RequestOptions>
void visit_option_fields(M& m, Visit&& visit) {
  visit("sampling", m.sampling);
  visit("stream", m.stream);
  visit("return_logprob", m.return_logprob);
  visit("top_logprobs_num", m.top_logprobs_num);
  visit("routing", m.routing);
  visit("speculative", m.speculative);
  visit("logprob_start_len", m.logprob_start_len);
}

template <StructOf<RequestOptions> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit_option_fields(m, visit);
}

template <StructOf<RequestFieldNames> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("sampling", m.sampling);
  visit("max_new_tokens", m.max_new_tokens);
  visit("min_new_tokens", m.min_new_tokens);
  visit("top_logprobs", m.top_logprobs);
  visit("logprob_start_len", m.logprob_start_len);
}

template <StructOf<GenerateRequest> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("rid", m.rid);
  visit("text", m.text);
  visit("input_ids", m.input_ids);
  visit("messages", m.messages);
  visit("chat_template_kwargs", m.chat_template_kwargs);
  visit("tools", m.tools);
  visit("continue_final_message", m.continue_final_message);
  visit("field_names", m.field_names);
  visit_option_fields(m, visit);
}

template <StructOf<TokenizedRequest> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("rid", m.rid);
  visit("input_ids", m.input_ids);
  visit_option_fields(m, visit);
}

template <StructOf<TokenSampling> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit_draw_fields(m, visit);
  visit("seed", m.seed);
  visit("step", m.step);
  visit("return_logprob", m.return_logprob);
  visit("top_logprobs", m.top_logprobs);
  visit("generated_ids", m.generated_ids);
  visit("suppressed_ids", m.suppressed_ids);
}

template <StructOf<WorkerSequence> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("id", m.id);
  visit("num_new_tokens", m.num_new_tokens);
  visit("kept_slots", m.kept_slots);
  visit("new_slots", m.new_slots);
  visit("needs_logits", m.needs_logits);
  visit("sampling", m.sampling);
  visit("tree_parents", m.tree_parents);
  visit("draft_topk", m.draft_topk);
  visit("prompt_logprob_ids", m.prompt_logprob_ids);
}

template <StructOf<FutureToken> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("token_index", m.token_index);
  visit("step", m.step);
  visit("sample", m.sample);
}

template <StructOf<WorkerBatch> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("step", m.step);
  visit("token_ids", m.token_ids);
  visit("positions", m.positions);
  visit("sequences", m.sequences);
  visit("capture_routing", m.capture_routing);
  visit("capture_router_weights", m.capture_router_weights);
  visit("max_tree_experts", m.max_tree_experts);
  visit("stage_instances", m.stage_instances);
  visit("future_tokens", m.future_tokens);
  visit("ended_sequences", m.ended_sequences);
  visit("scheduler_instance", m.scheduler_instance);
}

template <StructOf<RoutingRows> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("num_layers", m.num_layers);
  visit("top_k", m.top_k);
  visit("expert_ids", m.expert_ids);
  visit("weights", m.weights);
}

template <StructOf<StepRouting> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("step", m.step);
  visit("rows", m.rows);
  visit("first_layer", m.first_layer);
}

template <StructOf<WorkerResult> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("step", m.step);
  visit("sampled_ids", m.sampled_ids);
  visit("logprobs", m.logprobs);
  visit("sampled_counts", m.sampled_counts);
  visit("verify_experts", m.verify_experts);
  visit("top_logprobs", m.top_logprobs);
  visit("routing", m.routing);
  visit("worker_instance", m.worker_instance);
  visit("drafted_tokens", m.drafted_tokens);
  visit("drafted_parents", m.drafted_parents);
  visit("prompt_logprobs", m.prompt_logprobs);
  visit("prompt_top_logprobs", m.prompt_top_logprobs);
  visit("draft_routing", m.draft_routing);
}

template <StructOf<RoutingUpdate> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("routing", m.routing);
  visit("worker_instance", m.worker_instance);
}

template <StructOf<FinishReason> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("kind", m.kind);
  visit("matched_token", m.matched_token);
  visit("matched_text", m.matched_text);
  visit("message", m.message);
}

// The record's fields, first in every struct built on SequenceOutput.
template <class M, class Visit>
  requires std::derived_from<std::remove_const_t<M>, SequenceOutput>
void visit_sequence_output_fields(M& m, Visit&& visit) {
  visit("rid", m.rid);
  visit("index", m.index);
  visit("output_ids", m.output_ids);
  visit("output_logprobs", m.output_logprobs);
  visit("output_top_logprobs", m.output_top_logprobs);
  visit("finish_reason", m.finish_reason);
  visit("prompt_tokens", m.prompt_tokens);
  visit("cached_tokens", m.cached_tokens);
  visit("weight_version", m.weight_version);
  visit("input_token_ids", m.input_token_ids);
  visit("input_token_logprobs", m.input_token_logprobs);
  visit("input_top_logprobs", m.input_top_logprobs);
}

template <StructOf<DetokenizeItem> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit_sequence_output_fields(m, visit);
  visit("options", m.options);
  visit("routed_experts", m.routed_experts);
  visit("draft_routed_experts", m.draft_routed_experts);
}

template <StructOf<DetokenizeBatch> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("items", m.items);
}

template <StructOf<EncodedArray> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("data", m.data);
  visit("raw", m.raw);
  visit("shape", m.shape);
  visit("dtype", m.dtype);
}

template <StructOf<TextOutput> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit_sequence_output_fields(m, visit);
  visit("text", m.text);
  visit("output_token_texts", m.output_token_texts);
  visit("completion_tokens", m.completion_tokens);
  visit("routed_experts", m.routed_experts);
  visit("router_weights", m.router_weights);
  visit("draft_routed_experts", m.draft_routed_experts);
  visit("input_token_texts", m.input_token_texts);
}

template <StructOf<TextOutputBatch> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("outputs", m.outputs);
}

template <StructOf<Abort> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("rid", m.rid);
  visit("reason", m.reason);
  visit("index", m.index);
  visit("stop_string", m.stop_string);
  visit("kept_tokens", m.kept_tokens);
}

template <StructOf<ErrorReply> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("rid", m.rid);
  visit("message", m.message);
  visit("code", m.code);
  visit("source", m.source);
  visit("param", m.param);
}

template <StructOf<Ready> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("actor", m.actor);
  visit("pid", m.pid);
}

template <StructOf<WorkerSettings> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("model_fingerprint", m.model_fingerprint);
  visit("kv_slots", m.kv_slots);
  visit("max_batch_tokens", m.max_batch_tokens);
  visit("capture_routing", m.capture_routing);
  visit("capture_router_weights", m.capture_router_weights);
  visit("ep_size", m.ep_size);
  visit("tp_size", m.tp_size);
  visit("pp_size", m.pp_size);
  visit("pp_rank", m.pp_rank);
  visit("layer_begin", m.layer_begin);
  visit("layer_end", m.layer_end);
  visit("draft_fingerprint", m.draft_fingerprint);
  visit("device", m.device);
  visit("moe_backend", m.moe_backend);
  visit("quantization", m.quantization);
  visit("quantization_group_size", m.quantization_group_size);
  visit("kernel_dtype", m.kernel_dtype);
  visit("speculative_algorithm", m.speculative_algorithm);
  visit("speculative_num_steps", m.speculative_num_steps);
  visit("speculative_eagle_topk", m.speculative_eagle_topk);
  visit("speculative_num_draft_tokens", m.speculative_num_draft_tokens);
  visit("max_tree_experts", m.max_tree_experts);
  visit("draft_quantization", m.draft_quantization);
}

template <StructOf<Heartbeat> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("instance", m.instance);
  visit("settings", m.settings);
}

template <StructOf<WeightGroupCall> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("action", m.action);
  visit("group_name", m.group_name);
  visit("master_address", m.master_address);
  visit("master_port", m.master_port);
  visit("rank_offset", m.rank_offset);
  visit("world_size", m.world_size);
  visit("names", m.names);
  visit("dtypes", m.dtypes);
  visit("shapes", m.shapes);
}

template <StructOf<UpdateWeights> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("id", m.id);
  visit("model_path", m.model_path);
  visit("weight_version", m.weight_version);
  visit("abort_all_requests", m.abort_all_requests);
  visit("worker_instance", m.worker_instance);
  visit("memory", m.memory);
  visit("weights_tag", m.weights_tag);
  visit("kv_cache_tag", m.kv_cache_tag);
  visit("group", m.group);
}

template <StructOf<WeightsUpdated> M, class Visit>
void visit_fields(M& m, Visit&& visit) {
  visit("request", m.request);
  visit("success", m.success);
  visit("message", m.message);
  visit("model_fingerprint", m.model_fingerprint);
  visit("weight_version", m.weight_version);
  visit("worker_instance", m.worker_instance);
}

}  // namespace moe::msg
