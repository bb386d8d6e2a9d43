// --load-format dummy's weights made where they live: each element from random_element.h's rule,
// the same bits the host writes for the seed (moe-make-checkpoint, the CPU's Checkpoint::dummy).
#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "model/random_element.h"

namespace moe::cuda {
namespace {

__global__ void random_bf16_block_kernel(RandomElementRule rule, int64_t full_cols, int64_t row0, int64_t col0,
                                         int64_t rows, int64_t cols, uint16_t* out) {
  MOE_GRID_STRIDE(i, rows * cols) {
    const int64_t r = i / cols, c = i % cols;
    out[i] = bf16_bits_nearest_even(random_element(rule, (row0 + r) * full_cols + col0 + c));
  }
}

}  // namespace

void random_bf16_block(const RandomElementRule& rule, int64_t full_cols, int64_t row0, int64_t col0, int64_t rows,
                       int64_t cols, uint16_t* out, cudaStream_t stream) {
  if (rows * cols == 0) return;
  random_bf16_block_kernel<<<blocks_for(rows * cols), kThreads, 0, stream>>>(rule, full_cols, row0, col0, rows, cols,
                                                                              out);
  check_launch("random_bf16_block");
}

}  // namespace moe::cuda
