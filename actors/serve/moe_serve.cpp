// moe-serve: the engine as a server. Starts the tokenizer, scheduler, model-worker and detokenizer
// actors (or, with --role worker, only a model worker for a multi-process deployment), serves
// ZeroMQ clients (and HTTP), and shuts down in order on SIGINT/SIGTERM.
#include "common/prelude.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/program_options.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>
#include <spdlog/spdlog.h>

#include "command_line/command_line.h"
#include "common/error.h"
#include "engine/engine_sizing.h"
#include "pipeline/engine_runtime.h"
#include "pipeline/visible_gpus.h"
#include "transport/internal_key.h"

namespace po = boost::program_options;
using moe::actors::ServeOptions;

namespace {

// The command that starts one more rank of this deployment: this program with this process's flags, but
// its --role (the rank adds its own).
std::vector<std::string> rank_command(int argc, char** argv) {
  std::vector<std::string> command = {std::filesystem::read_symlink("/proc/self/exe").string()};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--role" && i + 1 < argc) {
      ++i;
      continue;
    }
    if (arg.rfind("--role=", 0) == 0) continue;
    command.push_back(arg);
  }
  return command;
}

// Fills `options` from the command line; returns false when only --help was asked.
bool parse_flags(int argc, char** argv, ServeOptions& o, std::string& role, std::string& log_level,
                 int& shutdown_timeout_s, std::string& make_internal_key, int& dp_size) {
  po::options_description desc("moe-serve options (named after SGLang's)");
  desc.add_options()("help,h", "show this help")
      ("model-path", po::value(&o.model_path), "Hugging Face model directory (required)")
      ("tokenizer-path", po::value(&o.tokenizer_path), "tokenizer directory (default: the model's)")
      ("skip-tokenizer-init", po::bool_switch(&o.skip_tokenizer_init),
       "load no tokenizer: prompts are input_ids, replies carry output_ids and no text")
      ("chat-template", po::value(&o.chat_template), "a Jinja chat template file to use instead of the tokenizer's")
      ("served-model-name", po::value(&o.served_model_name),
       "the model name OpenAI clients use (default: the name of --model-path's directory; \"default\" is accepted too)")
      ("trust-remote-code", po::bool_switch(),
       "accepted for SGLang's launch scripts; does nothing: the engine runs no code from the model directory")
      ("dp-size", po::value(&dp_size)->default_value(1),
       "data-parallel replicas: only 1 (for more, run one moe-serve per GPU behind a load balancer)")
      ("weight-version", po::value(&o.weight_version)->default_value(o.weight_version),
       "the label of the weights loaded at start, in every reply's meta_info.weight_version")
      ("host", po::value(&o.host)->default_value(o.host), "HTTP address")
      ("decode-log-interval", po::value(&o.decode_log_interval)->default_value(o.decode_log_interval),
       "log #running-req, #queue-req, token usage and gen throughput every this many generating steps (0 = never)")
      ("log-requests", po::bool_switch(&o.log_requests),
       "log every finished request: rid, prompt and output lengths, time to first output, total time, finish reason")
      ("api-key", po::value(&o.api_key), "HTTP clients must send Authorization: Bearer KEY (not /health, /metrics)")
      ("admin-api-key", po::value(&o.admin_api_key),
       "the admin endpoints (update_weights_*, flush_cache, abort_request with abort_all, ...) need Authorization: "
       "Bearer KEY, and an HTTP abort with it reaches ZeroMQ clients' requests too (default: none; the admin "
       "endpoints are guarded like the rest, and HTTP aborts reach HTTP requests only)")
      ("max-batch-prompts", po::value(&o.max_batch_prompts)->default_value(o.max_batch_prompts),
       "the most prompts one HTTP request may bring (a /generate or /v1/completions list, /tokenize's texts); more get 400")
      ("max-request-bytes", po::value(&o.max_request_bytes)->default_value(o.max_request_bytes),
       "the largest HTTP request body (larger: 413) and ZeroMQ client frame (larger: the connection drops)")
      ("random-seed", po::value<uint64_t>()->notifier([&o](uint64_t seed) { o.random_seed = seed; }),
       "seeds the seed of every request that brings none, so a restarted server samples alike")
      ("tool-call-parser", po::value(&o.tool_call_parser),
       "qwen25: <tool_call> blocks in chat answers become tool_calls (for requests with tools)")
      ("reasoning-parser", po::value(&o.reasoning_parser),
       "qwen3: a leading <think> block in chat answers becomes reasoning_content")
      ("port", po::value(&o.port)->default_value(30000), "HTTP port (0 = no HTTP server)")
      ("zmq-endpoint", po::value(&o.zmq_endpoint), "ZeroMQ ROUTER endpoint for clients, e.g. tcp://127.0.0.1:30001")
      ("enable-return-routed-experts", po::bool_switch(&o.enable_return_routed_experts),
       "capture the routed experts of every token so requests can ask for them")
      ("enable-return-router-weights", po::bool_switch(&o.enable_return_router_weights),
       "also keep every token's top-k router weights (implies --enable-return-routed-experts)")
      ("routed-experts-layers", po::value(&o.routed_experts_layers)->default_value(o.routed_experts_layers),
       "the layer axis of routed_experts: all (every decoder layer, dense layers 0, as SGLang) | moe (MoE layers only)")
      ("max-running-requests", po::value(&o.max_running_requests)->default_value(o.max_running_requests), "")
      ("chunked-prefill-size", po::value(&o.chunked_prefill_size)->default_value(o.chunked_prefill_size),
       "tokens per step, decodes included (<= 0: no limit)")
      ("max-prefill-tokens", po::value(&o.max_prefill_tokens)->default_value(o.max_prefill_tokens),
       "prompt tokens per step beside decoding requests, so a prompt's chunk stalls them little (0: 512 on a GPU, "
       "no limit on the CPU; < 0: no limit); a step with no decodes takes --chunked-prefill-size")
      ("max-total-tokens", po::value(&o.max_total_tokens)->default_value(0),
       "KV slots (0 = on a GPU, what --mem-fraction-static leaves; on the CPU, what 2 GiB holds, at most 8 contexts)")
      ("mem-fraction-static", po::value(&o.mem_fraction_static)->default_value(moe::kDefaultMemFractionStatic),
       "cuda: the fraction of GPU memory the weights and the KV pool take together (sizes the pool unless "
       "--max-total-tokens is given); the rest is the steps' workspace, CUDA graphs and the CUDA context")
      ("context-length", po::value(&o.context_length)->default_value(0), "0 = the model's max_position_embeddings")
      ("allow-long-context", po::bool_switch(&o.allow_long_context),
       "allow --context-length above the model's max_position_embeddings (a warning instead of an error)")
      ("moe-runner-backend", po::value(&o.moe_runner_backend)->default_value(o.moe_runner_backend),
       "auto | reference | grouped (CPU) | cuda (--device cuda; auto picks it there)")
      ("device", po::value(&o.device)->default_value(o.device), "cpu | cuda (a build with -DMOE_CUDA=ON)")
      ("disable-cuda-graph", po::bool_switch(&o.disable_cuda_graph), "cuda: no CUDA graphs for decode steps")
      ("quantization", po::value(&o.quantization)->default_value(o.quantization),
       "none | int8 | int4: quantize a bf16/f16/f32 checkpoint's projections at load (GPTQ checkpoints load as they are)")
      ("quantization-group-size", po::value(&o.quantization_group_size)->default_value(o.quantization_group_size),
       "int4: input columns per scale (a multiple of 32, e.g. 32 or 128)")
      ("kernel-dtype", po::value(&o.kernel_dtype)->default_value(o.kernel_dtype),
       "float32 | bf16 | int8: bf16 rounds the GEMMs' activations to bf16 (AVX-512 BF16 dot products where the "
       "CPU has them; bf16 checkpoints on the CPU only); int8 quantizes them per 32-column block for integer "
       "products with int8/int4 weights (--quantization or GPTQ, CPU only)")
      ("load-format", po::value(&o.load_format)->default_value(o.load_format),
       "auto (the checkpoint's files) | dummy (random bf16 weights made from config.json alone, seeded by "
       "--dummy-seed: serves and measures a model whose weights are not on disk; CPU)")
      ("dummy-seed", po::value(&o.dummy_seed)->default_value(o.dummy_seed), "the seed of --load-format dummy")
      ("ep-size", po::value(&o.ep_size)->default_value(1),
       "expert-parallel shards: with --device cpu each a process (ranks 1.. started by this one, or by hand with "
       "--role worker --ep-rank R); with --device cuda run in turn on the one GPU")
      ("ep-rank", po::value(&o.ep_rank)->default_value(0),
       "with --role worker: the expert-parallel rank this process runs (rank 0 is the worker the scheduler talks to)")
      ("tp-size", po::value(&o.tp_size)->default_value(1),
       "tensor-parallel ranks (--device cpu): attention heads, MLP and expert widths and lm_head's vocabulary "
       "split Megatron-style, each rank a process (ranks 1.. started by this one, or by hand with --role worker "
       "--tp-rank R); with --ep-size E, tp × E ranks: the routed experts split E ways by expert and each expert's "
       "width tp ways, the rest over all the ranks (--ep-rank and --tp-rank name one)")
      ("tp-rank", po::value(&o.tp_rank)->default_value(0),
       "with --role worker: the tensor-parallel rank this process runs (rank 0 is the worker the scheduler talks to)")
      ("dist-init-addr", po::value(&o.dist_init_addr),
       "tcp://HOST:PORT where the expert- or tensor-parallel ranks meet (rank 0 binds it, the others connect); given "
       "to rank 0, it starts no ranks itself and waits for those started by hand")
      ("dist-timeout", po::value(&o.dist_timeout_s)->default_value(o.dist_timeout_s),
       "seconds the expert- or tensor-parallel ranks wait for each other to join (their model loads included)")
      ("expert-placement", po::value(&o.expert_placement), "JSON device_expert_mapping file")
      ("pp-size", po::value(&o.pp_size)->default_value(1), "pipeline stages the decoder layers are cut into")
      ("pp-layer-split", po::value(&o.pp_layer_split), "layers per stage, such as 4,4,3 (default: balanced)")
      ("pp-rank", po::value(&o.pp_rank)->default_value(0), "with --role worker: the pipeline stage this process runs")
      ("pp-next-endpoint", po::value(&o.pp_next_endpoint),
       "with --role worker: the next stage's --worker-endpoint, where activations go (none for the last stage)")
      ("disable-radix-cache", po::bool_switch(&o.disable_radix_cache), "turn the prefix cache off")
      ("disable-overlap-schedule", po::bool_switch(&o.disable_overlap_schedule),
       "plan each step only after the previous one's result (overlap is off anyway with --pp-size > 1 or "
       "speculative decoding)")
      ("speculative-algorithm", po::value(&o.speculative_algorithm),
       "speculative decoding: NGRAM (drafts from n-gram matches in the request's own prompt and output), "
       "STANDALONE (drafts from --speculative-draft-model-path), NEXTN (EAGLE is the same: drafts from the "
       "next-token-prediction layer of a DeepSeek-V3 or GLM-4.5 --model-path; CPU only) or EAGLE3 (drafts from "
       "the EAGLE-3 head at --speculative-draft-model-path, SGLang's layout; CPU only)")
      ("speculative-num-steps", po::value(&o.speculative_num_steps)->default_value(o.speculative_num_steps),
       "deepest draft token after the last accepted one")
      ("speculative-eagle-topk", po::value(&o.speculative_eagle_topk)->default_value(o.speculative_eagle_topk),
       "most children of one draft-tree node (branching)")
      ("speculative-num-draft-tokens",
       po::value(&o.speculative_num_draft_tokens)->default_value(o.speculative_num_draft_tokens),
       "tokens one verify pass checks, the last accepted token included")
      ("speculative-ngram-min-match-window-size",
       po::value(&o.speculative_ngram_min_match_window_size)->default_value(o.speculative_ngram_min_match_window_size),
       "NGRAM: the shortest suffix of a request's tokens matched against its earlier tokens")
      ("speculative-ngram-max-match-window-size",
       po::value(&o.speculative_ngram_max_match_window_size)->default_value(o.speculative_ngram_max_match_window_size),
       "NGRAM: the longest suffix matched (the longest that occurred before wins)")
      ("speculative-draft-model-path", po::value(&o.speculative_draft_model_path),
       "STANDALONE's draft checkpoint (same tokenizer and vocabulary as --model-path), or EAGLE3's head")
      ("speculative-draft-model-quantization", po::value(&o.speculative_draft_model_quantization),
       "the draft's own quantization: unquant (its checkpoint's dtype) | int8 | int4 (--quantization-group-size); "
       "default: as the target (--quantization)")
      ("max-tree-experts", po::value(&o.max_tree_experts)->default_value(0),
       "experts a verify pass may use per MoE layer, the best by summed router probability (0 = off)")
      ("role", po::value(&role)->default_value("all"), "all | worker (only the model worker, for multi-process)")
      ("worker-endpoint", po::value(&o.worker_endpoint), "the model worker's inbox when it runs in another process")
      ("scheduler-endpoint", po::value(&o.scheduler_endpoint), "the scheduler's inbox a remote worker connects to")
      ("internal-key-file", po::value(&o.internal_key_file),
       "the deployment's key: the sockets between its processes (--worker-endpoint, --scheduler-endpoint, "
       "--pp-next-endpoint) accept only peers holding it; needed for tcp:// endpoints")
      ("make-internal-key", po::value(&make_internal_key),
       "write a new deployment key to this file (readable by its owner only) and exit")
      ("worker-timeout-ms", po::value(&o.worker_timeout_ms)->default_value(o.worker_timeout_ms),
       "fail in-flight requests when the worker is silent this long")
      ("graceful-shutdown-timeout", po::value(&shutdown_timeout_s)->default_value(30),
       "seconds SIGTERM waits for requests in flight before failing them (a second signal exits at once)")
      ("log-level", po::value(&log_level)->default_value("info"), "trace | debug | info | warn | error | off");
  return moe::parse_command_line(argc, argv, desc, "usage: moe-serve --model-path DIR [options]");
}

}  // namespace

int main(int argc, char** argv) {
  ServeOptions options;
  std::string role, log_level, make_internal_key;
  int shutdown_timeout_s = 30;
  int dp_size = 1;
  try {
    if (!parse_flags(argc, argv, options, role, log_level, shutdown_timeout_s, make_internal_key, dp_size)) return 0;
    if (!make_internal_key.empty()) {
      moe::transport::InternalKey::generate().write_file(make_internal_key);
      std::cout << "wrote a new deployment key to " << make_internal_key
                << ": give it to every process of the deployment with --internal-key-file\n";
      return 0;
    }
    if (options.model_path.empty()) throw po::error("the option '--model-path' is required but missing");
    if (dp_size != 1)
      throw po::error("--dp-size " + std::to_string(dp_size) + ": one moe-serve serves one replica; for " +
                      std::to_string(dp_size) + " replicas run " + std::to_string(dp_size) +
                      " moe-serve processes (one per GPU, each with its own --port) behind a load balancer "
                      "such as sglang-router");
    // spdlog reads any unknown name as "off": a typo would silence every log line.
    const spdlog::level::level_enum level = spdlog::level::from_str(log_level);
    if (level == spdlog::level::off && log_level != "off")
      throw po::error("--log-level must be trace, debug, info, warn, error, critical or off, got '" + log_level + "'");
    spdlog::set_level(level);
    if (options.max_batch_prompts < 1) throw po::error("--max-batch-prompts must be at least 1");
    if (options.max_request_bytes < 1024) throw po::error("--max-request-bytes must be at least 1024");
    if (role == "worker") {
      moe::actors::run_worker_process(options);
      return 0;
    }
    if (role != "all") throw moe::Error("--role must be all or worker");
    // Expert- and tensor-parallel ranks are processes (on GPUs one per GPU): this one is rank 0 and starts
    // the others, unless they are started by hand and meet it at --dist-init-addr. On one GPU, --ep-size
    // alone runs its shards in turn in this process.
    const bool one_gpu = options.device == "cuda" && options.tp_size == 1 && moe::actors::visible_gpus().size() < 2;
    if ((options.ep_size > 1 || options.tp_size > 1) && !one_gpu && options.dist_init_addr.empty() &&
        options.worker_endpoint.empty())
      options.rank_command = rank_command(argc, argv);
    if (options.port == 0 && options.zmq_endpoint.empty())
      throw moe::Error("--port 0 serves no HTTP and no --zmq-endpoint was given, so no client could reach this "
                       "server: give a --port, a --zmq-endpoint (e.g. tcp://127.0.0.1:30001) or both");
    moe::actors::EngineRuntime runtime(options);
    if (!runtime.client_endpoint().empty()) spdlog::info("ZeroMQ clients: {}", runtime.client_endpoint());
    if (runtime.http_port()) spdlog::info("HTTP: http://{}:{}", options.host, runtime.http_port());
    spdlog::info("ready");

    boost::asio::io_context io;
    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([](const boost::system::error_code&, int signal) {
      spdlog::info("signal {}: finishing requests in flight, then stopping", signal);
    });
    io.run();
    // A second SIGINT or SIGTERM while draining exits at once.
    io.restart();
    signals.async_wait([](const boost::system::error_code& ec, int signal) {
      if (ec) return;
      spdlog::warn("signal {} again: exiting without waiting for requests in flight", signal);
      std::_Exit(1);
    });
    std::thread second_signal([&io] { io.run(); });
    runtime.drain(std::chrono::seconds(shutdown_timeout_s));
    io.stop();
    second_signal.join();
    spdlog::info("stopped");
    return 0;
  } catch (const po::error& e) {
    std::cerr << "moe-serve: " << e.what() << "\n(moe-serve --help lists the options)\n";
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}
