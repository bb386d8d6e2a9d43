#pragma once
// The benchmark model (bench/configs/qwen3-moe-small.json) on the GPU behind a ModelWorker, as a
// server runs it (forward, greedy picks on the device, capture through the CUDA copy engine), with its
// decode sequences prefilled, and what an HBM bound needs: the weight bytes a step reads and the
// device's measured copy bandwidth.
#include <cstdint>
#include <memory>

#include "moe/messages.h"
#include "worker/model_worker.h"

namespace moe::bench {

class GpuWorkload {
 public:
  static constexpr int kContext = 128;      // tokens in each decode sequence's KV before its step
  static constexpr int kMaxBatch = 128;     // decode sequences prefilled
  static constexpr int kPromptTokens = 512;  // the prefill benchmark's prompt

  // Loaded (and prefilled) once per process for each kernel dtype (--kernel-dtype: float32, or bf16
  // products on tensor cores above 16 tokens a step) and number of expert-parallel shards (--ep-size,
  // all on this GPU).
  static GpuWorkload& get(KernelDType products = KernelDType::F32, int ep_size = 1);

  // One decode step of sequences 0..batch-1: each feeds a token at position kContext, the same slot
  // every time, so the step can be repeated as often as timing needs.
  msg::WorkerBatch decode_batch(int batch) const;
  // The whole kPromptTokens-token prompt in one step, over slots no decode sequence uses.
  msg::WorkerBatch prefill_batch() const;
  // Runs `batch` as the next step, routing captured or not.
  msg::WorkerResult execute(msg::WorkerBatch& batch, bool capture);
  // The model's forward of `batch` alone (capture off): what a step costs before the worker samples
  // and answers. Returns once the logits (or, with greedy_picks, the device's greedy picks) are on
  // the host.
  void forward_only(const msg::WorkerBatch& batch, bool greedy_picks);

  // Float32 weight bytes one run of `batch` reads: every dense weight, lm_head, the embedding rows of
  // its tokens, and in each MoE layer the experts its tokens reach (seen by running it once captured).
  double weight_bytes(msg::WorkerBatch batch);
  // Device-to-device copy bandwidth, bytes read plus bytes written per second.
  double bandwidth() const { return bandwidth_; }
  const std::string& device_name() const { return device_name_; }

 private:
  GpuWorkload(KernelDType products, int ep_size);
  // Distinct experts each MoE layer's router picked for the batch's tokens.
  std::vector<int> experts_reached(msg::WorkerBatch batch);

  std::unique_ptr<ModelWorker> worker_;
  Model* model_ = nullptr;  // the worker's
  std::vector<float> logits_;
  GreedyPicks picks_;
  uint64_t next_step_ = 0;
  double bandwidth_ = 0.0;
  std::string device_name_;
};

}  // namespace moe::bench
