// SchedulerService's side of update_weights_from_disk (declared in scheduler_service.h): the
// scheduler pauses planning, hands the update to the worker between steps, and on success ends
// what the old weights began and forgets the KV they computed.
#include "serving/scheduler_service.h"

namespace moe {

void SchedulerService::update_weights(msg::UpdateWeights update) {
  updates_.push_back(std::move(update));
  if (num_stages() > 1) fail_weight_updates("update_weights_from_disk is not supported with --pp-size > 1 yet");
}

std::optional<msg::UpdateWeights> SchedulerService::next_weight_update() {
  if (!in_flight_.empty() || !worker_accepted() || updates_.empty() || update_sent_) return std::nullopt;
  update_sent_ = true;
  msg::UpdateWeights update = updates_.front();
  update.worker_instance = stages_.front().accepted;
  return update;
}

void SchedulerService::on_weights_updated(msg::WeightsUpdated answer) {
  if (update_sent_ && updates_.front().id == answer.request.id) {
    updates_.pop_front();
    update_sent_ = false;
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

void SchedulerService::fail_weight_updates(const std::string& why) {
  for (msg::UpdateWeights& update : updates_) {
    msg::WeightsUpdated answer;
    answer.request = std::move(update);
    answer.message = why;
    answer.weight_version = weights_.weight_version;
    update_answers_.push_back(std::move(answer));
  }
  updates_.clear();
  update_sent_ = false;
}

}  // namespace moe
