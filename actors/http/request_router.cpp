#include "http/request_router.h"

#include <array>
#include <ctime>
#include <exception>
#include <functional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/response_builder.h"
#include "api/server_stats.h"
#include "http/http_replies.h"

namespace moe::http {
namespace {

// What a route leads to.
enum class Endpoint {
  Generate,
  Completion,
  ChatCompletion,
  Models,
  Health,
  Metrics,
  ExpertLoad,
  ExpertLoadReset,
  UpdateWeights,
  AbortRequest,
  FlushCache,
  HealthGenerate,
  Tokenize,
  Detokenize,
  ModelInfo,
  ServerInfo,
  PauseGeneration,
  ContinueGeneration,
  GetWeightVersion,
  UpdateWeightVersion,
  ReleaseMemory,
  ResumeMemory,
  InitWeightGroup,
  UpdateFromWeightGroup,
  DestroyWeightGroup,
};

// A path served with one method.
struct Route {
  std::string_view path;
  std::string_view method;
  Endpoint endpoint;
};

constexpr std::array kRoutes = {
    Route{"/generate", "POST", Endpoint::Generate},
    Route{"/v1/completions", "POST", Endpoint::Completion},
    Route{"/v1/chat/completions", "POST", Endpoint::ChatCompletion},
    Route{"/v1/models", "GET", Endpoint::Models},
    Route{"/health", "GET", Endpoint::Health},
    Route{"/metrics", "GET", Endpoint::Metrics},
    Route{"/expert_load", "GET", Endpoint::ExpertLoad},
    // Reads and zeroes the counts: a state change, so POST (the reply is what the window held).
    Route{"/expert_load/reset", "POST", Endpoint::ExpertLoadReset},
    Route{"/update_weights_from_disk", "POST", Endpoint::UpdateWeights},
    Route{"/abort_request", "POST", Endpoint::AbortRequest},
    Route{"/flush_cache", "POST", Endpoint::FlushCache},
    Route{"/health_generate", "GET", Endpoint::HealthGenerate},
    Route{"/tokenize", "POST", Endpoint::Tokenize},
    Route{"/detokenize", "POST", Endpoint::Detokenize},
    Route{"/get_model_info", "GET", Endpoint::ModelInfo},
    Route{"/get_server_info", "GET", Endpoint::ServerInfo},
    Route{"/pause_generation", "POST", Endpoint::PauseGeneration},
    Route{"/continue_generation", "POST", Endpoint::ContinueGeneration},
    Route{"/get_weight_version", "GET", Endpoint::GetWeightVersion},
    Route{"/update_weight_version", "POST", Endpoint::UpdateWeightVersion},
    Route{"/release_memory_occupation", "POST", Endpoint::ReleaseMemory},
    Route{"/resume_memory_occupation", "POST", Endpoint::ResumeMemory},
    Route{"/init_weights_update_group", "POST", Endpoint::InitWeightGroup},
    Route{"/update_weights_from_distributed", "POST", Endpoint::UpdateFromWeightGroup},
    Route{"/destroy_weights_update_group", "POST", Endpoint::DestroyWeightGroup},
};

// Bodies this large are parsed on the parse thread: about 15 ms of parsing a MiB, which the front's
// thread (every other client's requests and answers) takes for smaller ones.
constexpr size_t kParseOnFrontBytes = 1 << 20;

// Runs `answer`, turning what it throws into the client's error reply: ApiErrors as they say, any
// other exception a 500 (a fault of the engine's, not the client's: the client still gets an answer).
void answer_errors_of(const std::function<void()>& answer, ResponseChannel& channel) {
  try {
    answer();
  } catch (const api::ApiError& error) {
    channel.send(error_reply(error));
  } catch (const std::exception& error) {
    channel.send(error_reply(api::ApiError(500, error.what())));
  }
}

// A generation call read from a body in JSON (the api's own parser; a chat keeps the client's key
// order so that tools reach the chat template as the client wrote them).
api::GenerationCall parse_generation_call(api::ApiKind api, std::string_view body, const std::string& model_name,
                                          const api::OutputParsers& parsers) {
  switch (api) {
    case api::ApiKind::Generate: return api::parse_generate(api::parse_json_body(body));
    case api::ApiKind::Completion: return api::parse_completion(api::parse_json_body(body), model_name);
    case api::ApiKind::ChatCompletion:
      return api::parse_chat_completion(api::parse_ordered_json_body(body), model_name, parsers);
  }
  throw api::ApiError(500, "unknown generation api");
}

// A generation whose body is still being parsed: the client may leave before its exchange starts.
class ParsingGeneration final : public PendingAnswer {
 public:
  void cancel() override {
    cancelled = true;
    if (started) started->cancel();
  }
  bool cancelled = false;
  std::shared_ptr<PendingAnswer> started;  // once parsed
};

}  // namespace

RequestRouter::RequestRouter(boost::asio::io_context& front, EngineFrontend& engine, AccessKeys keys,
                             api::OutputParsers parsers, size_t max_batch_prompts, bool ids_only)
    : engine_(engine),
      keys_(std::move(keys)),
      parsers_(parsers),
      max_batch_prompts_(max_batch_prompts),
      ids_only_(ids_only),
      started_(static_cast<int64_t>(std::time(nullptr))),
      parse_thread_(front) {}

std::optional<HttpReply> RequestRouter::refuse_without_key(const std::string& path, const HttpRequest& request) const {
  if (path == "/health" || path == "/metrics") return std::nullopt;
  if (is_admin_path(path) && !keys_.admin_api_key.empty()) {
    if (keys_.admin(request.authorization)) return std::nullopt;
    return unauthorized("this endpoint needs the admin key (--admin-api-key): Authorization: Bearer <admin key>");
  }
  if (keys_.user(request.authorization)) return std::nullopt;
  return unauthorized(request.authorization.empty() ? "this server needs an API key: Authorization: Bearer <key>"
                                                    : "the API key is not this server's");
}

HttpReply RequestRouter::unauthorized(const std::string& message) {
  HttpReply reply = error_reply(api::ApiError(401, message, {}, "invalid_api_key"));
  reply.headers.emplace_back("WWW-Authenticate", "Bearer");
  return reply;
}

std::shared_ptr<PendingAnswer> RequestRouter::route(HttpRequest request, const std::shared_ptr<ResponseChannel>& channel) {
  const std::string_view target = request.target;
  const std::string path(target.substr(0, target.find('?')));
  if (std::optional<HttpReply> refusal = refuse_without_key(path, request)) {
    channel->send(std::move(*refusal));
    return nullptr;
  }
  const Route* matched = nullptr;
  for (const Route& route : kRoutes) {
    if (route.path == path) matched = &route;
  }
  std::shared_ptr<PendingAnswer> pending;
  answer_errors_of([&] {
    if (matched == nullptr) throw api::ApiError::not_found("no endpoint at " + path);
    if (matched->method != request.method) {
      HttpReply reply = error_reply(api::ApiError(405, "use " + std::string(matched->method) + " for " + path));
      reply.headers.emplace_back("Allow", matched->method);
      channel->send(std::move(reply));
      return;
    }
    switch (matched->endpoint) {
      case Endpoint::Generate: pending = generate(api::ApiKind::Generate, std::move(request), channel); break;
      case Endpoint::Completion: pending = generate(api::ApiKind::Completion, std::move(request), channel); break;
      case Endpoint::ChatCompletion:
        pending = generate(api::ApiKind::ChatCompletion, std::move(request), channel);
        break;
      case Endpoint::Models:
        channel->send(json_reply(200, api::model_list(engine_.model_name(), started_, engine_.model_info().max_model_len)));
        break;
      case Endpoint::Health: channel->send(health()); break;
      case Endpoint::Metrics: channel->send(metrics()); break;
      case Endpoint::ExpertLoad:
      case Endpoint::ExpertLoadReset: {
        const bool reset = matched->endpoint == Endpoint::ExpertLoadReset;
        channel->send(json_reply(200, api::expert_load_json(engine_.expert_load(reset))));
        break;
      }
      case Endpoint::UpdateWeights:
        change_weights(api::parse_update_weights(api::parse_json_body(request.body)), channel);
        break;
      case Endpoint::ReleaseMemory:
        change_weights(api::parse_memory_occupation(request.body, msg::MemoryAction::Release), channel);
        break;
      case Endpoint::ResumeMemory:
        change_weights(api::parse_memory_occupation(request.body, msg::MemoryAction::Resume), channel);
        break;
      case Endpoint::AbortRequest: channel->send(abort_request(request, keys_.admin(request.authorization))); break;
      case Endpoint::FlushCache: channel->send(flush_cache()); break;
      case Endpoint::HealthGenerate: pending = health_generate(channel); break;
      case Endpoint::Tokenize: channel->send(tokenize(request)); break;
      case Endpoint::Detokenize: channel->send(detokenize(request)); break;
      case Endpoint::ModelInfo: channel->send(json_reply(200, api::model_info_json(engine_.model_info()))); break;
      case Endpoint::ServerInfo: channel->send(json_reply(200, engine_.server_info())); break;
      case Endpoint::PauseGeneration: channel->send(pause_generation(request)); break;
      case Endpoint::GetWeightVersion:
        channel->send(json_reply(200, api::weight_version_json(engine_.model_info().weight_version)));
        break;
      case Endpoint::UpdateWeightVersion: channel->send(update_weight_version(request)); break;
      case Endpoint::InitWeightGroup:
        change_weights(api::parse_init_weights_update_group(api::parse_json_body(request.body)), channel);
        break;
      case Endpoint::UpdateFromWeightGroup:
        change_weights(api::parse_update_weights_from_distributed(api::parse_json_body(request.body)), channel);
        break;
      case Endpoint::DestroyWeightGroup:
        change_weights(api::parse_destroy_weights_update_group(api::parse_json_body(request.body)), channel);
        break;
      case Endpoint::ContinueGeneration:
        channel->send(json_reply(200, api::generation_control_json(engine_.continue_generation())));
        break;
    }
  }, *channel);
  return pending;
}

std::shared_ptr<PendingAnswer> RequestRouter::generate(api::ApiKind api, HttpRequest request,
                                                       const std::shared_ptr<ResponseChannel>& channel) {
  refuse_when_shutting_down();
  if (request.body.size() < kParseOnFrontBytes)
    return start_generation(parse_generation_call(api, request.body, engine_.model_name(), parsers_), channel);
  auto answer = std::make_shared<ParsingGeneration>();
  auto call = std::make_shared<api::GenerationCall>();
  auto failure = std::make_shared<std::exception_ptr>();
  parse_thread_.run(
      [api, call, failure, body = std::move(request.body), model_name = engine_.model_name(), parsers = parsers_] {
        try {
          *call = parse_generation_call(api, body, model_name, parsers);
        } catch (...) {
          *failure = std::current_exception();
        }
      },
      // The session keeps the router alive: while the client is connected, `this` is.
      [this, answer, call, failure, client = std::weak_ptr<ResponseChannel>(channel)] {
        const std::shared_ptr<ResponseChannel> channel = client.lock();
        if (!channel || answer->cancelled) return;
        answer_errors_of([&] {
          if (*failure) std::rethrow_exception(*failure);
          refuse_when_shutting_down();
          answer->started = start_generation(std::move(*call), channel);
        }, *channel);
      });
  return answer;
}

std::shared_ptr<PendingAnswer> RequestRouter::start_generation(api::GenerationCall call,
                                                               const std::shared_ptr<ResponseChannel>& channel) {
  check_batch_size(call.requests.size());
  call.ids_only = ids_only_;
  auto exchange = std::make_shared<GenerationExchange>(std::move(call), engine_, channel);
  exchange->start();
  return exchange;
}

void RequestRouter::refuse_when_shutting_down() const {
  if (engine_.shutting_down()) throw api::ApiError(503, "the server is shutting down");
}

void RequestRouter::check_batch_size(size_t prompts) const {
  if (prompts > max_batch_prompts_)
    throw api::ApiError::bad_request("the request brings " + std::to_string(prompts) + " prompts; this server takes at most " +
                                     std::to_string(max_batch_prompts_) + " in one request (--max-batch-prompts)");
}

HttpReply RequestRouter::health() const {
  refuse_when_shutting_down();
  if (const std::string problem = engine_.health_problem(); !problem.empty()) throw api::ApiError(503, problem);
  return HttpReply{200, "text/plain; charset=utf-8", "", {}};
}

HttpReply RequestRouter::metrics() const {
  return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8",
                   api::render_prometheus(engine_.stats(), engine_.model_name()), {}};
}

}  // namespace moe::http
