#include <algorithm>

#include "moe/moe_ops.h"

namespace moe {

void all_reduce_sum(std::span<float* const> device_buffers, int64_t count) {
  if (device_buffers.size() < 2) return;
  float* total = device_buffers[0];
  for (size_t d = 1; d < device_buffers.size(); ++d)
    for (int64_t i = 0; i < count; ++i) total[i] += device_buffers[d][i];
  for (size_t d = 1; d < device_buffers.size(); ++d) std::copy_n(total, count, device_buffers[d]);
}

}  // namespace moe
