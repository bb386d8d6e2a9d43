#include "cuda/cuda_copy_engine.h"

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "cuda/kernels.h"

namespace moe::cuda {
namespace {

Event::Timing timing_of(const CopyTestHooks& hooks) { return hooks.record_times ? Event::Timing::On : Event::Timing::Off; }

}  // namespace

CudaCopyEngine::DeviceBuffer::DeviceBuffer(const RoutingBufferShape& shape, cudaStream_t model_stream,
                                           Event::Timing timing)
    : shape_(shape),
      model_stream_(model_stream),
      ids_(static_cast<size_t>(shape.elements())),
      weights_(shape.with_weights ? static_cast<size_t>(shape.elements()) : 0),
      rows_queued_(timing) {}

void CudaCopyEngine::DeviceBuffer::on_routing(int, int64_t, int, const int32_t*, const float*) {
  throw Error("routing capture: this buffer is in device memory; a model on the CPU cannot write it");
}

DeviceRoutingRows CudaCopyEngine::DeviceBuffer::device_rows(int moe_layer) {
  const int64_t offset = moe_layer * shape_.max_tokens * shape_.top_k;
  return {ids_.data() + offset, weights_.empty() ? nullptr : weights_.data() + offset, shape_.max_tokens};
}

void CudaCopyEngine::DeviceBuffer::device_rows_queued() { rows_queued_.record(model_stream_); }

CudaCopyEngine::CudaCopyEngine(cudaStream_t model_stream, const RoutingBufferShape& shape,
                               std::function<void()> on_ready, CopyTestHooks hooks)
    : CopyEngine(shape),
      model_stream_(model_stream),
      on_ready_(std::move(on_ready)),
      hooks_(hooks),
      buffers_{DeviceBuffer(shape, model_stream, timing_of(hooks)), DeviceBuffer(shape, model_stream, timing_of(hooks))},
      staged_ids_{PinnedArray<int16_t>(static_cast<size_t>(shape.elements())),
                  PinnedArray<int16_t>(static_cast<size_t>(shape.elements()))} {
  if (shape.with_weights)
    for (PinnedArray<float>& staged : staged_weights_) staged = PinnedArray<float>(static_cast<size_t>(shape.elements()));
}

void CudaCopyEngine::prepare_write(int index) {
  // On the device, not the host: the forward's kernels queue at once and run once the copy that
  // reads this buffer (two steps back) has finished, which it almost always has.
  check(cudaStreamWaitEvent(model_stream_, copied_[index].get(), 0), "cudaStreamWaitEvent (capture buffer free)");
}

void CudaCopyEngine::start(int index, uint64_t step, int64_t num_tokens) {
  // The staging buffer still holds the rows of the copy two steps back if nobody took them yet:
  // stage them (and, to keep step order, any older copy) before this copy overwrites them.
  const auto reads_staging = [&] {
    return std::any_of(in_flight_.begin(), in_flight_.end(), [&](const Copy& c) { return c.buffer == index; });
  };
  while (reads_staging()) stage_oldest();
  const RoutingBufferShape& s = shape();
  cudaStream_t stream = copy_stream_.get();
  DeviceBuffer& source = buffers_[index];
  check(cudaStreamWaitEvent(stream, source.rows_queued().get(), 0), "cudaStreamWaitEvent (rows queued)");
  StepTimes* times = nullptr;
  if (hooks_.record_times) {
    // The wait above has taken the event's current record; the buffer gets a fresh one for its next step.
    step_times_.push_back({step, std::exchange(source.rows_queued(), Event(Event::Timing::On)),
                           Event(Event::Timing::On), Event(Event::Timing::On)});
    times = &step_times_.back();
    times->copy_begin.record(stream);
  }
  if (hooks_.delay.count() > 0) spin_for(hooks_.delay.count() * 1000, stream);
  if (num_tokens > 0) {
    // Layer l's rows 0..T-1 sit at l·N·K on the device and go to l·T·K in staging: one 2-D copy.
    const size_t row_bytes = static_cast<size_t>(num_tokens * s.top_k);
    const size_t source_pitch = static_cast<size_t>(s.max_tokens * s.top_k);
    check(cudaMemcpy2DAsync(staged_ids_[index].data(), row_bytes * sizeof(int16_t), source.ids(),
                            source_pitch * sizeof(int16_t), row_bytes * sizeof(int16_t), s.num_moe_layers,
                            cudaMemcpyDeviceToHost, stream),
          "cudaMemcpy2DAsync (routed ids)");
    if (s.with_weights)
      check(cudaMemcpy2DAsync(staged_weights_[index].data(), row_bytes * sizeof(float), source.weights(),
                              source_pitch * sizeof(float), row_bytes * sizeof(float), s.num_moe_layers,
                              cudaMemcpyDeviceToHost, stream),
            "cudaMemcpy2DAsync (router weights)");
  }
  if (times) times->copy_end.record(stream);  // before copied_: no one waiting on copied_ runs ahead of it
  copied_[index].record(stream);
  if (on_ready_) check(cudaLaunchHostFunc(stream, notify_ready, this), "cudaLaunchHostFunc (rows ready)");
  in_flight_.push_back({index, step, num_tokens});
}

void CUDART_CB CudaCopyEngine::notify_ready(void* engine) { static_cast<CudaCopyEngine*>(engine)->on_ready_(); }

void CudaCopyEngine::stage_oldest() {
  const Copy copy = in_flight_.front();
  copied_[copy.buffer].synchronize();
  completed_.push_back(stage_token_major(copy.step, copy.num_tokens, shape(), staged_ids_[copy.buffer].data(),
                                         shape().with_weights ? staged_weights_[copy.buffer].data() : nullptr,
                                         copy.num_tokens * shape().top_k));
  in_flight_.pop_front();
}

std::vector<StagedRouting> CudaCopyEngine::take_completed() {
  while (!in_flight_.empty() && copied_[in_flight_.front().buffer].done()) stage_oldest();
  return std::exchange(completed_, {});
}

std::vector<StagedRouting> CudaCopyEngine::drain() {
  while (!in_flight_.empty()) stage_oldest();
  return std::exchange(completed_, {});
}

}  // namespace moe::cuda
