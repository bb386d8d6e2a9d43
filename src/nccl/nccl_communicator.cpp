#include "nccl/nccl_communicator.h"

#include <nccl.h>

#include <cstring>

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

}  // namespace

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

NcclCommunicator::~NcclCommunicator() {
  if (comm_->comm) ncclCommDestroy(comm_->comm);
}

void NcclCommunicator::all_reduce_sum(float* data, int64_t count) {
  check(ncclAllReduce(data, data, static_cast<size_t>(count), ncclFloat32, ncclSum, comm_->comm, stream_),
        "all-reduce");
}

void NcclCommunicator::all_gather(const void* in, size_t bytes, void* out) {
  check(ncclAllGather(in, out, bytes, ncclUint8, comm_->comm, stream_), "all-gather");
}

void NcclCommunicator::broadcast(void* data, size_t count, NcclElement type, int root) {
  check(ncclBroadcast(data, data, count, nccl_type(type), root, comm_->comm, stream_), "broadcast");
}

}  // namespace moe
