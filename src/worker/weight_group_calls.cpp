// ModelWorker's side of a weight group (declared in model_worker.h): SGLang's
// /init_weights_update_group, /update_weights_from_distributed and /destroy_weights_update_group.
// The group is NCCL's (weight_group_link.h): it needs the model on a GPU and a build with NCCL;
// elsewhere every call is answered with what it needs. A Receive's tensors are laid over the
// checkpoint serving now (model/checkpoint_overlay.h) and loaded as update_weights_from_disk loads:
// the same conversions to the model's layouts, the same checks, the same swap between steps.
#include <unistd.h>

#include <filesystem>

#include <spdlog/spdlog.h>

#include "common/error.h"
#include "model/checkpoint_overlay.h"
#include "worker/model_worker.h"
#include "worker/weight_group_link.h"

namespace moe {
namespace {

namespace fs = std::filesystem;

// Where a Receive's overlays are written: the system's temporary directory, one folder per
// process. Each Receive writes a new overlay and removes the one it replaced.
fs::path overlay_root() { return fs::temp_directory_path() / ("moe-weight-groups-" + std::to_string(::getpid())); }

bool is_overlay_of_this_process(const std::string& path) {
  return fs::path(path).parent_path() == overlay_root();
}

}  // namespace

msg::WeightsUpdated ModelWorker::weight_group_call(const msg::UpdateWeights& update) {
  const msg::WeightGroupCall& call = update.group;
  msg::WeightsUpdated answer;
  answer.request = update;
  answer.worker_instance = instance_;
  {
    std::lock_guard lock(settings_mutex_);
    answer.model_fingerprint = settings_.model_fingerprint;
  }
  const WeightGroupJoiner join = weight_group_joiner();
  if (settings_.device != "cuda" || join == nullptr) {
    answer.message = "NCCL weight groups need --device cuda in a build with NCCL (moe-serve built where nccl.h and "
                     "libnccl are found); this server runs with --device " +
                     settings_.device + (settings_.device == "cuda" ? " in a build without NCCL" : "") +
                     ": load new weights with /update_weights_from_disk instead";
    spdlog::error("worker: weight group '{}': {}", call.group_name, answer.message);
    return answer;
  }
  try {
    const auto group = weight_groups_.find(call.group_name);
    if (call.action == msg::WeightGroupAction::Join) {
      if (group != weight_groups_.end())
        throw Error("this engine is in weight group '" + call.group_name + "' already (destroy it first)");
      weight_groups_[call.group_name] = join(call);
      answer.message = "joined weight group '" + call.group_name + "' as rank " + std::to_string(call.rank_offset) +
                       " of " + std::to_string(call.world_size);
    } else if (group == weight_groups_.end()) {
      throw Error("this engine is in no weight group named '" + call.group_name +
                  "' (init_weights_update_group first)");
    } else if (call.action == msg::WeightGroupAction::Leave) {
      weight_groups_.erase(group);
      answer.message = "left weight group '" + call.group_name + "'";
    } else {
      return receive_from_group(update, *group->second);
    }
    answer.success = true;
  } catch (const std::exception& e) {
    answer.message = e.what();
    spdlog::error("worker: weight group '{}': {}", call.group_name, answer.message);
  }
  return answer;
}

msg::WeightsUpdated ModelWorker::receive_from_group(const msg::UpdateWeights& update, WeightGroupLink& group) {
  // update.model_path is the checkpoint serving now (the scheduler's): the received tensors go over it.
  msg::UpdateWeights load = update;
  load.group = {};
  load.model_path = (overlay_root() / std::to_string(++overlays_written_)).string();
  try {
    const std::vector<TensorToWrite> tensors = group.receive(update.group);
    write_checkpoint_overlay(update.model_path, tensors, load.model_path);
  } catch (const std::exception& e) {
    fs::remove_all(load.model_path);
    msg::WeightsUpdated answer;
    answer.request = update;
    answer.worker_instance = instance_;
    answer.message = std::string("receiving from weight group '") + update.group.group_name + "' failed: " + e.what();
    spdlog::error("worker: {}", answer.message);
    return answer;
  }
  msg::WeightsUpdated answer = update_weights(load);
  if (!answer.success) {
    fs::remove_all(load.model_path);
  } else if (is_overlay_of_this_process(update.model_path)) {
    fs::remove_all(update.model_path);  // the overlay it replaced: its replaced tensors were copied over
  }
  answer.request = update;
  answer.request.model_path = load.model_path;  // what the scheduler names from now on (a resume reloads it)
  return answer;
}

}  // namespace moe
