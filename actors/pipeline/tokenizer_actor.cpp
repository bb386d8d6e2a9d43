#include "pipeline/tokenizer_actor.h"

#include <spdlog/spdlog.h>
#include <utility>

#include "api/api_error.h"
#include "common/error.h"
#include "common/secret_compare.h"
#include "transport/client_protocol.h"

namespace moe::actors {
namespace {

// A request's name inside the engine: its client's, then its own.
std::string scoped(const std::string& client, const std::string& rid) { return client + ":" + rid; }

// A ZeroMQ peer as a client: its identity frame (binary, chosen by ROUTER or by the peer), in hex.
std::string zmq_client(const transport::ClientAddress& address) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name = "zmq-";
  if (!address.frames.empty())
    for (const unsigned char byte : address.frames.front()) {
      name += kHex[byte >> 4];
      name += kHex[byte & 15];
    }
  return name;
}

}  // namespace

TokenizerActor::TokenizerActor(transport::ActorLoop& loop, std::unique_ptr<RequestPreparer> preparer,
                               const TokenizerActorEndpoints& endpoints, SchedulerControls scheduler)
    : preparer_(std::move(preparer)), scheduler_(std::move(scheduler)), admin_api_key_(endpoints.admin_api_key) {
  to_scheduler_ = &loop.make<transport::Outbox>(endpoints.scheduler);
  loop.make<transport::Inbox>(endpoints.inbox, [this](msg::Message&& message) { on_message(std::move(message)); });
  if (!endpoints.clients.empty()) {
    transport::SocketOptions options;
    options.max_message_bytes = endpoints.max_client_frame_bytes;
    router_ = &loop.make<transport::RouterEndpoint>(
        endpoints.clients,
        [this](transport::ClientAddress address, std::string payload) { on_zmq_request(std::move(address), std::move(payload)); },
        [this](const transport::ClientAddress& address) { on_zmq_client_gone(address); }, options);
  }
}

std::optional<std::string> TokenizerActor::submit(const std::string& client, const msg::GenerateRequest& request,
                                                  OutputHandler on_output, ErrorHandler on_error) {
  ++traffic_.requests;
  if (shutting_down_) {
    on_error(msg::ErrorReply{request.rid, "the server is shutting down", 503, "tokenizer", {}});
    return std::nullopt;
  }
  const api::SteadyTime arrival = std::chrono::steady_clock::now();
  msg::TokenizedRequest tokenized;
  try {
    if (!request.rid.empty() && clients_.count(scoped(client, request.rid)))
      throw Error("rid '" + request.rid + "' is already in use");
    tokenized = preparer_->prepare(request);
  } catch (const Error& e) {
    on_error(refusal_reply(request.rid, e, "tokenizer"));
    return std::nullopt;
  }
  OutputHandler counted = [this, on_output = std::move(on_output)](const msg::TextOutput& output) {
    traffic_.generation_tokens += output.output_ids.size();
    if (output.finish_reason) {
      traffic_.prompt_tokens += static_cast<uint64_t>(output.prompt_tokens);
      traffic_.cached_tokens += static_cast<uint64_t>(output.cached_tokens);
    }
    on_output(output);
  };
  std::string rid = std::exchange(tokenized.rid, scoped(client, tokenized.rid));
  clients_.insert_or_assign(tokenized.rid, Client{std::move(counted), std::move(on_error), tokenized.sampling.n, client,
                                                  rid, api::RequestTiming(arrival)});
  to_scheduler_->send(tokenized);
  return rid;
}

void TokenizerActor::abort(const std::string& client, const std::string& rid, const std::string& reason) {
  if (!clients_.erase(scoped(client, rid))) return;
  to_scheduler_->send(msg::Abort{scoped(client, rid), reason});
}

size_t TokenizerActor::abort_request(const std::optional<std::string>& client, const std::string& rid,
                                     const std::string& reason) {
  std::vector<std::string> rids;
  for (const auto& [live, request] : clients_)
    if ((!client || request.client == *client) && (rid.empty() || request.rid == rid)) rids.push_back(live);
  // The scheduler ends each with finish reason abort; the final reply reaches its client as usual.
  for (const std::string& live : rids) to_scheduler_->send(msg::Abort{live, reason});
  return rids.size();
}

std::string TokenizerActor::pause_generation(msg::PauseMode mode) {
  if (mode == msg::PauseMode::Abort) {
    const size_t aborted = abort_request(std::nullopt, "", "generation was paused (pause_generation, mode abort)");
    scheduler_.pause_generation(msg::PauseMode::InPlace);
    return "Generation paused successfully; " + std::to_string(aborted) + " request(s) aborted.";
  }
  scheduler_.pause_generation(mode);
  return "Generation paused successfully.";
}

std::string TokenizerActor::continue_generation() {
  scheduler_.continue_generation();
  return "Generation continued successfully.";
}

void TokenizerActor::update_weight_version(std::string version, bool abort_all) {
  if (abort_all) abort_request(std::nullopt, "", "aborted by update_weight_version (abort_all_requests)");
  scheduler_.set_weight_version(std::move(version));
}

void TokenizerActor::update_weights(msg::UpdateWeights update, WeightsUpdatedHandler on_done) {
  if (shutting_down_) {
    on_done(msg::WeightsUpdated{std::move(update), false, "the server is shutting down", 0, "", 0});
    return;
  }
  update.id = next_update_id_++;
  weight_updates_[update.id] = std::move(on_done);
  to_scheduler_->send(update);
}

void TokenizerActor::on_weights_updated(const msg::WeightsUpdated& answer) {
  auto it = weight_updates_.find(answer.request.id);
  if (it == weight_updates_.end()) return;  // answered already (shutting down)
  const WeightsUpdatedHandler on_done = std::move(it->second);
  weight_updates_.erase(it);
  on_done(answer);
}

void TokenizerActor::fail_remaining(const std::string& message) {
  std::map<std::string, Client> clients = std::exchange(clients_, {});  // handlers may re-enter
  for (auto& [rid, client] : clients) {
    to_scheduler_->send(msg::Abort{rid, message});
    client.on_error(msg::ErrorReply{client.rid, message, 503, "tokenizer", {}});
  }
  // An update still loading may yet succeed: its requester is told it did not finish in time.
  for (auto& [id, on_done] : std::exchange(weight_updates_, {})) {
    msg::WeightsUpdated answer;
    answer.request.id = id;
    answer.message = message + " before the weight update finished";
    on_done(answer);
  }
}

void TokenizerActor::on_message(msg::Message&& message) {
  // Handlers may re-enter the actor (a client that is gone aborts its request), so none runs while
  // this function still holds an iterator into clients_.
  if (auto* batch = std::get_if<msg::TextOutputBatch>(&message)) {
    for (msg::TextOutput& output : batch->outputs) {
      auto it = clients_.find(output.rid);
      if (it == clients_.end()) continue;  // aborted meanwhile
      output.rid = it->second.rid;  // the client's own name for it
      const bool last = output.finish_reason && --it->second.remaining == 0;
      it->second.timing.observe(output, std::chrono::steady_clock::now(), latencies_);
      if (last) {
        it->second.timing.end(latencies_);
        if (log_requests_) spdlog::info("{}", api::request_log_line(output, it->second.timing));
      }
      OutputHandler on_output = last ? std::move(it->second.on_output) : it->second.on_output;
      if (last) clients_.erase(it);
      on_output(output);
    }
  } else if (auto* error = std::get_if<msg::ErrorReply>(&message)) {
    auto it = clients_.find(error->rid);
    if (it == clients_.end()) {
      spdlog::error("{}: {}", error->source, error->message);
      return;
    }
    ErrorHandler on_error = std::move(it->second.on_error);
    std::string rid = std::move(it->second.rid);
    clients_.erase(it);
    to_scheduler_->send(msg::Abort{error->rid, "failed: " + error->message});
    error->rid = std::move(rid);
    on_error(*error);
  } else if (auto* answer = std::get_if<msg::WeightsUpdated>(&message)) {
    on_weights_updated(*answer);
  } else {
    spdlog::warn("tokenizer: ignoring a {} message", msg::kind_name(msg::kind_of(message)));
  }
}

void TokenizerActor::on_zmq_request(transport::ClientAddress address, std::string payload) {
  transport::ClientRequest request;
  try {
    request = transport::parse_client_request(payload);
  } catch (const transport::ClientRequestError& e) {
    router_->reply(address, transport::encode_client_error(msg::ErrorReply{e.rid(), e.what(), 400, "tokenizer", {}}));
    return;
  }
  // An operation that changes the weights (or their group): admin-gated, answered as an update.
  const auto change_weights = [&](const auto& op) {
    if (admitted(address, op.rid, op.admin_api_key)) update_weights(op.update, zmq_weights_answer(address, op.rid));
  };
  if (auto* query = std::get_if<transport::ExpertLoadRequest>(&request)) {
    on_zmq_expert_load(address, query->rid, query->reset);
  } else if (auto* abort = std::get_if<transport::AbortRequest>(&request)) {
    on_zmq_abort(address, abort->rid);
  } else if (auto* update = std::get_if<transport::UpdateWeightsRequest>(&request)) {
    change_weights(*update);
  } else if (auto* init = std::get_if<transport::InitWeightGroupRequest>(&request)) {
    change_weights(*init);
  } else if (auto* receive = std::get_if<transport::UpdateFromWeightGroupRequest>(&request)) {
    change_weights(*receive);
  } else if (auto* destroy = std::get_if<transport::DestroyWeightGroupRequest>(&request)) {
    change_weights(*destroy);
  } else if (auto* pause = std::get_if<transport::PauseGenerationRequest>(&request)) {
    if (!admitted(address, pause->rid, pause->admin_api_key)) return;
    router_->reply(address, transport::encode_generation_control_reply({pause->rid, pause_generation(pause->mode)}));
  } else if (auto* resume = std::get_if<transport::ContinueGenerationRequest>(&request)) {
    if (!admitted(address, resume->rid, resume->admin_api_key)) return;
    router_->reply(address, transport::encode_generation_control_reply({resume->rid, continue_generation()}));
  } else if (auto* relabel = std::get_if<transport::UpdateWeightVersionRequest>(&request)) {
    if (!admitted(address, relabel->rid, relabel->admin_api_key)) return;
    update_weight_version(relabel->new_version, relabel->abort_all_requests);
    reply_weight_version(address, relabel->rid, "Weight version updated to " + relabel->new_version);
  } else if (auto* memory = std::get_if<transport::MemoryOccupationRequest>(&request)) {
    if (!admitted(address, memory->rid, memory->admin_api_key)) return;
    msg::UpdateWeights change;
    change.memory = memory->action;
    msg::set_memory_tags(change, memory->tags);
    update_weights(change, zmq_weights_answer(address, memory->rid));
  } else if (auto* query = std::get_if<transport::GetWeightVersionRequest>(&request)) {
    reply_weight_version(address, query->rid, "the weight version serving now");
  } else {
    on_zmq_generate(std::move(address), std::get<msg::GenerateRequest>(request));
  }
}

TokenizerActor::WeightsUpdatedHandler TokenizerActor::zmq_weights_answer(const transport::ClientAddress& address,
                                                                         std::string rid) {
  return [this, address, rid = std::move(rid)](const msg::WeightsUpdated& answer) {
    router_->reply(address, transport::encode_weights_updated_reply({rid, answer}));
  };
}

void TokenizerActor::on_zmq_generate(transport::ClientAddress address, const msg::GenerateRequest& request) {
  const std::string client = zmq_client(address);
  submit(
      client, request,
      [this, address](const msg::TextOutput& output) { router_->reply(address, transport::encode_client_reply(output)); },
      [this, address](const msg::ErrorReply& error) { router_->reply(address, transport::encode_client_error(error)); });
}

// Answered at once: the read waits only for the scheduler's loop, which never runs a forward.
void TokenizerActor::on_zmq_expert_load(const transport::ClientAddress& address, const std::string& rid, bool reset) {
  try {
    router_->reply(address, transport::encode_expert_load_reply({rid, scheduler_.read_expert_load(reset)}));
  } catch (const api::ApiError& e) {
    router_->reply(address,
                   transport::encode_client_error(msg::ErrorReply{rid, e.what(), e.status(), "tokenizer", e.param()}));
  }
}

void TokenizerActor::on_zmq_abort(const transport::ClientAddress& address, const std::string& rid) {
  const bool own = !rid.empty() && abort_request(zmq_client(address), rid, "aborted by its client") > 0;
  router_->reply(address, transport::encode_abort_reply({rid, own}));
}

void TokenizerActor::reply_weight_version(const transport::ClientAddress& address, const std::string& rid,
                                          const std::string& message) {
  msg::WeightsUpdated answer;
  answer.success = true;
  answer.message = message;
  answer.weight_version = weight_version();
  router_->reply(address, transport::encode_weights_updated_reply({rid, answer}));
}

bool TokenizerActor::admitted(const transport::ClientAddress& address, const std::string& rid,
                              const std::string& admin_api_key) {
  if (admin_api_key_.empty() || same_secret(admin_api_key, admin_api_key_)) return true;
  const std::string message = admin_api_key.empty()
                                  ? "this operation needs the admin key (--admin-api-key): send it as `admin_api_key`"
                                  : "`admin_api_key` is not this server's admin key";
  router_->reply(address, transport::encode_client_error(msg::ErrorReply{rid, message, 401, "tokenizer", "admin_api_key"}));
  return false;
}

void TokenizerActor::on_zmq_client_gone(const transport::ClientAddress& address) {
  const std::string client = zmq_client(address);
  std::vector<std::string> gone;
  for (const auto& [rid, request] : clients_)
    if (request.client == client) gone.push_back(request.rid);
  for (const std::string& rid : gone) abort(client, rid, "client disconnected");
}

}  // namespace moe::actors
