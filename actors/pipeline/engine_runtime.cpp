#include "common/prelude.h"

#include "pipeline/engine_runtime.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <atomic>
#include <csignal>
#include <future>
#include <nlohmann/json.hpp>
#include <random>
#include <spdlog/spdlog.h>
#include <thread>

#include "api/api_error.h"
#include "common/error.h"
#include "common/json_file.h"
#include "common/local_paths.h"
#include "engine/engine_sizing.h"
#include "model/safetensors.h"
#include "model/tensor_shard.h"
#include "engine/compute_settings.h"
#include "model/model_fingerprint.h"
#include "http/http_server.h"
#include "kernels/half_gemm.h"
#include "kernels/thread_pool.h"
#include "pipeline/detokenizer_actor.h"
#include "pipeline/http_frontend.h"
#include "pipeline/pipeline_endpoints.h"
#include "pipeline/rank_group.h"
#include "pipeline/scheduler_actor.h"
#include "pipeline/server_info.h"
#include "pipeline/tokenizer_actor.h"
#include "pipeline/worker_actor.h"
#include "tokenizer/tokenizer_config.h"
#include "transport/ready_barrier.h"
#include "transport/zmq_context.h"
#include "worker/load_model_on_device.h"

namespace moe::actors {
namespace {

// The directories this process reads, checked before anything is read from them.
void check_model_directories(const ServeOptions& options) {
  require_local_directory("--model-path", options.model_path);
  if (!options.speculative_draft_model_path.empty())
    require_local_directory("--speculative-draft-model-path", options.speculative_draft_model_path);
}

// The layers of each pipeline stage (one stage, the whole model, without --pp-size).
std::vector<LayerRange> stage_layers(const ServeOptions& options, const ModelConfig& config) {
  if (options.pp_size > 1 && parse_device(options.device) != Device::Cpu)
    throw Error("--pp-size runs on the CPU model only (--device cpu)");
  return split_layers(config.num_hidden_layers, options.pp_size,
                      options.pp_layer_split.empty() ? std::vector<int>{} : parse_layer_split(options.pp_layer_split));
}

// A --tp-size the model or device cannot take stops the start before any weights load or rank starts,
// naming what does not split. `holds_worker`: this process runs rank 0 or another rank.
void check_tensor_parallel(const ServeOptions& options, const ModelConfig& config, bool holds_worker) {
  if (options.tp_size == 1) return;
  const std::string refusal = tensor_parallel_refusal(config, options.tp_size, options.ep_size);
  if (!refusal.empty()) throw Error(refusal);
  if (holds_worker && !ranks_in_processes(options))
    throw Error("--tp-size " + std::to_string(options.tp_size) +
                " needs its ranks: give --dist-init-addr (where ranks started by hand meet rank 0)");
}

// The one way this process loads weights: at start (from --model-path), for weight updates and the
// STANDALONE draft; `layers` for a pipeline stage (none: the whole model), `quantization` in place
// of --quantization (the draft's --speculative-draft-model-quantization), `rank_group` for an
// expert- or tensor-parallel rank in a process of its own.
std::unique_ptr<Model> load_served_model(const ServeOptions& options, const std::string& model_dir,
                                         std::optional<LayerRange> layers = std::nullopt,
                                         std::optional<Quantization> quantization = std::nullopt,
                                         RankGroup* rank_group = nullptr) {
  ModelOptions mo = model_options(options);
  mo.layers = layers;
  // Tensor-parallel ranks (with --ep-size, tp × ep of them) split the experts within their one group;
  // GPU ranks always do, and join their device group through the rank group.
  if (rank_group) (rank_group->tensor_parallel() ? mo.tensor_group : mo.expert_group) = &rank_group->communicator();
  if (rank_group) mo.join_device_group = rank_group->device_group_join();
  if (quantization) mo.quantization = *quantization;
  // The files are read front to back first, with progress, so that the load, which copies the
  // half-precision weights into the GEMM's tiled order, reads them from memory.
  int last_percent = -1;
  auto report = [&](int64_t done, int64_t total) {
    const int percent = total ? static_cast<int>(100 * done / total) : 100;
    if (percent / 10 == last_percent / 10) return;
    last_percent = percent;
    spdlog::info("loading weights of {}: {}% of {:.1f} MiB", model_dir, percent, total / 1048576.0);
  };
  if (!mo.dummy_weights_seed) prefetch_checkpoint(model_dir, report);
  auto model = load_model_on_device(model_dir, mo);
  // Read now, so a bad MOE_GEMM_ISA stops the start instead of failing every request.
  if (mo.device == Device::Cpu)
    spdlog::info("kernels: {} tiles, {} products, {} threads", gemm_isa_name(preferred_gemm_isa()),
                 kernel_dtype_name(mo.kernel_dtype), kernel_threads());
  return model;
}


// What a worker and its scheduler must agree on besides their sizes.
ModelIdentity identity_of(const ServeOptions& options, const ModelConfig& config) {
  const uint64_t fingerprint = options.load_format == "dummy"
                                   ? dummy_weights_fingerprint(options.model_path, options.dummy_seed)
                                   : model_fingerprint(options.model_path);
  return {fingerprint, options.ep_size, options.tp_size, stage_layers(options, config), compute_settings_of(options)};
}

// The layers a stage's model loads: none (the whole model) without pipeline parallelism.
std::optional<LayerRange> layers_of_stage(const ServeOptions& options, const ModelConfig& config, int rank) {
  if (options.pp_size == 1) return std::nullopt;
  return stage_layers(options, config).at(static_cast<size_t>(rank));
}

// Every size, plus how this process loads the weights of an update and what it serves at start.
EngineSizing sized(const ServeOptions& options, const ModelConfig& config, std::vector<int32_t> eos_token_ids,
                   uint64_t seed_source) {
  EngineSizing sizing =
      size_engine(options, config, identity_of(options, config), std::move(eos_token_ids), seed_source);
  sizing.worker.load_checkpoint = [options](const std::string& model_dir, std::optional<Quantization> quantization) {
    return load_served_model(options, model_dir, std::nullopt, quantization);
  };
  sizing.service.weights = {options.model_path, options.weight_version};
  return sizing;
}

// Set by SIGINT or SIGTERM in a rank other than 0, which runs no event loop.
std::atomic<bool> stop_following{false};

// An expert- or tensor-parallel rank other than 0: computes every step rank 0 hands it until a signal stops it.
void follow_rank_zero(RankGroup& group, std::unique_ptr<Model> model, const ModelWorkerOptions& options) {
  ModelWorker worker(std::move(model), options);
  for (int signal : {SIGINT, SIGTERM}) std::signal(signal, [](int) { stop_following = true; });
  group.follow(worker, [] { return !stop_following.load(); });
}

// The ZeroMQ context of this process. With --internal-key-file its sockets to the deployment's other
// processes authenticate every peer; without it, none may be a tcp:// endpoint, since anyone who
// reaches the port could send steps, results or heartbeats (one forged heartbeat fails every live
// request and empties the prefix cache). ipc:// stays on one host, behind the file's permissions.
std::unique_ptr<transport::Context> deployment_context(const ServeOptions& options) {
  auto context = std::make_unique<transport::Context>();
  if (!options.internal_key_file.empty()) {
    context->authenticate_internal_peers(transport::InternalKey::read_file(options.internal_key_file));
    return context;
  }
  const std::pair<const char*, const std::string&> endpoints[] = {{"--worker-endpoint", options.worker_endpoint},
                                                                  {"--scheduler-endpoint", options.scheduler_endpoint},
                                                                  {"--pp-next-endpoint", options.pp_next_endpoint},
                                                                  {"--dist-init-addr", options.dist_init_addr}};
  for (const auto& [flag, endpoint] : endpoints)
    if (endpoint.rfind("tcp://", 0) == 0)
      throw Error(std::string(flag) + " " + endpoint +
                  " is reachable over the network, so its peers must authenticate: give every process of the "
                  "deployment the same --internal-key-file (moe-serve --make-internal-key FILE writes one), or use "
                  "ipc:// endpoints on one host");
  return context;
}

// Runs `task` on `loop`'s thread and waits for its answer (from any other thread).
template <typename Task>
auto run_on(transport::ActorLoop& loop, Task task) {
  std::promise<decltype(task())> result;
  loop.post([&] { result.set_value(task()); });
  return result.get_future().get();
}

}  // namespace

struct EngineRuntime::Actors {
  // Expert- or tensor-parallel ranks in other processes, which the worker's model all-reduces with: outlives it.
  std::unique_ptr<RankGroup> rank_group;
  std::unique_ptr<transport::ActorLoop> tokenizer_loop, scheduler_loop, heartbeat_loop, detokenizer_loop;
  std::vector<std::unique_ptr<transport::ActorLoop>> stage_loops;  // one model worker per pipeline stage
  std::unique_ptr<TokenizerActor> tokenizer;
  std::unique_ptr<SchedulerActor> scheduler;
  std::vector<std::unique_ptr<WorkerActor>> stages;
  std::unique_ptr<DetokenizerActor> detokenizer;
  std::unique_ptr<HttpFrontend> http_frontend;
  std::unique_ptr<http::HttpServer> http_server;  // after the frontend: destroyed before it

  // Front door first, so nothing new enters while the rest winds down.
  void stop_loops() {
    std::vector<transport::ActorLoop*> loops = {tokenizer_loop.get(), scheduler_loop.get()};
    for (auto& stage : stage_loops) loops.push_back(stage.get());
    loops.push_back(heartbeat_loop.get());
    loops.push_back(detokenizer_loop.get());
    for (auto* loop : loops) {
      if (!loop) continue;
      loop->stop();
      loop->join();
    }
  }
};

EngineRuntime::EngineRuntime(const ServeOptions& options)
    : context_(deployment_context(options)), actors_(std::make_unique<Actors>()) {
  // Before anything loads: a misspelt parser stops the start naming its flag.
  const api::OutputParsers output_parsers = api::output_parsers_named(options.tool_call_parser, options.reasoning_parser);
  check_model_directories(options);
  // With the model worker elsewhere, this process needs the model's config, never its weights.
  const ModelConfig config = load_model_config(options.model_path);
  // A bad --pp-size or --pp-layer-split stops the start before any weights load.
  stage_layers(options, config);
  const bool local_worker = options.worker_endpoint.empty();
  check_tensor_parallel(options, config, local_worker);
  const bool skip_tokenizer = options.skip_tokenizer_init;
  if (skip_tokenizer && !options.chat_template.empty())
    throw Error("--chat-template needs a tokenizer: leave out --skip-tokenizer-init");
  // Without a tokenizer, ids decode to no text and generation ends at the model's own eos ids.
  const std::string tok_dir = skip_tokenizer ? "" : tokenizer_directory(options.tokenizer_path, options.model_path);
  tokenizer::Tokenizer tok = skip_tokenizer ? tokenizer::Tokenizer::without_vocabulary(static_cast<int32_t>(config.vocab_size))
                                            : tokenizer::Tokenizer::load(tok_dir);
  tokenizer::TokenizerConfig tok_config = skip_tokenizer ? tokenizer::TokenizerConfig{} : tokenizer::load_tokenizer_config(tok_dir);
  if (!options.chat_template.empty()) tok_config.chat_template = read_text_file(options.chat_template);
  Actors& a = *actors_;
  if (local_worker && ranks_in_processes(options)) a.rank_group = std::make_unique<RankGroup>(options, *context_);
  std::vector<std::unique_ptr<Model>> stage_models;
  for (int rank = 0; local_worker && rank < options.pp_size; ++rank)
    stage_models.push_back(load_served_model(options, options.model_path, layers_of_stage(options, config, rank),
                                             std::nullopt, a.rank_group.get()));
  model_name_ = options.model_path;

  PipelineEndpoints endpoints = PipelineEndpoints::in_process("engine");
  if (!local_worker) {
    if (options.scheduler_endpoint.empty())
      throw Error("--worker-endpoint needs --scheduler-endpoint, where the remote worker sends its results");
    endpoints.worker = options.worker_endpoint;
    endpoints.scheduler = options.scheduler_endpoint;
  }
  auto optional_token = [](const std::string& s) { return s.empty() ? std::nullopt : std::optional<std::string>(s); };

  // A GPU's pool is sized here, by what the loaded weights left (a worker in another process sizes
  // its pool as this front does, without the device: by --max-total-tokens or the memory budget).
  ServeOptions pool_options = options;
  if (local_worker)
    size_kv_pool_on_device(pool_options, config, compute_settings_of(options), stage_models.front()->device_memory());
  EngineSizing sizing =
      sized(pool_options, config, tokenizer::resolve_eos_token_ids(options.model_path, tok_config, tok),
            options.random_seed.value_or(std::random_device{}()));
  sizing.limits.skip_tokenizer = skip_tokenizer;
  auto service = std::make_unique<SchedulerService>(
      sizing.service, ServingModelInfo{config.num_moe_layers(), config.num_experts_per_tok, config.num_experts});
  kv_slots_ = service->kv_cache_slots();
  const int64_t host_cache_bytes = service->host_cache_bytes();
  if (a.rank_group) a.rank_group->join(sizing.service.expected_stages.at(0), options.model_path);

  ExpertLoadReader read_expert_load = [this](bool reset) { return expert_load(reset); };
  SchedulerControls controls{
      read_expert_load,
      [&a](msg::PauseMode mode) {
        run_on(*a.scheduler_loop, [&a, mode] {
          a.scheduler->pause_generation(mode);
          return 0;
        });
      },
      [&a] {
        run_on(*a.scheduler_loop, [&a] {
          a.scheduler->continue_generation();
          return 0;
        });
      },
      [&a] { return run_on(*a.scheduler_loop, [&a] { return a.scheduler->weight_version(); }); },
      [&a](std::string version) {
        run_on(*a.scheduler_loop, [&a, version] {
          a.scheduler->set_weight_version(version);
          return 0;
        });
      }};
  a.tokenizer_loop = std::make_unique<transport::ActorLoop>(*context_, "tokenizer");
  a.scheduler_loop = std::make_unique<transport::ActorLoop>(*context_, "scheduler");
  a.detokenizer_loop = std::make_unique<transport::ActorLoop>(*context_, "detokenizer");
  a.tokenizer = std::make_unique<TokenizerActor>(
      *a.tokenizer_loop,
      std::make_unique<RequestPreparer>(
          tok, PromptFormat{tok_config.chat_template, optional_token(tok_config.bos_token), optional_token(tok_config.eos_token)},
          sizing.limits),
      TokenizerActorEndpoints{endpoints.tokenizer, endpoints.scheduler, options.zmq_endpoint,
                              static_cast<int64_t>(options.max_request_bytes), options.admin_api_key},
      controls);
  // Set on the actors' own loops, which may already be running.
  a.tokenizer_loop->post([&a, on = options.log_requests] { a.tokenizer->log_requests(on); });
  a.scheduler = std::make_unique<SchedulerActor>(
      *a.scheduler_loop, std::move(service),
      SchedulerActorEndpoints{endpoints.scheduler, endpoints.worker, endpoints.detokenizer, endpoints.tokenizer},
      std::chrono::milliseconds(options.worker_timeout_ms));
  a.scheduler_loop->post([&a, steps = options.decode_log_interval] { a.scheduler->log_stats_every(steps); });
  a.detokenizer =
      std::make_unique<DetokenizerActor>(*a.detokenizer_loop, tok, config.num_experts, sizing.draft_num_experts,
                                         RoutingLayerAxis{config.num_hidden_layers, config.moe_layer_ids},
                                         endpoints.detokenizer, endpoints.tokenizer, endpoints.scheduler);
  if (options.port > 0) {
    auto snapshot = [&a] { return run_on(*a.scheduler_loop, [&a] { return a.scheduler->snapshot(); }); };
    const api::ModelInfo model_info{options.model_path, tok_dir, options.weight_version, config.architecture,
                                    config.num_moe_layers(), config.num_experts, config.num_experts_per_tok,
                                    sizing.limits.max_sequence_len};
    EngineQueries queries{
        snapshot, read_expert_load, [&a] { return run_on(*a.scheduler_loop, [&a] { return a.scheduler->flush_cache(); }); },
        [snapshot, model_info] {
          api::ModelInfo now = model_info;
          const ServingWeights weights = snapshot().weights;
          now.model_path = weights.model_path;
          now.weight_version = weights.weight_version;
          return now;
        },
        [snapshot, options, sizing] {
          const SchedulerSnapshot now = snapshot();
          return server_info_json(options, sizing, now.weights, now.worker_settings);
        }};
    a.http_frontend = std::make_unique<HttpFrontend>(*a.tokenizer, served_model_name(options), std::move(queries));
    http::HttpServerConfig http_config;
    http_config.host = options.host;
    http_config.port = static_cast<uint16_t>(options.port);
    http_config.keys = {options.api_key, options.admin_api_key};
    http_config.max_batch_prompts = options.max_batch_prompts;
    http_config.max_body_bytes = options.max_request_bytes;
    http_config.output_parsers = output_parsers;
    http_config.ids_only = skip_tokenizer;
    a.http_server = std::make_unique<http::HttpServer>(a.tokenizer_loop->io(), *a.http_frontend, http_config);
  }
  std::vector<std::string> names = {"tokenizer", "scheduler", "detokenizer"};
  if (local_worker) {
    // Stage r's inbox; the stages pass activations down the chain over inproc://.
    auto stage_inbox = [&](int rank) { return rank == 0 ? endpoints.worker : endpoints.worker + "-stage-" + std::to_string(rank); };
    a.heartbeat_loop = std::make_unique<transport::ActorLoop>(*context_, "worker-heartbeat");
    for (int rank = 0; rank < options.pp_size; ++rank) {
      const std::string name = rank == 0 ? "worker" : "worker-stage-" + std::to_string(rank);
      a.stage_loops.push_back(std::make_unique<transport::ActorLoop>(*context_, name));
      ModelWorkerOptions stage = sizing.worker;
      stage.settings = sizing.service.expected_stages.at(static_cast<size_t>(rank));
      a.stages.push_back(std::make_unique<WorkerActor>(
          *a.stage_loops.back(), *a.heartbeat_loop, std::move(stage_models[rank]), stage, stage_inbox(rank),
          endpoints.scheduler, rank + 1 < options.pp_size ? stage_inbox(rank + 1) : std::string(),
          a.rank_group.get()));
      names.push_back(name);
    }
  }

  transport::ReadyBarrier barrier(*context_, endpoints.launcher);
  std::vector<transport::ActorLoop*> loops = {a.tokenizer_loop.get(), a.scheduler_loop.get(), a.detokenizer_loop.get()};
  for (auto& stage : a.stage_loops) loops.push_back(stage.get());
  loops.push_back(a.heartbeat_loop.get());
  for (auto* loop : loops) {
    if (!loop) continue;
    if (loop->name() != "worker-heartbeat") loop->report_ready(barrier.endpoint());
    loop->start();
  }
  barrier.wait(names, std::chrono::seconds(60));
  const int64_t slot_bytes = sizing.kv_bytes_per_token + sizing.draft_bytes_per_token;
  spdlog::info("KV cache: {} token slots ({:.1f} MiB, {} bytes a token, {} of them the draft's); max running "
               "requests {}; chunked prefill {}",
               kv_slots_ - 1, slot_bytes * kv_slots_ / 1048576.0, slot_bytes, sizing.draft_bytes_per_token,
               options.max_running_requests, options.chunked_prefill_size);
  if (options.captures_routing())
    spdlog::info("routed-experts capture on{}: host cache {:.1f} MiB ({} bytes per token slot)",
                 options.enable_return_router_weights ? " with router weights" : "",
                 host_cache_bytes / 1048576.0, host_cache_bytes / kv_slots_);
}

EngineRuntime::~EngineRuntime() { actors_->stop_loops(); }

// Read on the scheduler's loop, in one task with the reset, so no step's rows fall between the two.
ExpertLoad EngineRuntime::expert_load(bool reset) {
  Actors& a = *actors_;
  auto load = run_on(*a.scheduler_loop, [&a, reset] { return a.scheduler->expert_load(reset); });
  if (!load) throw api::ApiError(400, "expert_load needs a server started with --enable-return-routed-experts");
  return std::move(*load);
}

transport::ActorLoop& EngineRuntime::tokenizer_loop() { return *actors_->tokenizer_loop; }
TokenizerActor& EngineRuntime::tokenizer() { return *actors_->tokenizer; }
std::string EngineRuntime::client_endpoint() const { return actors_->tokenizer->client_endpoint(); }
int EngineRuntime::http_port() const { return actors_->http_server ? actors_->http_server->port() : 0; }

SchedulerStats EngineRuntime::scheduler_stats() {
  return run_on(*actors_->scheduler_loop, [this] { return actors_->scheduler->stats(); });
}

void EngineRuntime::drain(std::chrono::milliseconds timeout) {
  auto on_tokenizer = [this](auto task) { return run_on(tokenizer_loop(), task); };
  on_tokenizer([this] {
    tokenizer().begin_shutdown();
    return 0;
  });
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (on_tokenizer([this] { return tokenizer().live_requests(); }) > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  on_tokenizer([this] {
    tokenizer().fail_remaining("the server is shutting down");
    return 0;
  });
}

void run_worker_process(const ServeOptions& options) {
  // A wrong model directory is named first: it is what a new user most often gets wrong.
  check_model_directories(options);
  const std::unique_ptr<transport::Context> context = deployment_context(options);
  std::unique_ptr<RankGroup> rank_group;
  if (ranks_in_processes(options)) rank_group = std::make_unique<RankGroup>(options, *context);
  const bool follows = rank_group && rank_group->rank() > 0;  // talks to rank 0 only
  if (!follows && (options.scheduler_endpoint.empty() || options.worker_endpoint.empty()))
    throw Error("a worker process needs --worker-endpoint (to bind) and --scheduler-endpoint (to connect)");
  const ModelConfig config = load_model_config(options.model_path);
  if (options.pp_rank < 0 || options.pp_rank >= options.pp_size)
    throw Error("--pp-rank must lie in [0, --pp-size), got " + std::to_string(options.pp_rank));
  check_tensor_parallel(options, config, true);
  std::unique_ptr<Model> model = load_served_model(
      options, options.model_path, layers_of_stage(options, config, options.pp_rank), std::nullopt, rank_group.get());
  // The worker sizes its KV cache and capture buffer exactly as the front sizes the scheduler's pool.
  EngineSizing sizing = sized(options, config, {}, 0);
  sizing.worker.settings = sizing.service.expected_stages.at(static_cast<size_t>(options.pp_rank));
  if (rank_group) {
    const msg::WorkerSettings rank_zero = rank_group->join(sizing.worker.settings, options.model_path);
    // A GPU rank's pool: rank 0's size, which it chose by its free memory (their slot ids must agree).
    if (parse_device(options.device) == Device::Cuda) sizing.worker.settings.kv_slots = rank_zero.kv_slots;
  }
  if (follows) return follow_rank_zero(*rank_group, std::move(model), sizing.worker);
  transport::ActorLoop loop(*context, "worker");
  transport::ActorLoop heartbeat(*context, "worker-heartbeat");
  WorkerActor worker(loop, heartbeat, std::move(model), sizing.worker, options.worker_endpoint,
                     options.scheduler_endpoint, options.pp_next_endpoint, rank_group.get());
  boost::asio::signal_set signals(heartbeat.io(), SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) {
    loop.stop();
    heartbeat.stop();
  });
  if (options.pp_size > 1)
    spdlog::info("pipeline stage {} of {} ready: layers [{}, {}), steps in at {}, results out to {}{}{}",
                 options.pp_rank, options.pp_size, sizing.worker.settings.layer_begin, sizing.worker.settings.layer_end,
                 options.worker_endpoint, options.scheduler_endpoint,
                 options.pp_next_endpoint.empty() ? "" : ", activations out to ", options.pp_next_endpoint);
  else
    spdlog::info("model worker ready: steps in at {}, results out to {}", options.worker_endpoint,
                 options.scheduler_endpoint);
  heartbeat.start();
  loop.run();
  heartbeat.stop();
  heartbeat.join();
}

}  // namespace moe::actors
