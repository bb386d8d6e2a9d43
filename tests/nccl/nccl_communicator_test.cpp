// The NCCL communicator on two GPUs, one thread per GPU: rank 0's group id reaches rank 1 through the
// host communicator's handshake (as across processes and hosts), then an all-reduce and an all-gather
// over device memory give what the host computes. Skips where fewer than two GPUs are visible.
#include <gtest/gtest.h>
#include <cuda_runtime_api.h>

#include <future>
#include <vector>

#include "collective/host_communicator.h"
#include "nccl/nccl_communicator.h"

namespace moe {
namespace {

// Rank r's answers: the all-reduced buffer, then the gathered one, copied back to the host.
std::vector<float> run_rank(collective::HostCommunicator& host, int count) {
  cudaSetDevice(host.rank());
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  NcclCommunicator nccl(host.welcome(), host.rank(), host.size(), stream);
  std::vector<float> mine(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) mine[i] = static_cast<float>((host.rank() + 1) * (i + 1));
  float *data, *gathered;
  cudaMalloc(reinterpret_cast<void**>(&data), count * sizeof(float));
  cudaMalloc(reinterpret_cast<void**>(&gathered), 2 * count * sizeof(float));
  cudaMemcpy(data, mine.data(), count * sizeof(float), cudaMemcpyHostToDevice);
  nccl.all_gather(data, count * sizeof(float), gathered);
  nccl.all_reduce_sum(data, count);
  std::vector<float> answer(static_cast<size_t>(3 * count));
  cudaStreamSynchronize(stream);
  cudaMemcpy(answer.data(), data, count * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(answer.data() + count, gathered, 2 * count * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(data);
  cudaFree(gathered);
  cudaStreamDestroy(stream);
  return answer;
}

TEST(NcclCommunicator, TwoGpusJoinThroughTheHandshakeAndReduce) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 2) GTEST_SKIP() << "needs two GPUs";
  constexpr int kCount = 4096;
  collective::GroupOptions o;
  o.endpoint = "tcp://127.0.0.1:*";
  o.size = 2;
  collective::HostCommunicator hub(o);
  auto other = std::async(std::launch::async, [&] {
    collective::GroupOptions m = o;
    m.endpoint = hub.endpoint();
    m.rank = 1;
    collective::HostCommunicator member(m);
    member.join({});
    return run_rank(member, kCount);
  });
  collective::JoinOptions join;
  join.welcome = nccl_unique_id();
  hub.join(join);
  const std::vector<float> answers[2] = {run_rank(hub, kCount), other.get()};
  for (const auto& answer : answers)
    for (int i = 0; i < kCount; ++i) {
      ASSERT_EQ(answer[i], 3.0f * (i + 1));  // exact: small integers
      ASSERT_EQ(answer[kCount + i], 1.0f * (i + 1));
      ASSERT_EQ(answer[2 * kCount + i], 2.0f * (i + 1));
    }
}

}  // namespace
}  // namespace moe
