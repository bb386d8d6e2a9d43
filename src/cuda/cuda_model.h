#pragma once
// The model on a CUDA device: the same checkpoints, architectures and Model interface as the CPU's
// CausalLm, with weights (bf16 as stored, or float32), K/V and activations in device memory and
// every step computed in float32 (weights widened as read, cuBLAS SGEMM without TF32), so the
// goldens hold as on the CPU; or, with options.kernel_dtype BF16 (a bf16 checkpoint), the GEMMs of
// steps above Blas::kSmallRows tokens in bf16 products on tensor cores (blas.h). Decode steps of
// up to DecodeGraphs::kMaxBatch sequences replay CUDA graphs (options.cuda_graphs, on by default),
// padded to the next power of two.
//
// Expert parallelism (options.ep_size, options.expert_placement_file: the CPU's placements and
// errors) runs the D shards one after another on this GPU (cuda_moe_block.h). A model's placement
// is fixed at load, so its decode graphs need no key for it: they capture the sharded step as is.
//
// Tensor and expert parallelism over GPUs (options.tensor_group with options.join_device_group: one
// process per GPU) hold this rank's RankShards part (model/tensor_shard.h): its query and KV heads,
// dense MLP and shared-expert widths, each routed expert's width part (and with ep_size shards, only
// its shard's experts), and lm_head's vocabulary part. Each attention and feed-forward output is
// all-reduced over the device group, whose all-gather assembles the logits; the router is whole on
// every rank, so every rank routes alike and its rows are the one GPU's. Latent attention is not split.
//
// The K/V pool lives on the device, inside the model: make_kv_cache(num_slots) allocates it there
// (replacing any earlier pool) and returns KvCache::placeholder(num_slots), which holds no data and
// only carries the slot count that batches are checked against. One pool per model, then: forward()
// refuses a cache whose size is not the pool's.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda/cuda_attention.h"
#include "cuda/cuda_mla_attention.h"
#include "cuda/cuda_mlp.h"
#include "cuda/cuda_moe_block.h"
#include "cuda/decode_graphs.h"
#include "cuda/device_array.h"
#include "cuda/host_routing_relay.h"
#include "cuda/stream.h"
#include "model/model.h"
#include "model/tensor_shard.h"

namespace moe::cuda {

class CudaModel final : public Model {
 public:
  // Loads onto the current CUDA device; the reference MoE runner is CPU-only and refused.
  CudaModel(const std::string& model_dir, const ModelOptions& options);

  const ModelConfig& config() const override { return config_; }
  // The pool's elements are model.h's kv_cache_element_bytes: bf16 in bf16 products. A pool the
  // device cannot hold is a moe::Error with the numbers.
  KvCache make_kv_cache(int64_t num_slots) const override;
  int64_t kv_row_size() const;  // elements of one layer's key (and value) row per token slot (this rank's heads)
  // The device pool's physical memory back to the device and again, at the same addresses
  // (DeviceKvPool::release): the decode graphs stay valid.
  void release_kv_memory(KvCache& /*kv*/) override { kv_pool_.release(); }
  void resume_kv_memory(KvCache& /*kv*/) override { kv_pool_.restore(); }
  // Every activation, the batch tables and cuBLAS's scratch grown to a step of max_tokens tokens
  // (every row needing logits), so that no step up to that size allocates.
  void reserve_step_workspace(int64_t max_tokens) override;
  std::optional<DeviceMemoryUse> device_memory() const override;
  // Runs on the model's stream and returns once the logits are on the host. With `capture`, each MoE
  // layer's router writes its rows into the capture's device buffer (a copy engine's from
  // make_copy_engine), and the capture hears when the last MoE layer is queued; a capture that
  // takes host rows (one without a device buffer, the verify expert counter) gets them through
  // on_routing before forward returns. Draft trees (BatchSequence::tree_parents) attend with their
  // tree mask and route within the batch's expert limit (max_tree_experts), never as a CUDA graph.
  void forward(const ForwardBatch& batch, KvCache& kv, std::vector<float>& logits, RoutingCapture* capture) override;
  // The same step with the greedy picks made on the device (greedy_pick) and only they copied back.
  bool picks_greedy() const override { return true; }
  void forward_greedy(const ForwardBatch& batch, KvCache& kv, GreedyPicks& picks, RoutingCapture* capture) override;
  // A CudaCopyEngine on this model's stream: device buffers, a copy stream, pinned staging.
  std::unique_ptr<CopyEngine> make_copy_engine(const RoutingBufferShape& shape,
                                               std::function<void()> on_ready) const override;
  // The stream every step is queued on (tests record events on it).
  cudaStream_t stream() const { return stream_.get(); }
  // The decode graphs captured so far (tests check replays reuse them).
  int64_t graphs_captured() const { return graphs_.captures(); }

 private:
  struct DecoderLayer {
    DeviceArray<float> input_norm, post_attention_norm;
    std::optional<CudaAttention> attention;  // or, for DeepSeek-V3's latent attention, mla
    std::optional<CudaMlaAttention> mla;
    std::optional<CudaMoeBlock> moe;
    std::optional<CudaMlp> mlp;
  };
  // The padded size of a decode batch a CUDA graph runs, or 0 when this batch runs uncaptured.
  int64_t graph_batch_size(const ForwardBatch& batch, RoutingCapture* capture) const;
  // Checks the batch, uploads it and queues its step (as a graph where one serves), ending in the
  // logits or, with greedy_picks, in each logits row's greedy pick. Does not wait for the device.
  void run_step(const ForwardBatch& batch, KvCache& kv, RoutingCapture* capture, bool greedy_picks);
  // Queues the step of the batch uploaded into batch_: the layers, then the final norm and lm_head
  // over the rows that need logits, into scratch_.logits, and with greedy_picks their picks into
  // scratch_.pick_ids / pick_logprobs. Never waits for the device, so it can be captured.
  // notify_rows_queued: tell `capture` when the last MoE layer is queued.
  void queue_step(RoutingCapture* capture, bool notify_rows_queued, bool greedy_picks);
  // Queues the copy of a step's first `count` results into pinned staging (grown as needed).
  template <typename T>
  void queue_copy_out(const T* device, size_t count, PinnedArray<T>& staging);
  // Joins the device group at the first step of a rank of several (the handshake has then handed out its id).
  void join_group();
  // logits[n, vocab] of the n rows through this rank's part of lm_head, gathered from every rank.
  void vocab_parallel_logits(const float* rows, int64_t n, float* logits);
  // Waits for the step and its copies (a fault of any of its kernels surfaces here), then hands the
  // step's rows to a capture that takes host rows.
  void finish_step();

  ModelConfig config_;
  RankShards shards_;  // this rank's part of the model: the whole of it without a group
  ExpertPlacement placement_;
  Stream stream_;  // before the device members, so it is destroyed after them: their work is queued on it
  Blas blas_;
  bool use_graphs_;
  int kv_element_bytes_;
  DeviceMatrix embed_;
  std::optional<DeviceMatrix> untied_lm_head_;  // empty when lm_head is the embedding; a rank's vocabulary part
  DeviceArray<float> final_norm_;
  std::vector<DecoderLayer> layers_;
  int last_moe_layer_ = -1;  // the decoder layer after which a step's routing is complete
  mutable DeviceKvPool kv_pool_;  // made by make_kv_cache
  DeviceBatch batch_;
  HostRoutingRelay host_rows_;  // the step's rows for a capture that takes host rows
  struct Scratch {
    DeviceArray<float> hidden, normed, branch;  // [T, H]
    DeviceArray<float> last_rows, logits;       // [rows that need logits, H or vocab]
    DeviceArray<float> vocab_part, vocab_parts; // a rank's [rows, its part padded], every rank's [ranks, rows, part]
    DeviceArray<int32_t> pick_ids;              // [rows that need logits]
    DeviceArray<float> pick_logprobs;
    DeviceArray<unsigned char> pick_partials;   // greedy_pick's scratch
    CudaAttention::Scratch attention;
    CudaMlaAttention::Scratch mla;
    CudaMoeBlock::Scratch moe;
    CudaMlp::Scratch mlp;
  } scratch_;
  struct Staging {  // pinned host memory the step's results are copied into
    PinnedArray<float> logits, pick_logprobs;
    PinnedArray<int32_t> pick_ids;
  } staging_;
  std::function<std::unique_ptr<DeviceGroup>(void*)> join_device_group_;
  std::unique_ptr<DeviceGroup> group_;  // null for one rank, and until join_group
  DecodeGraphs graphs_;  // after the buffers its graphs point at, so it is destroyed first
};

// The model behind load_model_on_device's Device::Cuda (worker/load_model_on_device.h).
std::unique_ptr<Model> load_cuda_model(const std::string& model_dir, const ModelOptions& options);

}  // namespace moe::cuda
