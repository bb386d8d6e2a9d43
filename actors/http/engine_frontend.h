#pragma once
// What the HTTP server needs from the engine, implemented by the tokenizer actor. Light on
// purpose (no Asio, no Beast): the actor includes it, the server calls it.
#include <functional>
#include <string>

#include "api/server_stats.h"
#include "moe/messages.h"

namespace moe::http {

// Every call and every callback happens on the io_context thread the server runs on.
class EngineFrontend {
 public:
  using OutputHandler = std::function<void(const msg::TextOutput&)>;
  using ErrorHandler = std::function<void(const msg::ErrorReply&)>;

  virtual ~EngineFrontend() = default;

  // Starts `request` (its rid is set and unique; routing.raw is true when routing is asked).
  // `on_output` gets each TextOutput of the rid, every sample index 0..n-1, each holding what is
  // new since that sample's previous one; a sample's last has finish_reason. `on_error` ends the
  // request instead (code = HTTP status: 400 bad request, 503 overloaded, 500 engine fault).
  // After all n finals or one error, neither is called again; either may be called from within
  // submit(). Each sample's routing rows start at position 0 unless routed_experts_start_len says
  // otherwise, so its first prompt_tokens rows are the prompt's; TextOutput.prompt_tokens is set
  // on every output.
  virtual void submit(msg::GenerateRequest request, OutputHandler on_output, ErrorHandler on_error) = 0;

  // The client of `rid` went away: stop it and free what it holds. Callbacks of `rid` may still
  // arrive and are ignored; aborting a finished or unknown rid does nothing.
  virtual void abort(const std::string& rid) = 0;

  // The name OpenAI requests must give as `model`, and GET /v1/models lists.
  virtual std::string model_name() const = 0;
  // For GET /metrics.
  virtual api::ServerStats stats() const = 0;
  // For GET /expert_load and POST /expert_load/reset, whose `reset` zeroes the counts in the same
  // step as the read; throws api::ApiError (400) when the engine keeps no counts.
  virtual api::ExpertLoad expert_load(bool reset) = 0;
  // True once the engine stops taking requests: generation calls and /health answer 503.
  virtual bool shutting_down() const = 0;
  // Why the engine cannot generate right now (no model worker connected, a refused or silent one);
  // empty when it can. /health answers 503 with it.
  virtual std::string health_problem() const = 0;
};

}  // namespace moe::http
