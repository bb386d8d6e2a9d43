#include "http/health_probe.h"

#include "api/api_error.h"
#include "http/http_replies.h"

namespace moe::http {

HealthProbe::HealthProbe(EngineFrontend& engine, std::weak_ptr<ResponseChannel> channel)
    : engine_(engine), channel_(std::move(channel)) {}

void HealthProbe::start() {
  msg::GenerateRequest request;
  request.input_ids = std::vector<int32_t>{0};  // every vocabulary has id 0
  request.sampling.max_new_tokens = 1;
  request.sampling.temperature = 0.0f;
  request.sampling.ignore_eos = true;
  const std::weak_ptr<HealthProbe> weak = weak_from_this();
  const std::optional<std::string> rid = engine_.submit(
      std::move(request),
      [weak](const msg::TextOutput& output) {
        const auto self = weak.lock();
        if (!self || !output.finish_reason) return;
        if (output.finish_reason->kind == msg::FinishKind::Abort)
          self->answer(error_reply(api::ApiError(503, "the probe was aborted: " + output.finish_reason->message)));
        else
          self->answer(HttpReply{200, "text/plain; charset=utf-8", "", {}});
      },
      [weak](const msg::ErrorReply& error) {
        if (const auto self = weak.lock())
          self->answer(error_reply(api::ApiError(503, "generation failed: " + error.message)));
      });
  if (rid) rid_ = *rid;
}

void HealthProbe::cancel() {
  if (done_) return;
  done_ = true;
  if (!rid_.empty()) engine_.abort(rid_);
}

void HealthProbe::answer(HttpReply reply) {
  if (done_) return;
  done_ = true;
  if (const auto channel = channel_.lock()) channel->send(std::move(reply));
}

}  // namespace moe::http
