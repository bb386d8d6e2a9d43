// ModelWorker's side of a weight group (declared in model_worker.h): SGLang's
// /init_weights_update_group, /update_weights_from_distributed and /destroy_weights_update_group.
// The group is NCCL's: it needs the model on a GPU and a build with NCCL; elsewhere every call is
// answered with what it needs, and the weights serving stay as they are.
#include <spdlog/spdlog.h>

#include "worker/model_worker.h"

namespace moe {

msg::WeightsUpdated ModelWorker::weight_group_call(const msg::UpdateWeights& update) {
  msg::WeightsUpdated answer;
  answer.request = update;
  answer.worker_instance = instance_;
  {
    std::lock_guard lock(settings_mutex_);
    answer.model_fingerprint = settings_.model_fingerprint;
  }
  answer.message = "NCCL weight groups need --device cuda in a build with NCCL (moe-serve built where nccl.h and "
                   "libnccl are found); this server runs with --device " +
                   settings_.device + (settings_.device == "cuda" ? " in a build without NCCL" : "") +
                   ": load new weights with /update_weights_from_disk instead";
  spdlog::error("worker: weight group '{}': {}", update.group.group_name, answer.message);
  return answer;
}

}  // namespace moe
