#pragma once
// Everything moe-serve can be told, named after SGLang's server flags: the embedding API's options
// (which carry the engine's settings) and what only a server process needs.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "http/http_server.h"
#include "moe/engine_options.h"

namespace moe::actors {

struct ServeOptions : EngineOptions {
  // SGLang's --skip-tokenizer-init: no tokenizer is loaded; prompts are input_ids, replies ids only.
  bool skip_tokenizer_init = false;
  std::string served_model_name;       // the `model` OpenAI clients name; default: model_path
  std::string host = "127.0.0.1";
  int port = 0;                        // HTTP; 0 = no HTTP server (moe-serve's flag defaults to 30000)
  // Multi-process: run the model worker elsewhere. A main process given worker_endpoint starts no
  // worker and binds its scheduler inbox at scheduler_endpoint for the worker to connect to.
  std::string worker_endpoint;
  std::string scheduler_endpoint;
  int worker_timeout_ms = 5000;        // a silent worker fails in-flight requests after this long
  // The deployment's key (transport/internal_key.h): with it, the sockets between its processes
  // authenticate every peer; without it, only inproc:// and ipc:// endpoints may be given.
  std::string internal_key_file;
  // Pipeline parallelism: the decoder layers cut into pp_size stages (balanced, or pp_layer_split
  // such as "4,4,3"), each a model worker of its own. A worker process runs stage pp_rank and sends
  // its activations to pp_next_endpoint (the next stage's --worker-endpoint; none for the last).
  int pp_size = 1;
  std::string pp_layer_split;
  int pp_rank = 0;
  std::string pp_next_endpoint;
  // Expert or tensor parallelism over processes (CPU): the ep_size (or tp_size) ranks join one group
  // at dist_init_addr, which rank 0 (the process holding the model worker the scheduler talks to)
  // binds and the others connect to. Rank 0 starts ranks 1.. itself with rank_command (the program and
  // its flags, to which --role worker --ep-rank (--tp-rank) R --dist-init-addr A are added) when that
  // is given; otherwise they are started by hand (--role worker --ep-rank R). Neither: every expert
  // shard runs in the worker's process (tensor parallelism always has its ranks in processes).
  std::string dist_init_addr;
  int ep_rank = 0;
  int tp_size = 1;  // tensor-parallel ranks (model/tensor_shard.h)
  int tp_rank = 0;
  int dist_timeout_s = 600;  // how long the ranks wait for each other to join (model loads included)
  std::vector<std::string> rank_command;
  std::string api_key;                 // HTTP clients must send it as a Bearer token; empty = no key
  std::string admin_api_key;           // the admin endpoints need it (http/access_keys.h); empty = as the rest
  size_t max_batch_prompts = http::kDefaultMaxBatchPrompts;  // prompts one HTTP request may bring
  size_t max_request_bytes = http::kDefaultMaxRequestBytes;  // an HTTP body or a ZeroMQ client's frame
  bool log_requests = false;           // log each finished request: rid, lengths, timings, finish reason
  int decode_log_interval = 40;        // log the stats line every this many generating steps; 0 = never
  std::optional<uint64_t> random_seed;  // seeds the seeds of requests that bring none; none = the OS's
  std::string tool_call_parser;        // chat answers' tool calls: "" (none) or qwen25
  std::string reasoning_parser;        // chat answers' reasoning: "" (none) or qwen3
};

}  // namespace moe::actors
