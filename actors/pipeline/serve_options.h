#pragma once
// Everything moe-serve and the embedding API can be told, named after SGLang's server flags.
#include <cstdint>
#include <string>

namespace moe::actors {

struct ServeOptions {
  std::string model_path;
  std::string tokenizer_path;          // default: model_path
  std::string served_model_name;       // the `model` OpenAI clients name; default: model_path
  std::string host = "127.0.0.1";
  int port = 0;                        // HTTP; 0 = no HTTP server
  std::string zmq_endpoint;            // ROUTER for ZeroMQ clients; empty = none
  bool enable_return_routed_experts = false;
  bool enable_return_router_weights = false;  // implies enable_return_routed_experts
  int max_running_requests = 256;
  int64_t chunked_prefill_size = 8192;
  int64_t max_total_tokens = 0;        // 0 = what fits in kv_cache_memory_bytes
  int64_t kv_cache_memory_bytes = int64_t{2} << 30;
  std::string moe_runner_backend = "auto";
  int ep_size = 1;
  std::string expert_placement;
  bool disable_radix_cache = false;
  int64_t context_length = 0;          // 0 = the model's max_position_embeddings
  // Multi-process: run the model worker elsewhere. A main process given worker_endpoint starts no
  // worker and binds its scheduler inbox at scheduler_endpoint for the worker to connect to.
  std::string worker_endpoint;
  std::string scheduler_endpoint;
  int worker_timeout_ms = 5000;        // a silent worker fails in-flight requests after this long
};

}  // namespace moe::actors
