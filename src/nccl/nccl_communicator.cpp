#include "nccl/nccl_communicator.h"

#include <nccl.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "common/error.h"

namespace moe {
namespace {

// ncclGetErrorString names only the kind ("invalid usage"); the last error says which (a duplicate GPU,
// a peer that is gone). NCCL ignores the communicator argument of ncclGetLastError.
void check(ncclResult_t result, const char* what) {
  if (result == ncclSuccess) return;
  std::string message = std::string("NCCL ") + what + ": " + ncclGetErrorString(result);
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && *last != '\0') message += std::string(" (") + last + ")";
  throw Error(message);
}

ncclDataType_t nccl_type(NcclElement type) {
  switch (type) {
    case NcclElement::BFloat16: return ncclBfloat16;
    case NcclElement::Float16: return ncclFloat16;
    case NcclElement::Float32: return ncclFloat32;
  }
  throw Error("an element type NCCL is not given");
}

// Registers NCCL as the program's device groups (parallel/device_group.h). A program linking moe_nccl
// keeps this object: the library asks the linker for moe_nccl_linked.
std::unique_ptr<DeviceGroup> join_nccl_group(const std::string& group_id, int rank, int size, void* stream) {
  return std::make_unique<NcclCommunicator>(group_id, rank, size, static_cast<cudaStream_t>(stream));
}

const bool registered = [] {
  device_group_backend() = {nccl_unique_id, join_nccl_group};
  return true;
}();

}  // namespace

extern "C" const int moe_nccl_linked = registered ? 1 : 0;

struct NcclCommunicator::Comm {
  ncclComm_t comm = nullptr;
};

std::string nccl_unique_id() {
  ncclUniqueId id;
  check(ncclGetUniqueId(&id), "could not make a group id");
  return std::string(id.internal, sizeof id.internal);
}

NcclCommunicator::NcclCommunicator(const std::string& unique_id, int rank, int size, cudaStream_t stream)
    : comm_(std::make_unique<Comm>()), rank_(rank), size_(size), stream_(stream) {
  ncclUniqueId id;
  if (unique_id.size() != sizeof id.internal)
    throw Error("an NCCL group id has " + std::to_string(sizeof id.internal) + " bytes, got " +
                std::to_string(unique_id.size()));
  std::memcpy(id.internal, unique_id.data(), sizeof id.internal);
  check(ncclCommInitRank(&comm_->comm, size, id, rank), "could not join the group");
}

// Aborted rather than destroyed: ncclCommDestroy waits for the other ranks to destroy theirs too, and a
// server stops its own ranks only after its model (this communicator) is gone.
NcclCommunicator::~NcclCommunicator() {
  if (comm_->comm) ncclCommAbort(comm_->comm);
}

ncclComm* NcclCommunicator::live_comm() const {
  if (!comm_->comm) throw Error("the GPU group was aborted after a rank failed; restart the server's ranks");
  return comm_->comm;
}

void NcclCommunicator::all_reduce_sum(float* data, int64_t count) {
  check(ncclAllReduce(data, data, static_cast<size_t>(count), ncclFloat32, ncclSum, live_comm(), stream_),
        "all-reduce");
}

void NcclCommunicator::all_gather(const void* in, size_t bytes, void* out) {
  check(ncclAllGather(in, out, bytes, ncclUint8, live_comm(), stream_), "all-gather");
}

void NcclCommunicator::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const cudaError_t done = cudaStreamQuery(stream_);
    if (done == cudaSuccess) return;
    if (done != cudaErrorNotReady) throw Error(std::string("CUDA step: ") + cudaGetErrorString(done));
    ncclResult_t state = ncclSuccess;
    check(ncclCommGetAsyncError(comm_->comm, &state), "error query");
    const bool late = std::chrono::steady_clock::now() > deadline;
    if ((state != ncclSuccess && state != ncclInProgress) || late) {
      ncclCommAbort(comm_->comm);
      comm_->comm = nullptr;
      if (late)
        throw Error("the GPU group of " + std::to_string(size_) + " ranks made no progress for " +
                    std::to_string(timeout.count()) + " ms (a rank stopped?); its communicator is aborted");
      check(state, "a rank of the group failed");
    }
    std::this_thread::yield();
  }
}

void NcclCommunicator::broadcast(void* data, size_t count, NcclElement type, int root) {
  check(ncclBroadcast(data, data, count, nccl_type(type), root, live_comm(), stream_), "broadcast");
}

}  // namespace moe
