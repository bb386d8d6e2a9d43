#pragma once
// What the HTTP server needs from the engine, implemented by actors::HttpFrontend
// (pipeline/http_frontend.h), which goes through the tokenizer actor. Light on purpose (no Asio, no
// Beast): the implementer includes it, the server calls it.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "api/native_calls.h"
#include "api/server_stats.h"
#include "moe/messages.h"

namespace moe::http {

// Every call and every callback happens on the io_context thread the server runs on.
class EngineFrontend {
 public:
  using OutputHandler = std::function<void(const msg::TextOutput&)>;
  using ErrorHandler = std::function<void(const msg::ErrorReply&)>;
  using WeightsUpdatedHandler = std::function<void(const msg::WeightsUpdated&)>;

  virtual ~EngineFrontend() = default;

  // Starts `request` (routing.raw is true when routing is asked) and returns its rid: the one it
  // carries, or, when it carries none, the one the front door minted; none when it was refused.
  // `on_output` gets each TextOutput of the rid, every sample index 0..n-1, each holding what is
  // new since that sample's previous one; a sample's last has finish_reason. `on_error` ends the
  // request instead (code = HTTP status: 400 bad request, 503 overloaded, 500 engine fault).
  // After all n finals or one error, neither is called again; `on_error` may be called from within
  // submit(), `on_output` never. Each sample's routing rows start at position 0 unless routed_experts_start_len says
  // otherwise, so its first prompt_tokens rows are the prompt's; TextOutput.prompt_tokens is set
  // on every output.
  virtual std::optional<std::string> submit(msg::GenerateRequest request, OutputHandler on_output,
                                            ErrorHandler on_error) = 0;

  // The client of `rid` went away: stop it and free what it holds. Callbacks of `rid` may still
  // arrive and are ignored; aborting a finished or unknown rid does nothing.
  virtual void abort(const std::string& rid) = 0;

  // POST /abort_request: ends HTTP request `rid` (every live HTTP request when empty) with finish
  // reason abort; its own client gets that reply. With `every_client` (the admin key), the
  // requests of that rid (or all) of every client, ZeroMQ's too. Returns how many requests were live.
  virtual size_t abort_request(const std::string& rid, bool every_client) = 0;

  // POST /update_weights_from_disk: loads new weights between two steps (the running requests end);
  // `on_done` gets the answer, a failed one too, once the load is over (seconds or minutes later).
  virtual void update_weights(msg::UpdateWeights update, WeightsUpdatedHandler on_done) = 0;
  // POST /pause_generation: no step starts until continue_generation(); msg::PauseMode says what
  // becomes of the requests in the engine. Returns SGLang's message.
  virtual std::string pause_generation(msg::PauseMode mode) = 0;
  // POST /continue_generation.
  virtual std::string continue_generation() = 0;
  // POST /update_weight_version: relabels the weights serving now (model_info() reads the label),
  // ending every live request first when `abort_all`.
  virtual void update_weight_version(const std::string& version, bool abort_all) = 0;
  // POST /flush_cache: evicts the prefix cache; returns the cached tokens evicted.
  virtual int64_t flush_cache() = 0;
  // POST /tokenize: the ids /generate gives `text`; a text longer than a prompt may be is an
  // api::ApiError (400) naming `field`.
  virtual std::vector<int32_t> tokenize(const std::string& text, const std::string& field) const = 0;
  // POST /detokenize: the text of `ids`, special tokens kept; an id outside the vocabulary is an
  // api::ApiError (400) naming `field`.
  virtual std::string detokenize(const std::vector<int32_t>& ids, const std::string& field) const = 0;

  // The name OpenAI requests must give as `model`, and GET /v1/models lists.
  virtual std::string model_name() const = 0;
  // GET /get_model_info (and /v1/models' max_model_len, /tokenize's).
  virtual api::ModelInfo model_info() const = 0;
  // GET /get_server_info: the flags in effect and the sizes the engine derived from them.
  virtual nlohmann::json server_info() const = 0;
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
