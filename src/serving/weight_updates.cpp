// SchedulerService's side of update_weights_from_disk (declared in scheduler_service.h): the
// scheduler pauses planning, hands the update to the worker between steps, and on success ends
// what the old weights began and forgets the KV they computed. Memory released and resumed
// (release_memory_occupation, resume_memory_occupation) and a weight group's calls (joining and
// leaving change nothing here; a Receive is a load) take the same path.
#include "serving/scheduler_service.h"

namespace moe {
namespace {

// The answer to `update`, refused before it reached the worker.
msg::WeightsUpdated refused(msg::UpdateWeights update, std::string why, const std::string& version) {
  msg::WeightsUpdated answer;
  answer.request = std::move(update);
  answer.message = std::move(why);
  answer.weight_version = version;
  return answer;
}

}  // namespace

void SchedulerService::update_weights(msg::UpdateWeights update) {
  updates_.push_back(std::move(update));
  if (num_stages() > 1)
    fail_weight_updates(
        "update_weights_from_disk, release/resume_memory_occupation and weight groups are not supported with "
        "--pp-size > 1 yet");
}

std::optional<msg::UpdateWeights> SchedulerService::next_weight_update() {
  if (!in_flight_.empty() || !worker_accepted() || update_sent_) return std::nullopt;
  while (!updates_.empty() && msg::loads_weights(updates_.front()) && released_weights_) {
    update_answers_.push_back(refused(std::move(updates_.front()),
                                      "the weights are released (release_memory_occupation): call "
                                      "resume_memory_occupation with the tag \"weights\" before loading new ones",
                                      weights_.weight_version));
    updates_.pop_front();
  }
  if (updates_.empty()) return std::nullopt;
  update_sent_ = true;
  msg::UpdateWeights update = updates_.front();
  update.worker_instance = stages_.front().accepted;
  if (update.memory == msg::MemoryAction::None) {
    // A Receive overlays the tensors it gets on the weights serving now: their checkpoint's.
    if (update.group.action == msg::WeightGroupAction::Receive) update.model_path = weights_.model_path;
    return update;
  }
  update.model_path = weights_.model_path;  // the weights a resume restores
  if (update.memory == msg::MemoryAction::Release) {
    // The pool's contents go (with the weights too where the pool lives in the model, on a GPU):
    // running requests are recomputed after the resume, and no cached prefix may point into it.
    scheduler_.retract_running();
    scheduler_.flush_cache();
  }
  return update;
}

void SchedulerService::on_weights_updated(msg::WeightsUpdated answer) {
  if (update_sent_ && updates_.front().id == answer.request.id) {
    updates_.pop_front();
    update_sent_ = false;
  }
  if (!msg::loads_weights(answer.request)) {
    on_memory_changed(std::move(answer));
    return;
  }
  if (answer.success) {
    const std::string version = answer.request.weight_version.value_or(weights_.weight_version);
    // Ended while the old version is in effect, so their final items carry it.
    const std::vector<std::string> ended = scheduler_.begun_requests(answer.request.abort_all_requests);
    for (const std::string& rid : ended)
      abort(rid, "the model weights were updated to version '" + version +
                     "' while this request was in the engine; what it generated so far came from version '" +
                     weights_.weight_version + "' (send it again)");
    scheduler_.flush_cache();
    for (msg::WorkerSettings& stage : options_.expected_stages) stage.model_fingerprint = answer.model_fingerprint;
    weights_ = {answer.request.model_path, version};
    // SGLang's rule: an update that names no version keeps the label, which then no longer tells
    // these weights from the ones before; the answer says so.
    const std::string label = answer.request.weight_version
                                  ? "as weight version '" + version + "'"
                                  : "keeping the old weight version label '" + version +
                                        "' (the update gave no weight_version)";
    answer.message = "loaded " + weights_.model_path + " " + label + "; " + std::to_string(ended.size()) +
                     " request(s) ended, the prefix cache was flushed";
  }
  answer.weight_version = weights_.weight_version;
  update_answers_.push_back(std::move(answer));
}

void SchedulerService::on_memory_changed(msg::WeightsUpdated answer) {
  if (answer.success && answer.request.memory != msg::MemoryAction::None) {
    const bool released = answer.request.memory == msg::MemoryAction::Release;
    if (answer.request.weights_tag) released_weights_ = released;
    if (answer.request.kv_cache_tag) released_kv_cache_ = released;
  }
  answer.weight_version = weights_.weight_version;
  update_answers_.push_back(std::move(answer));
}

void SchedulerService::fail_weight_updates(const std::string& why) {
  for (msg::UpdateWeights& update : updates_) update_answers_.push_back(refused(std::move(update), why, weights_.weight_version));
  updates_.clear();
  update_sent_ = false;
}

}  // namespace moe
