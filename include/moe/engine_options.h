#pragma once
// What the embedded engine (moe::Engine) is started with: the engine's settings, the model and
// tokenizer to load, and optionally a ZeroMQ endpoint for outside clients.
#include <string>

#include "moe/engine_settings.h"

namespace moe {

// What an embedded engine is told; the same meaning and defaults as moe-serve's flags of that name.
struct EngineOptions : EngineSettings {
  std::string model_path;
  std::string tokenizer_path;  // default: model_path
  std::string chat_template;   // a Jinja file that replaces the tokenizer's chat template (--chat-template)
  std::string moe_runner_backend = "auto";
  std::string quantization = "none";       // none | int8 | int4: projections quantized at load
  int64_t quantization_group_size = 128;   // int4: input columns per scale
  std::string kernel_dtype = "float32";    // float32 | bf16: the CPU GEMMs' products (bf16 checkpoints)
  std::string device = "cpu";  // cpu | cuda (a build with the CUDA backend)
  int ep_size = 1;               // expert-parallel shards of the MoE layers (--ep-size)
  std::string expert_placement;  // JSON device_expert_mapping file (--expert-placement); empty = uniform
  bool disable_cuda_graph = false;  // cuda: run decode steps uncaptured (SGLang's --disable-cuda-graph)
  std::string zmq_endpoint;    // also serve ZeroMQ clients here; empty = only this process
  std::string weight_version = "default";  // the label of the weights loaded at start (SGLang's --weight-version)
  // auto: the checkpoint's files; dummy: random weights made from config.json alone, seeded by
  // dummy_seed (vLLM's and SGLang's --load-format dummy), to serve and measure a model without its files.
  std::string load_format = "auto";
  uint64_t dummy_seed = 0;
};

}  // namespace moe
