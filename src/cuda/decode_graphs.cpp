#include "cuda/decode_graphs.h"

#include "cuda/device_array.h"

namespace moe::cuda {

DecodeGraphs::~DecodeGraphs() {
  for (auto& [key, entry] : entries_) destroy(entry);
}

int64_t DecodeGraphs::padded_batch(int64_t tokens) {
  if (tokens < 1 || tokens > kMaxBatch) return 0;
  int64_t padded = 1;
  while (padded < tokens) padded *= 2;
  return padded;
}

void DecodeGraphs::destroy(Entry& entry) {
  if (entry.graph) cudaGraphExecDestroy(entry.graph);
  entry.graph = nullptr;
}

void DecodeGraphs::run(const Key& key, cudaStream_t stream, const std::function<void()>& queue_step) {
  Entry& entry = entries_[key];
  const uint64_t allocations = device_allocation_count();
  if (entry.graph && entry.allocations == allocations) {
    check(cudaGraphLaunch(entry.graph, stream), "cudaGraphLaunch");
    return;
  }
  destroy(entry);
  if (entry.warmed_at != allocations) {
    queue_step();  // uncaptured: grows whatever this step needs, so that capturing it allocates nothing
    entry.warmed_at = device_allocation_count();
    return;
  }
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  cudaGraph_t graph = nullptr;
  try {
    queue_step();
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();  // the capture's error is this exception's, not a later call's
    throw;
  }
  check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
  if (device_allocation_count() != allocations) {
    // A buffer grew while the step was captured: nodes before the growth name freed memory.
    cudaGraphDestroy(graph);
    queue_step();
    entry.warmed_at = device_allocation_count();
    return;
  }
  const cudaError_t instantiated = cudaGraphInstantiate(&entry.graph, graph, 0);
  cudaGraphDestroy(graph);
  check(instantiated, "cudaGraphInstantiate");
  entry.allocations = allocations;
  ++captures_;
  check(cudaGraphLaunch(entry.graph, stream), "cudaGraphLaunch");
}

}  // namespace moe::cuda
