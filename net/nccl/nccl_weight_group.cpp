// The NCCL side of a trainer's weight group (worker/weight_group_link.h), built only where NCCL is
// (src/CMakeLists.txt finds nccl.h and libnccl) and registered when a program links it: moe-serve
// asks the linker for moe_nccl_weight_group_linked, so this object is never left out of the archive.
//
// Joining: the trainer's rendezvous as a torch rank (collective/torch_rendezvous.h), then, in the
// background, the group's first communicator as soon as rank 0 publishes its NCCL id: torch makes
// it at the group's first collective (lazily, the usual case: the first broadcast of the first
// update) or during its init when given a device_id, and either order works because the engine's
// join has answered before. Receiving: one ncclBroadcast from rank 0 per tensor, in the order of
// `names`, with torch's count and type, into a device buffer, then to the host.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collective/torch_rendezvous.h"
#include "common/error.h"
#include "common/weight_group_call.h"
#include "kernels/weight.h"
#include "nccl/nccl_communicator.h"
#include "worker/weight_group_link.h"

extern "C" const int moe_nccl_weight_group_linked = 1;

namespace moe {
namespace {

using namespace std::chrono_literals;

// Connecting to the trainer's store (it may open it after the engine is asked to join), and each query.
constexpr std::chrono::milliseconds kStoreTimeout = 300s;
// From a Receive, the longest wait for the group's communicator (rank 0's id, then NCCL's join).
constexpr std::chrono::seconds kCommunicatorTimeout = 600s;

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw Error(std::string("CUDA ") + what + ": " + cudaGetErrorString(status));
}

struct ReceivedType {
  DType dtype;
  NcclElement element;
};

ReceivedType received_type(const std::string& torch_name) {
  const std::optional<std::string> name = weight_dtype_name(torch_name);
  if (name == "bfloat16") return {DType::BF16, NcclElement::BFloat16};
  if (name == "float16") return {DType::F16, NcclElement::Float16};
  if (name == "float32") return {DType::F32, NcclElement::Float32};
  throw Error("a tensor of dtype \"" + torch_name + "\" cannot be received");  // refused at the front door
}

class NcclWeightGroup final : public WeightGroupLink {
 public:
  explicit NcclWeightGroup(const msg::WeightGroupCall& call)
      : rendezvous_(call.master_address, static_cast<uint16_t>(call.master_port), kStoreTimeout),
        group_name_(call.group_name),
        rank_(call.rank_offset),
        size_(call.world_size) {
    check_cuda(cudaGetDevice(&device_), "cudaGetDevice");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    joined_ = std::async(std::launch::async, [this] { join(); });
  }

  ~NcclWeightGroup() override {
    stop_ = true;
    joined_.wait();  // a join inside ncclCommInitRank ends only when every rank has joined
    communicator_.reset();
    if (buffer_ != nullptr) cudaFree(buffer_);
    cudaStreamDestroy(stream_);
  }

  std::vector<TensorToWrite> receive(const msg::WeightGroupCall& call) override {
    if (joined_.wait_for(kCommunicatorTimeout) != std::future_status::ready)
      throw Error("the trainer's rank 0 published no NCCL id under the TCPStore key " +
                  collective::torch_nccl_id_key(group_name_, 0) + " within " +
                  std::to_string(kCommunicatorTimeout.count()) + " s (has it broadcast the first tensor?)");
    if (!communicator_) throw Error("joining the group's NCCL communicator failed: " + failure_);
    std::vector<TensorToWrite> tensors;
    for (size_t i = 0; i < call.names.size(); ++i) {
      const ReceivedType type = received_type(call.dtypes[i]);
      size_t count = 1;
      for (int64_t size : call.shapes[i]) count *= static_cast<size_t>(size);
      const size_t bytes = count * dtype_size(type.dtype);
      TensorToWrite tensor{call.names[i], type.dtype, call.shapes[i], std::vector<uint8_t>(bytes)};
      reserve(bytes);
      communicator_->broadcast(buffer_, count, type.element, 0);
      if (bytes > 0)
        check_cuda(cudaMemcpyAsync(tensor.bytes.data(), buffer_, bytes, cudaMemcpyDeviceToHost, stream_),
                   "copying a received tensor");
      check_cuda(cudaStreamSynchronize(stream_), "receiving a tensor");
      tensors.push_back(std::move(tensor));
    }
    return tensors;
  }

 private:
  // On the join's own thread: waits for rank 0's id and joins the group's communicator.
  void join() {
    try {
      check_cuda(cudaSetDevice(device_), "cudaSetDevice");
      const std::optional<std::string> id = rendezvous_.nccl_unique_id(group_name_, 0, stop_);
      if (!id) return;  // left before rank 0 published it
      communicator_ = std::make_unique<NcclCommunicator>(*id, rank_, size_, stream_);
    } catch (const std::exception& e) {
      failure_ = e.what();
    }
  }

  // Device memory for the largest tensor received so far.
  void reserve(size_t bytes) {
    bytes = std::max<size_t>(bytes, 1);
    if (bytes <= capacity_) return;
    if (buffer_ != nullptr) check_cuda(cudaFree(buffer_), "cudaFree");
    buffer_ = nullptr;
    capacity_ = 0;
    check_cuda(cudaMalloc(&buffer_, bytes), "allocating a buffer for received tensors");
    capacity_ = bytes;
  }

  collective::TorchRendezvous rendezvous_;
  std::string group_name_;
  int rank_;
  int size_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  std::atomic<bool> stop_{false};
  std::future<void> joined_;
  std::unique_ptr<NcclCommunicator> communicator_;  // set by the join
  std::string failure_;                             // why the join failed
  void* buffer_ = nullptr;
  size_t capacity_ = 0;
};

std::unique_ptr<WeightGroupLink> join_nccl_weight_group(const msg::WeightGroupCall& call) {
  return std::make_unique<NcclWeightGroup>(call);
}

const bool registered = (register_weight_group_joiner(&join_nccl_weight_group), true);

}  // namespace
}  // namespace moe
