#include "cuda/gpu_workload.h"

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>

#include "cuda/device_array.h"
#include "cuda/event.h"
#include "cuda/stream.h"
#include "support/bench_checkpoint.h"
#include "worker/load_model_on_device.h"

namespace moe::bench {
namespace {

constexpr int64_t kPrefillSlotBase = int64_t{GpuWorkload::kMaxBatch} * (GpuWorkload::kContext + 1);
constexpr int64_t kStepTokens = 4096;  // the worker's step budget (and capture buffer rows)

// A large device-to-device copy, timed with events after a warm-up; counts bytes read and written.
double measure_bandwidth() {
  constexpr size_t kBytes = size_t{1} << 30;
  constexpr int kCopies = 20;
  cuda::DeviceArray<char> from(kBytes), to(kBytes);
  cuda::Stream stream;
  cuda::check(cudaMemsetAsync(from.data(), 1, kBytes, stream.get()), "cudaMemsetAsync");
  const auto copy = [&] {
    cuda::check(cudaMemcpyAsync(to.data(), from.data(), kBytes, cudaMemcpyDeviceToDevice, stream.get()),
                "cudaMemcpyAsync (bandwidth)");
  };
  copy();
  cuda::Event begin(cuda::Event::Timing::On), end(cuda::Event::Timing::On);
  begin.record(stream.get());
  for (int i = 0; i < kCopies; ++i) copy();
  end.record(stream.get());
  end.synchronize();
  return 2.0 * kBytes * kCopies / (cuda::elapsed_ms(begin, end) * 1e-3);
}

// Sequence `id`'s whole slot table, sent as a new table (kept_slots 0) every time it runs.
msg::WorkerSequence greedy_sequence(uint64_t id, int32_t num_new_tokens, std::vector<int32_t> kv_slots) {
  msg::WorkerSequence s;
  s.id = id;
  s.num_new_tokens = num_new_tokens;
  s.new_slots = std::move(kv_slots);
  s.needs_logits = true;
  s.sampling.temperature = 0.0f;
  return s;
}

std::vector<int32_t> slot_range(int64_t first, int64_t count) {
  std::vector<int32_t> slots(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) slots[i] = static_cast<int32_t>(first + i);
  return slots;
}

int32_t random_token(std::mt19937& random, int64_t vocab) {
  return std::uniform_int_distribution<int32_t>(0, static_cast<int32_t>(vocab - 1))(random);
}

}  // namespace

GpuWorkload& GpuWorkload::get(KernelDType products, int ep_size) {
  // Never destroyed: at exit the CUDA runtime may be unloaded before a static's destructor would run.
  static std::map<std::pair<KernelDType, int>, GpuWorkload*> loaded;
  GpuWorkload*& workload = loaded[{products, ep_size}];
  if (!workload) workload = new GpuWorkload(products, ep_size);
  return *workload;
}

GpuWorkload::GpuWorkload(KernelDType products, int ep_size) {
  if (cuda::device_count() == 0) throw std::runtime_error("no CUDA device");
  cudaDeviceProp props{};
  cuda::check(cudaGetDeviceProperties(&props, 0), "cudaGetDeviceProperties");
  device_name_ = props.name;
  bandwidth_ = measure_bandwidth();

  ModelOptions options;
  options.device = Device::Cuda;
  options.kernel_dtype = products;
  options.ep_size = ep_size;
  std::unique_ptr<Model> model = load_model_on_device(benchmark_checkpoint(), options);
  ModelWorkerOptions worker_options;
  worker_options.settings.kv_slots = kPrefillSlotBase + kPromptTokens;
  worker_options.settings.max_batch_tokens = kStepTokens;
  worker_options.settings.capture_routing = true;  // each batch says whether it is captured
  model_ = model.get();
  worker_ = std::make_unique<ModelWorker>(std::move(model), worker_options);

  // Every decode sequence's first kContext positions, prefilled 16 sequences a step, so that the
  // decode steps attend over K/V the model wrote (random prompts).
  const int64_t vocab = worker_->config().vocab_size;
  std::mt19937 random(7);
  for (int first = 0; first < kMaxBatch; first += 16) {
    msg::WorkerBatch batch;
    for (int s = first; s < first + 16; ++s) {
      for (int p = 0; p < kContext; ++p) {
        batch.token_ids.push_back(random_token(random, vocab));
        batch.positions.push_back(p);
      }
      batch.sequences.push_back(greedy_sequence(s, kContext, slot_range(int64_t{s} * (kContext + 1), kContext)));
    }
    execute(batch, false);
  }
}

msg::WorkerBatch GpuWorkload::decode_batch(int batch_size) const {
  std::mt19937 random(static_cast<unsigned>(batch_size));
  msg::WorkerBatch batch;
  for (int s = 0; s < batch_size; ++s) {
    batch.token_ids.push_back(random_token(random, worker_->config().vocab_size));
    batch.positions.push_back(kContext);
    batch.sequences.push_back(greedy_sequence(s, 1, slot_range(int64_t{s} * (kContext + 1), kContext + 1)));
  }
  return batch;
}

msg::WorkerBatch GpuWorkload::prefill_batch() const {
  std::mt19937 random(11);
  msg::WorkerBatch batch;
  for (int p = 0; p < kPromptTokens; ++p) {
    batch.token_ids.push_back(random_token(random, worker_->config().vocab_size));
    batch.positions.push_back(p);
  }
  batch.sequences.push_back(greedy_sequence(0, kPromptTokens, slot_range(kPrefillSlotBase, kPromptTokens)));
  return batch;
}

msg::WorkerResult GpuWorkload::execute(msg::WorkerBatch& batch, bool capture) {
  batch.step = next_step_++;
  batch.capture_routing = capture;
  return worker_->execute(batch);
}

void GpuWorkload::forward_only(const msg::WorkerBatch& batch, bool greedy_picks) {
  // The model checks the KV cache's slot count only; its pool is the one the worker's steps use.
  KvCache kv = KvCache::placeholder(kPrefillSlotBase + kPromptTokens);
  SequenceTables tables;
  tables.apply(batch);
  if (greedy_picks)
    model_->forward_greedy(to_forward_batch(batch, tables), kv, picks_, nullptr);
  else
    model_->forward(to_forward_batch(batch, tables), kv, logits_, nullptr);
}

std::vector<int> GpuWorkload::experts_reached(msg::WorkerBatch batch) {
  const msg::WorkerResult result = execute(batch, true);
  std::vector<msg::StepRouting> routing = result.routing;
  // The step's rows come with this result if its copy was quick, else a moment later.
  const auto has_step = [&] {
    for (const msg::StepRouting& r : routing)
      if (r.step == batch.step) return true;
    return false;
  };
  while (!has_step()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (msg::StepRouting& r : worker_->take_ready_routing()) routing.push_back(std::move(r));
  }
  const int L = worker_->config().num_moe_layers(), K = worker_->config().num_experts_per_tok;
  std::vector<std::set<int16_t>> seen(static_cast<size_t>(L));
  for (const msg::StepRouting& r : routing) {
    if (r.step != batch.step) continue;
    for (size_t i = 0; i < r.rows.expert_ids.size(); ++i) seen[i / K % L].insert(r.rows.expert_ids[i]);
  }
  std::vector<int> counts;
  for (const auto& experts : seen) counts.push_back(static_cast<int>(experts.size()));
  return counts;
}

double GpuWorkload::weight_bytes(msg::WorkerBatch batch) {
  const ModelConfig& c = worker_->config();
  const std::vector<int> experts = experts_reached(batch);
  const double H = static_cast<double>(c.hidden_size);
  const double q_width = double{1} * c.num_attention_heads * c.head_dim;
  const double kv_width = double{1} * c.num_key_value_heads * c.head_dim;
  double params = static_cast<double>(batch.token_ids.size()) * H  // embedding rows
                  + H + static_cast<double>(c.vocab_size) * H;      // final norm, lm_head
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    params += 2 * H + 2 * q_width * H + 2 * kv_width * H;  // norms, q/o and k/v projections
    if (c.qk_norm) params += 2.0 * c.head_dim;
    if (c.attention_bias) params += q_width + 2 * kv_width;
    const int moe = c.moe_index(l);
    if (moe < 0) {
      params += 3 * H * static_cast<double>(c.intermediate_size);
      continue;
    }
    params += c.num_experts * H + experts[moe] * 3 * H * static_cast<double>(c.moe_intermediate_size);
    if (c.shared_expert_intermediate_size > 0)
      params += 3 * H * static_cast<double>(c.shared_expert_intermediate_size) + H;
  }
  return params * 2;  // the benchmark checkpoint's bf16, which the device keeps (norms are float32: negligible)
}

}  // namespace moe::bench
