#pragma once
// What an engine is told about scheduling, memory and capture, named after SGLang's server flags.
// moe-serve's flags, the embedding API's EngineOptions and the in-process engine all carry these
// settings as one struct; every size derived from them is computed in one place (the engine's
// sizing, src/engine/engine_sizing.h).
#include <cstdint>
#include <string>

namespace moe {

struct EngineSettings {
  int max_running_requests = 256;
  int64_t chunked_prefill_size = 8192;  // tokens per step, decodes included; <= 0 = no limit
  // Prompt tokens per step beside decodes (a step with no decodes takes chunked_prefill_size of
  // them): 0 = kDefaultGpuMaxPrefillTokens on a GPU, no limit on the CPU; < 0 = no limit.
  int64_t max_prefill_tokens = 0;
  int64_t max_total_tokens = 0;         // KV slots; 0 = what kv_cache_memory_bytes holds, at most 8 contexts
  int64_t kv_cache_memory_bytes = int64_t{2} << 30;
  // On a GPU (SGLang's meaning): the weights and the KV pool together take this fraction of the
  // device's memory, which sizes the pool where max_total_tokens is 0; the rest is left for the
  // steps' workspace, CUDA graphs and the CUDA context. 0 = kDefaultMemFractionStatic.
  double mem_fraction_static = 0;
  bool disable_radix_cache = false;
  // Overlapped scheduling (step n+1 planned while step n runs) is on unless this is set; pipeline
  // stages and speculative decoding schedule without it.
  bool disable_overlap_schedule = false;
  int64_t context_length = 0;           // 0 = the model's max_position_embeddings
  bool enable_return_routed_experts = false;
  bool enable_return_router_weights = false;  // also keep top-k router weights (implies the above)
  // The layer axis of routed_experts when a request does not choose: "all" (one entry per decoder
  // layer, dense layers 0, as SGLang returns them) or "moe" (MoE layers only).
  std::string routed_experts_layers = "all";
  // Speculative decoding: "" (off), NGRAM (drafts from n-gram matches in the request's own tokens) or
  // STANDALONE (drafts from a draft model).
  std::string speculative_algorithm;
  int speculative_num_steps = 4;         // deepest draft token after the root
  int speculative_eagle_topk = 2;        // most children of one draft-tree node
  int speculative_num_draft_tokens = 8;  // tokens per verify, the root included
  // NGRAM: the shortest and longest suffix of a request's tokens matched against its earlier ones.
  int speculative_ngram_min_match_window_size = 1;
  int speculative_ngram_max_match_window_size = 4;
  std::string speculative_draft_model_path;
  // The STANDALONE draft's quantization: "" = the target's (--quantization), "unquant" = its
  // checkpoint's dtype, "int8" | "int4" = quantized at load (the target's group size).
  std::string speculative_draft_model_quantization;
  int max_tree_experts = 0;              // expert pool of a verify pass per MoE layer; 0 = off
  // A context_length above the model's max_position_embeddings is refused unless this is set (then
  // it is a warning): positions beyond it were never trained.
  bool allow_long_context = false;

  bool captures_routing() const { return enable_return_routed_experts || enable_return_router_weights; }
};

}  // namespace moe
