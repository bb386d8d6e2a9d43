// ModelWorker's side of release_memory_occupation and resume_memory_occupation (declared in
// model_worker.h): memory given back between rollouts, so that a trainer sharing the machine can use
// it, and taken again before the next rollout.
#include <malloc.h>

#include <spdlog/spdlog.h>

#include "common/error.h"
#include "model/model_fingerprint.h"
#include "worker/model_worker.h"

namespace moe {

msg::WeightsUpdated ModelWorker::change_memory(const msg::UpdateWeights& update) {
  msg::WeightsUpdated answer;
  answer.request = update;
  answer.worker_instance = instance_;
  try {
    answer.message = update.memory == msg::MemoryAction::Release ? release_memory(update) : resume_memory(update);
    answer.success = true;
  } catch (const std::exception& e) {
    spdlog::error("worker: {}", e.what());
    answer.message = e.what();
  }
  {
    std::lock_guard lock(settings_mutex_);
    answer.model_fingerprint = settings_.model_fingerprint;
  }
  return answer;
}

std::string ModelWorker::release_memory(const msg::UpdateWeights& update) {
  std::string done;
  if (update.kv_cache_tag && !kv_released_) {
    // With the weights released too the pool may be gone with the model (a device pool lives in it).
    if (model_) model_->release_kv_memory(kv_);
    kv_released_ = true;
    done += "the KV pool";
  }
  if (update.weights_tag && model_) {
    // Read before the weights go, to tell at resume whether the files still hold them.
    released_fingerprint_ = model_fingerprint(update.model_path);
    drop_capturer();
    hidden_drafter_.reset();  // it may run the model's next-token-prediction layer (an EAGLE-3 head stays)
    model_.reset();
    // Freed blocks below malloc's mmap threshold stay in its heap; hand their pages back too.
    malloc_trim(0);
    done += std::string(done.empty() ? "" : " and ") + "the weights";
  }
  return done.empty() ? "nothing to release: the memory tagged is released already" : "released " + done;
}

std::string ModelWorker::resume_memory(const msg::UpdateWeights& update) {
  std::string done;
  if (update.weights_tag && !model_) {
    if (!load_checkpoint_) throw Error("this model worker cannot load weights again");
    if (model_fingerprint(update.model_path) != released_fingerprint_)
      throw Error("resuming the weights failed: the checkpoint at " + update.model_path +
                  " changed since the weights were released, so it no longer holds the weights last loaded; the "
                  "weights stay released (load new ones with update_weights_from_disk after restoring these, or "
                  "restart the server)");
    install(load_checkpoint_(update.model_path, std::nullopt));
    done += "the weights of " + update.model_path;
  }
  if (update.kv_cache_tag && kv_released_) {
    if (model_) model_->resume_kv_memory(kv_);
    kv_released_ = false;
    done += std::string(done.empty() ? "" : " and ") + "the KV pool";
  }
  return done.empty() ? "nothing to resume: the memory tagged is not released" : "resumed " + done;
}

}  // namespace moe
