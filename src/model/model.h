#pragma once
// A Hugging Face MoE causal LM loaded from a hub-layout directory and run in float32: on the CPU
// (Model::load), or on a GPU where the build has the CUDA backend (worker/load_model_on_device.h).
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capture/copy_engine.h"
#include "model/forward_batch.h"
#include "model/kv_cache.h"
#include "model/layer_range.h"
#include "model/model_config.h"
#include "moe/moe_runner.h"
#include "moe/routing_capture.h"
#include "parallel/device_group.h"
#include "model/quantization.h"
#include "kernels/kernel_dtype.h"

namespace moe {

class NextnLayer;

// Where the forward runs.
enum class Device { Cpu, Cuda };

// "cpu" | "cuda"; anything else is a moe::Error listing both.
Device parse_device(const std::string& name);

struct ModelOptions {
  Device device = Device::Cpu;
  MoeBackend moe_backend = MoeBackend::Auto;
  int ep_size = 1;                      // expert-parallel shards (all run in this process without expert_group)
  std::string expert_placement_file;    // JSON device_expert_mapping; empty = uniform split
  bool cuda_graphs = true;              // Device::Cuda: replay decode steps as CUDA graphs
  Quantization quantization = Quantization::None;  // projections quantized at load (float checkpoints)
  int64_t quantization_group_size = 128;           // int4 at load: input columns per scale
  // The GEMMs' products (kernels/kernel_dtype.h): BF16 rounds activations to bf16, for bf16
  // checkpoints (on a GPU: the GEMMs of steps above 16 tokens, on tensor cores; cuda/blas.h).
  KernelDType kernel_dtype = KernelDType::F32;
  // A pipeline stage: only these decoder layers (plus the embedding for the first stage, the final
  // norm and lm_head for the last) are loaded. None = the whole model.
  std::optional<LayerRange> layers;
  // The expert-parallel ranks in other processes (CPU only; size ep_size): this process loads and runs
  // only the shard of its rank, then all-reduces every MoE layer's output across the group. Null: every
  // shard in this process. Not owned; outlives the model.
  Communicator* expert_group = nullptr;
  // The tensor-parallel ranks (CPU only; model/tensor_shard.h): this process loads its part of every
  // attention's heads, every MLP's and expert's intermediate width and lm_head's vocabulary, and the
  // group all-reduces each layer's attention and feed-forward output and gathers the logits. With
  // ep_size > 1 the group holds tp × ep_size ranks (RankShards): the routed experts split by expert
  // over ep_size shards, each expert's width over the shard's ranks, the rest over every rank. Null:
  // one rank. Not owned; outlives the model. Not together with expert_group.
  Communicator* tensor_group = nullptr;
  // GPU ranks, one process per GPU (--device cuda with --tp-size and/or --ep-size over processes): with
  // tensor_group (the ranks' host communicator, which says rank and size) the CUDA model holds its
  // RankShards part (with ep_size shards of experts among the ranks) and joins its device group on its
  // own stream through this at its first step, once the handshake has handed out the group's id.
  std::function<std::unique_ptr<DeviceGroup>(void* cuda_stream)> join_device_group;
  // --load-format dummy: random weights made from config.json alone with this seed (Checkpoint::dummy),
  // no weight file read. None: the checkpoint's files.
  std::optional<uint64_t> dummy_weights_seed;
  // --speculative-algorithm NEXTN: the checkpoint's next-token-prediction layer is loaded too (CPU
  // model, whole model only; a checkpoint without one is a moe::Error naming what is missing).
  bool nextn = false;
};

// The expert shards `options` ask for over config's experts: the placement file's (whose device count
// must be ep_size unless ep_size is 1), else the uniform split over ep_size; a moe::Error otherwise.
ExpertPlacement expert_placement_for(const ModelConfig& config, const ModelOptions& options);

// A device's memory as its model sees it: what the device has, and what is in use (by this process
// and any other) now. The KV pool's size by --mem-fraction-static is read off it.
struct DeviceMemoryUse {
  int64_t total_bytes = 0;
  int64_t used_bytes = 0;
  // What one token slot takes in the KV pool the model allocates; 0 when its pool holds the rows that
  // kv_bytes_per_token() counts (the CUDA pool keeps latent attention's rows in its key half).
  int64_t kv_bytes_per_token = 0;
};

// The bytes one element of `config`'s KV cache takes: bf16 on a GPU in bf16 products (the K/V rounded
// to bf16 as stored, as the products round them anyway), float32 otherwise (the CPU, the exact
// float32 mode everywhere, and latent attention's rows, which the GPU's latent kernels read in
// float32). The CUDA model stores its pool so, and the engine sizes it so.
int kv_cache_element_bytes(Device device, KernelDType products, const ModelConfig& config);

// A step's greedy draws, made where the logits are: per row that needs logits (in batch order) the
// first maximum (ties to the lower id, NaN never picked) and its log_softmax over the raw logits.
struct GreedyPicks {
  std::vector<int32_t> ids;
  std::vector<float> logprobs;
};

class Model {
 public:
  virtual ~Model() = default;
  // The CPU model; a device other than Device::Cpu is a moe::Error (load_model_on_device dispatches).
  static std::unique_ptr<Model> load(const std::string& model_dir, const ModelOptions& options = {});

  virtual const ModelConfig& config() const = 0;
  // A KV cache with room for num_slots tokens, shaped for this model. A model that keeps its K/V
  // elsewhere (on a GPU) returns KvCache::placeholder(num_slots) and allocates the pool itself.
  virtual KvCache make_kv_cache(int64_t num_slots) const = 0;
  // Allocates now whatever device memory a step of up to max_tokens tokens needs, so that no step
  // of that size allocates later; a size the device cannot hold is a moe::Error with the numbers.
  // The CPU model allocates as it goes (nothing to do).
  virtual void reserve_step_workspace(int64_t /*max_tokens*/) {}
  // Gives the physical memory of the KV pool back (release_memory_occupation's "kv_cache"): its
  // contents are lost, its addresses stay, so nothing that holds them (a CUDA graph) is rebuilt.
  // resume_kv_memory makes it usable again (zeroed or undefined: every slot is written before it
  // is read). The CPU's pool is `kv`'s own; a device model's is its own.
  virtual void release_kv_memory(KvCache& kv) { kv.release_memory(); }
  virtual void resume_kv_memory(KvCache& /*kv*/) {}
  // The device's memory where the model lives on a device with memory of its own; none on the CPU.
  virtual std::optional<DeviceMemoryUse> device_memory() const { return std::nullopt; }
  // Runs one batch: stores the K/V of every new token at its slot, calls `capture` after every
  // router top-k, and writes logits [batch.num_logit_rows(), vocab] (one row per sequence that
  // needs_logits, in batch order) into `logits`.
  virtual void forward(const ForwardBatch& batch, KvCache& kv, std::vector<float>& logits,
                       RoutingCapture* capture = nullptr) = 0;
  // forward, also writing the final-normed hidden state of every token (what lm_head reads) into
  // hidden [T, H]: what a next-token-prediction layer drafts from. Models with nextn() only.
  virtual void forward_with_hidden(const ForwardBatch& batch, KvCache& kv, std::vector<float>& logits,
                                   RoutingCapture* capture, std::vector<float>& hidden);
  // forward, also writing the residual stream entering each of `layers` (decoder layer indices, in that
  // order) for every token into states [T, layers.size() · H], each token's row the layers' states one
  // after the other: what an EAGLE-3 head drafts from. The CPU model, whole, only.
  virtual void forward_with_layer_inputs(const ForwardBatch& batch, KvCache& kv, std::vector<float>& logits,
                                         RoutingCapture* capture, const std::vector<int>& layers,
                                         std::vector<float>& states);
  // The embedding row of `token` as H floats (the CPU model's first stage only).
  virtual void embedding_row(int32_t token, float* out) const;
  // The checkpoint's next-token-prediction layer, loaded with ModelOptions::nextn; null otherwise.
  virtual NextnLayer* nextn() { return nullptr; }
  // Whether forward_greedy is implemented: a GPU model picks greedy tokens on the device and copies
  // back only the picks, where copying and scanning a vocabulary-sized row of logits per sequence
  // would cost a decode step more than its lm_head.
  virtual bool picks_greedy() const { return false; }
  // forward, with each logits row reduced to its greedy pick instead of copied out (picks_greedy()
  // models only; others throw moe::Error).
  virtual void forward_greedy(const ForwardBatch& batch, KvCache& kv, GreedyPicks& picks, RoutingCapture* capture);
  // The decoder layers this model holds: all of them unless it was loaded as a pipeline stage.
  virtual LayerRange layers() const { return {0, config().num_hidden_layers}; }
  bool is_first_stage() const { return layers().begin == 0; }
  bool is_last_stage() const { return layers().end == config().num_hidden_layers; }
  // A pipeline stage's part of forward. `hidden` [T, H] is the residual stream: the first stage
  // writes the embedded tokens into it, a later stage finds the previous stage's output there; each
  // stage leaves its last layer's output in it (updated in place, no copy). The last stage also
  // writes logits as forward does. The KV cache and the capture's MoE layers are the stage's own
  // (index 0 is its first layer). Only the CPU model runs as stages; others throw moe::Error.
  virtual void forward_stage(const ForwardBatch& batch, KvCache& kv, float* hidden, std::vector<float>& logits,
                             RoutingCapture* capture);
  // The copy engine behind routing capture: its buffers are where this model's MoE layers write (the
  // host's for the CPU model, whose engine is a ThreadCopyEngine), `on_ready` (optional) is called
  // from the engine's own thread after each copy completes.
  virtual std::unique_ptr<CopyEngine> make_copy_engine(const RoutingBufferShape& shape,
                                                       std::function<void()> on_ready) const;
};

}  // namespace moe
