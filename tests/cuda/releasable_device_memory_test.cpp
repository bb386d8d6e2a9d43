// ReleasableDeviceMemory: a release gives the physical memory back to the device (cudaMemGetInfo's
// free memory grows by it) and a restore backs the same address again, where kernels and copies
// work as before. Skipped where no GPU is visible.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

#include "cuda/device.h"
#include "cuda/releasable_device_memory.h"

namespace moe::testing {
namespace {

size_t free_device_bytes() {
  size_t free = 0, total = 0;
  cuda::check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return free;
}

// Writes `value` into every byte through a copy from the host and reads the bytes back.
std::vector<unsigned char> round_trip(cuda::ReleasableDeviceMemory& memory, unsigned char value) {
  std::vector<unsigned char> host(memory.size(), value), back(memory.size());
  cuda::check(cudaMemcpy(memory.data(), host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy up");
  cuda::check(cudaMemcpy(back.data(), memory.data(), back.size(), cudaMemcpyDeviceToHost), "cudaMemcpy down");
  return back;
}

TEST(ReleasableDeviceMemoryTest, ReleaseReturnsTheMemoryAndRestoreKeepsTheAddress) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  constexpr size_t kBytes = size_t{256} << 20;
  cuda::ReleasableDeviceMemory memory(kBytes + 12345);  // not a multiple of the granularity
  ASSERT_TRUE(memory.backed());
  unsigned char* const address = memory.data();
  EXPECT_EQ(round_trip(memory, 7), std::vector<unsigned char>(memory.size(), 7));

  const size_t before = free_device_bytes();
  memory.release();
  EXPECT_FALSE(memory.backed());
  EXPECT_EQ(memory.mapped_bytes(), 0u);
  const size_t released = free_device_bytes();
  EXPECT_GE(released, before + kBytes);
  memory.release();  // nothing more to give back

  memory.restore();
  EXPECT_TRUE(memory.backed());
  EXPECT_EQ(memory.data(), address);
  EXPECT_LE(free_device_bytes() + kBytes, released);  // taken from the device again
  EXPECT_EQ(round_trip(memory, 42), std::vector<unsigned char>(memory.size(), 42));
}

TEST(ReleasableDeviceMemoryTest, AMovedFromObjectOwnsNothing) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  cuda::ReleasableDeviceMemory first(size_t{4} << 20);
  unsigned char* const address = first.data();
  cuda::ReleasableDeviceMemory second = std::move(first);
  EXPECT_EQ(second.data(), address);
  EXPECT_EQ(first.data(), nullptr);  // NOLINT(bugprone-use-after-move): what a move leaves is the point
  EXPECT_EQ(round_trip(second, 3), std::vector<unsigned char>(second.size(), 3));
}

}  // namespace
}  // namespace moe::testing
