// Greedy sampling on the device: each row's first maximum and its log-probability, so a decode step
// of greedy draws copies back a few bytes a sequence instead of its row of logits.
#include <cmath>

#include "cuda/kernels.h"
#include "cuda/launch.cuh"

namespace moe::cuda {
namespace {

// A row is split into chunks of kPickChunk logits, a block each (a single block per row would leave
// a batch-1 step's 152k-entry row to one multiprocessor), then one warp per row merges its chunks.
constexpr int kPickThreads = 256;
constexpr int64_t kPickChunk = 4096;

// A running (maximum, Σ e^(x - maximum)) and the lowest index of the maximum. A value replaces the
// maximum only when strictly greater, so equal values keep the lower index; NaN and -inf are never
// picked and add nothing (the host's first_max and sum_of_exps do the same).
struct Running {
  float max;
  float sum;
  int32_t index;
};

__device__ void add_value(Running& r, float v, int32_t index) {
  if (!(v > -INFINITY)) return;
  if (v > r.max) {
    r.sum = r.sum * expf(r.max - v) + 1.0f;
    r.max = v;
    r.index = index;
  } else {
    r.sum += expf(v - r.max);
  }
}

__device__ Running merge(Running a, Running b) {
  if (b.max > a.max || (b.max == a.max && b.index < a.index)) {
    const Running t = a;
    a = b;
    b = t;
  }
  // a holds the maximum; b's sum is rescaled to it (b.max = -inf: nothing to add).
  if (b.max > -INFINITY) a.sum += b.sum * expf(b.max - a.max);
  return a;
}

__device__ Running shuffle_down(const Running& r, int offset) {
  return {__shfl_down_sync(0xffffffffu, r.max, offset), __shfl_down_sync(0xffffffffu, r.sum, offset),
          __shfl_down_sync(0xffffffffu, r.index, offset)};
}

// Merges the runnings of a block's threads into thread 0's (the others' return values are unused).
__device__ Running block_merge(Running r) {
  for (int offset = 16; offset > 0; offset /= 2) r = merge(r, shuffle_down(r, offset));
  __shared__ Running warps[kPickThreads / 32];
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  if (lane == 0) warps[warp] = r;
  __syncthreads();
  r = lane < static_cast<int>(blockDim.x / 32) ? warps[lane] : Running{-INFINITY, 0.0f, 0};
  for (int offset = 16; offset > 0; offset /= 2) r = merge(r, shuffle_down(r, offset));
  return r;
}

// Block (c, r) takes chunk c of row r (kPickChunk logits) and writes its running to partials[r][c].
// A thread loads all its logits before adding any (past the row's end: -inf, which adds nothing), so
// its loads are in flight together rather than one memory latency each.
constexpr int kPickPerThread = static_cast<int>(kPickChunk / kPickThreads);
__global__ void greedy_pick_chunks_kernel(const float* logits, int64_t vocab, Running* partials) {
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * kPickChunk + threadIdx.x;
  const float* row = logits + static_cast<int64_t>(blockIdx.y) * vocab;
  float values[kPickPerThread];
#pragma unroll
  for (int j = 0; j < kPickPerThread; ++j) {
    const int64_t i = begin + j * kPickThreads;
    values[j] = i < vocab ? row[i] : -INFINITY;
  }
  Running r{-INFINITY, 0.0f, 0};
#pragma unroll
  for (int j = 0; j < kPickPerThread; ++j) add_value(r, values[j], static_cast<int32_t>(begin + j * kPickThreads));
  r = block_merge(r);
  if (threadIdx.x == 0) partials[static_cast<int64_t>(blockIdx.y) * gridDim.x + blockIdx.x] = r;
}

// One warp per row merges its chunks' runnings.
__global__ void greedy_pick_merge_kernel(const Running* partials, int chunks, int32_t* ids, float* logprobs) {
  const Running* row = partials + static_cast<int64_t>(blockIdx.x) * chunks;
  Running r{-INFINITY, 0.0f, 0};
  for (int c = static_cast<int>(threadIdx.x); c < chunks; c += 32) r = merge(r, row[c]);
  for (int offset = 16; offset > 0; offset /= 2) r = merge(r, shuffle_down(r, offset));
  if (threadIdx.x != 0) return;
  ids[blockIdx.x] = r.index;
  // log_softmax of the pick: x - max - log Σ e^(x - max), with x = max. A row of nothing above -inf
  // gives id 0 and -inf, as on the host.
  logprobs[blockIdx.x] = r.max > -INFINITY ? -logf(r.sum) : -INFINITY;
}

int pick_chunks(int64_t vocab) { return static_cast<int>((vocab + kPickChunk - 1) / kPickChunk); }

}  // namespace

size_t greedy_pick_scratch_bytes(int64_t rows, int64_t vocab) {
  return static_cast<size_t>(rows * pick_chunks(vocab)) * sizeof(Running);
}

void greedy_pick(const float* logits, int64_t rows, int64_t vocab, void* scratch, int32_t* ids, float* logprobs,
                 cudaStream_t stream) {
  if (rows == 0) return;
  const int chunks = pick_chunks(vocab);
  auto* partials = static_cast<Running*>(scratch);
  greedy_pick_chunks_kernel<<<dim3(chunks, static_cast<unsigned>(rows)), kPickThreads, 0, stream>>>(logits, vocab,
                                                                                                    partials);
  greedy_pick_merge_kernel<<<static_cast<unsigned>(rows), 32, 0, stream>>>(partials, chunks, ids, logprobs);
  check_launch("greedy_pick");
}

}  // namespace moe::cuda
