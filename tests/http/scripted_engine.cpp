#include "scripted_engine.h"

#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "api/api_error.h"

namespace moe::http::test {

int32_t ScriptedEngine::expert_at(int64_t position, int layer, int k, int sample, int64_t prompt_tokens) {
  const int64_t own = position >= prompt_tokens ? 10 * sample : 0;  // samples differ after the prompt only
  return static_cast<int32_t>((position * 7 + layer * 3 + k + own) % 64);
}

std::optional<std::string> ScriptedEngine::submit(msg::GenerateRequest request, OutputHandler on_output,
                                                  ErrorHandler on_error) {
  if (request.rid.empty()) request.rid = "scripted-" + std::to_string(++minted_);
  {
    std::lock_guard lock(mutex_);
    submitted_.push_back(request);
  }
  if (request.text == "engine error") {
    msg::ErrorReply error;
    error.rid = request.rid;
    error.message = "scripted refusal";
    error.code = 400;
    on_error(error);
    return std::nullopt;
  }
  int32_t prompt_tokens = 0;
  if (request.text) prompt_tokens = static_cast<int32_t>(request.text->size());
  if (request.input_ids) prompt_tokens = static_cast<int32_t>(request.input_ids->size());
  if (request.messages) {
    for (const msg::ChatMessage& message : *request.messages) prompt_tokens += static_cast<int32_t>(message.content.size());
  }
  const std::string rid = request.rid;
  Running& running = running_[rid];
  running.request = std::move(request);
  running.on_output = std::move(on_output);
  running.on_error = std::move(on_error);
  running.prompt_tokens = prompt_tokens;
  running.timer = std::make_unique<boost::asio::steady_timer>(io_);
  schedule(rid);
  return rid;
}

void ScriptedEngine::schedule(const std::string& rid) {
  Running& running = running_.at(rid);
  running.timer->expires_after(token_interval);
  running.timer->async_wait([this, rid](boost::system::error_code error) {
    if (!error) emit(rid);
  });
}

void ScriptedEngine::emit(const std::string& rid) {
  const auto it = running_.find(rid);
  if (it == running_.end()) return;
  // Copies: the handlers may abort (erasing the entry) or submit (moving the map's nodes' peers).
  const Running& running = it->second;
  const msg::GenerateRequest request = running.request;
  const OutputHandler on_output = running.on_output;
  const ErrorHandler on_error = running.on_error;
  const int32_t prompt_tokens = running.prompt_tokens;
  const int32_t g = it->second.next_token++;
  const bool last = g + 1 == std::min(request.sampling.max_new_tokens, 1000);
  std::vector<msg::TextOutput> outputs;
  for (int sample = 0; sample < request.sampling.n; ++sample) {
    msg::TextOutput& output = outputs.emplace_back();
    output.rid = rid;
    output.index = sample;
    output.text = "w" + std::to_string(g) + " ";
    output.output_ids = {1000 + g};
    if (request.return_logprob) {
      output.output_logprobs = {-0.5f * static_cast<float>(g + 1)};
      output.output_token_texts = {output.text};
    }
    output.prompt_tokens = prompt_tokens;
    output.completion_tokens = g + 1;
    if (request.routing.return_routed_experts) {
      output.routed_experts = g == 0 ? rows(prompt_tokens, sample, 0, prompt_tokens)
                                     : rows(prompt_tokens, sample, prompt_tokens + g - 1, 1);
    }
    if (last) output.finish_reason = msg::FinishReason{};  // length
    output.weight_version = weight_version_;
  }
  const bool fails = request.text == "fail after one";
  if (last || fails) running_.erase(it);
  for (const msg::TextOutput& output : outputs) on_output(output);
  if (fails) {
    msg::ErrorReply error;
    error.rid = rid;
    error.message = "scripted engine fault";
    error.code = 500;
    on_error(error);
    return;
  }
  if (running_.count(rid) != 0) schedule(rid);
}

msg::EncodedArray ScriptedEngine::rows(int32_t prompt_tokens, int sample, int64_t first, int64_t count) {
  msg::EncodedArray array;
  array.raw = true;
  array.dtype = "int32";
  array.shape = {count, kLayers, kTopK};
  for (int64_t p = first; p < first + count; ++p) {
    for (int layer = 0; layer < kLayers; ++layer) {
      for (int k = 0; k < kTopK; ++k) {
        const int32_t id = expert_at(p, layer, k, sample, prompt_tokens);
        array.data.append(reinterpret_cast<const char*>(&id), 4);
      }
    }
  }
  return array;
}

void ScriptedEngine::abort(const std::string& rid) {
  running_.erase(rid);
  std::lock_guard lock(mutex_);
  aborted_.push_back(rid);
  changed_.notify_all();
}

size_t ScriptedEngine::abort_request(const std::string& rid, bool every_client) {
  abort_requests_every_client_.push_back(every_client);
  std::vector<std::string> rids;
  for (const auto& [live, running] : running_)
    if (rid.empty() || live == rid) rids.push_back(live);
  for (const std::string& live : rids) end_aborted(live);
  return rids.size();
}

void ScriptedEngine::end_aborted(const std::string& rid) {
  const Running running = std::move(running_.at(rid));
  running_.erase(rid);
  for (int sample = 0; sample < running.request.sampling.n; ++sample) {
    msg::TextOutput output;
    output.rid = rid;
    output.index = sample;
    output.prompt_tokens = running.prompt_tokens;
    output.completion_tokens = running.next_token;
    output.finish_reason = msg::FinishReason::abort("aborted by POST /abort_request");
    output.weight_version = weight_version_;
    running.on_output(output);
  }
}

void ScriptedEngine::update_weights(msg::UpdateWeights update, WeightsUpdatedHandler on_done) {
  boost::asio::post(io_, [this, update = std::move(update), on_done = std::move(on_done)] {
    msg::WeightsUpdated answer;
    answer.request = update;
    answer.success = update.model_path != "/broken";
    answer.message = answer.success ? "loaded" : "/broken has no config.json";
    if (answer.success && update.weight_version) weight_version_ = *update.weight_version;
    answer.weight_version = weight_version_;
    on_done(answer);
  });
}

std::vector<int32_t> ScriptedEngine::tokenize(const std::string& text, const std::string& field) const {
  if (text.size() > kMaxTokenizeBytes) throw api::ApiError(400, field + " is over the scripted limit", field);
  std::vector<int32_t> ids;
  for (unsigned char byte : text) ids.push_back(byte);
  return ids;
}

std::string ScriptedEngine::detokenize(const std::vector<int32_t>& ids, const std::string& field) const {
  std::string text;
  for (int32_t id : ids) {
    if (id >= 256) throw api::ApiError(400, field + ": token id " + std::to_string(id) + " is outside the vocabulary", field);
    text += static_cast<char>(id);
  }
  return text;
}

api::ModelInfo ScriptedEngine::model_info() const {
  return {"/models/test", "/tokenizers/test", weight_version_, "Qwen3MoeForCausalLM", kLayers, 64, kTopK, 4096};
}

nlohmann::json ScriptedEngine::server_info() const { return {{"max_total_num_tokens", 4096}}; }

api::ServerStats ScriptedEngine::stats() const {
  api::ServerStats stats;
  std::lock_guard lock(mutex_);
  stats.requests_total = submitted_.size();
  stats.kv_slots_total = 4096;
  return stats;
}

std::vector<msg::GenerateRequest> ScriptedEngine::submitted() const {
  std::lock_guard lock(mutex_);
  return submitted_;
}

std::vector<std::string> ScriptedEngine::aborted() const {
  std::lock_guard lock(mutex_);
  return aborted_;
}

bool ScriptedEngine::wait_for_abort(std::chrono::milliseconds limit) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, limit, [this] { return !aborted_.empty(); });
}

}  // namespace moe::http::test
