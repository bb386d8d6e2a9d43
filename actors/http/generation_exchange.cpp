#include "http/generation_exchange.h"

#include <ctime>

#include "api/response_builder.h"
#include "http/http_replies.h"

namespace moe::http {

GenerationExchange::GenerationExchange(api::GenerationCall call, EngineFrontend& engine,
                                       std::weak_ptr<ResponseChannel> channel)
    : call_(std::move(call)), engine_(engine), channel_(std::move(channel)) {
  rids_.resize(call_.requests.size());
  for (const msg::GenerateRequest& request : call_.requests) unfinished_samples_.push_back(request.sampling.n);
}

void GenerationExchange::start() {
  const std::weak_ptr<GenerationExchange> weak = weak_from_this();
  for (size_t prompt = 0; prompt < call_.requests.size() && !done_; ++prompt) {
    const std::optional<std::string> rid = engine_.submit(
        call_.requests[prompt],  // a copy: the response builder reads the call
        [weak, prompt](const msg::TextOutput& output) {
          if (const auto self = weak.lock()) self->on_output(prompt, output);
        },
        [weak, prompt](const msg::ErrorReply& error) {
          if (const auto self = weak.lock()) self->fail_prompt(prompt, api::from_error_reply(error));
        });
    if (!rid) return;  // refused: the exchange failed
    rids_[prompt] = *rid;
    // The answer is named after the first prompt's rid; outputs come only after submit() returns.
    if (!builder_) builder_ = api::make_response_builder(call_, *rid, static_cast<int64_t>(std::time(nullptr)));
  }
}

void GenerationExchange::cancel() {
  if (done_) return;
  done_ = true;
  abort_unfinished();
}

void GenerationExchange::on_output(size_t prompt, const msg::TextOutput& output) {
  if (done_) return;
  std::vector<nlohmann::json> payloads;
  try {
    payloads = builder_->add(prompt, output);
  } catch (const std::exception& e) {
    fail(api::ApiError(500, std::string("the engine sent an inconsistent output: ") + e.what()));
    return;
  }
  if (output.finish_reason) --unfinished_samples_[prompt];
  const std::shared_ptr<ResponseChannel> out = channel();
  if (!out) return;
  if (call_.stream) stream(payloads, *out);
  if (builder_->finished()) finish();
}

void GenerationExchange::fail_prompt(size_t prompt, const api::ApiError& error) {
  // The engine ended this prompt (or refused it: its rid may belong to another client's live
  // request, which must not be aborted); the exchange's other prompts are aborted with it.
  unfinished_samples_[prompt] = 0;
  fail(error);
}

void GenerationExchange::fail(const api::ApiError& error) {
  if (done_) return;
  done_ = true;
  abort_unfinished();
  const std::shared_ptr<ResponseChannel> out = channel_.lock();
  if (!out) return;
  if (!stream_started_) {
    out->send(error_reply(error));
    return;
  }
  out->write_stream(api::sse_event(api::error_json(error)));
  out->write_stream(api::sse_done());
  out->end_stream();
}

void GenerationExchange::finish() {
  done_ = true;
  const std::shared_ptr<ResponseChannel> out = channel();
  if (!out) return;
  if (!call_.stream) {
    out->send(json_reply(200, builder_->response()));
    return;
  }
  stream(builder_->closing_payloads(), *out);
  out->write_stream(api::sse_done());
  out->end_stream();
}

void GenerationExchange::abort_unfinished() {
  for (size_t prompt = 0; prompt < rids_.size(); ++prompt) {
    if (unfinished_samples_[prompt] > 0 && !rids_[prompt].empty()) engine_.abort(rids_[prompt]);
  }
}

std::shared_ptr<ResponseChannel> GenerationExchange::channel() {
  std::shared_ptr<ResponseChannel> out = channel_.lock();
  if (!out) cancel();
  return out;
}

void GenerationExchange::stream(const std::vector<nlohmann::json>& payloads, ResponseChannel& channel) {
  if (!stream_started_) {
    stream_started_ = true;
    channel.begin_stream();
  }
  for (const nlohmann::json& payload : payloads) channel.write_stream(api::sse_event(payload));
}

}  // namespace moe::http
