// moe-cli generate: load a model, generate from one prompt through the engine step, print ids,
// logprobs and routed experts.
#include <boost/program_options.hpp>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "command_line/command_line.h"
#include "common/error.h"
#include "common/json_file.h"
#include "common/local_paths.h"
#include "engine/engine_core.h"
#include "model/model_config.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_config.h"
#include "worker/load_model_on_device.h"

namespace moe::cli {
namespace {

namespace po = boost::program_options;

struct GenerateArgs {
  std::string model_path, tokenizer_path, prompt, prompt_ids, stop_ids;
  EngineOptions model;  // the flags that say how the model loads (model_options), named as moe-serve's
  int max_new_tokens = 16;
  int64_t chunk = 0;
  uint64_t seed = 0;
  bool routed = false, include_last = false, json = false, ignore_eos = false;
  msg::DrawSettings draw{0.0f, 1.0f, -1, 0.0f};
};

// The reply's routed experts ([rows][layers][k], raw int32) as nested JSON lists.
nlohmann::json routed_json(const msg::EncodedArray& array) {
  const int64_t rows = array.shape.at(0), layers = array.shape.at(1), k = array.shape.at(2);
  std::vector<int32_t> ids(static_cast<size_t>(rows * layers * k));
  std::memcpy(ids.data(), array.data.data(), ids.size() * sizeof(int32_t));
  nlohmann::json out = nlohmann::json::array();
  for (int64_t i = 0; i < rows; ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t l = 0; l < layers; ++l)
      row.push_back(std::vector<int32_t>(ids.begin() + (i * layers + l) * k, ids.begin() + (i * layers + l + 1) * k));
    out.push_back(std::move(row));
  }
  return out;
}

int run_generate(int argc, char** argv) {
  GenerateArgs a;
  po::options_description desc("moe-cli generate options");
  desc.add_options()("help,h", "show this help")
      ("model-path", po::value(&a.model_path)->required(), "Hugging Face model directory")
      ("tokenizer-path", po::value(&a.tokenizer_path), "tokenizer directory (default: the model's)")
      ("prompt", po::value(&a.prompt), "prompt text")
      ("prompt-ids", po::value(&a.prompt_ids), "prompt token ids, comma-separated")
      ("max-new-tokens", po::value(&a.max_new_tokens)->default_value(16), "tokens to generate")
      ("temperature", po::value(&a.draw.temperature)->default_value(0.0f), "0 = greedy")
      ("top-p", po::value(&a.draw.top_p)->default_value(1.0f), "nucleus sampling mass")
      ("top-k", po::value(&a.draw.top_k)->default_value(-1), "keep the k most probable tokens (-1 = off)")
      ("min-p", po::value(&a.draw.min_p)->default_value(0.0f), "drop tokens below min-p x top probability")
      ("seed", po::value(&a.seed)->default_value(0), "sampling seed")
      ("stop-token-ids", po::value(&a.stop_ids), "extra ids that end generation, comma-separated")
      ("ignore-eos", po::bool_switch(&a.ignore_eos), "do not stop at the end-of-sequence ids")
      ("return-routed-experts", po::bool_switch(&a.routed), "print the routed experts of every position")
      ("include-last", po::bool_switch(&a.include_last), "also route the last generated token")
      ("chunked-prefill-size", po::value(&a.chunk)->default_value(0), "tokens per step (0 = no limit)")
      ("moe-runner-backend", po::value(&a.model.moe_runner_backend)->default_value("auto"), "auto | reference | grouped (CPU) | cuda (--device cuda)")
      ("device", po::value(&a.model.device)->default_value("cpu"), "cpu | cuda (a build with -DMOE_CUDA=ON)")
      ("disable-cuda-graph", po::bool_switch(&a.model.disable_cuda_graph), "cuda: no CUDA graphs for decode steps")
      ("quantization", po::value(&a.model.quantization)->default_value("none"), "none | int8 | int4 (at load)")
      ("quantization-group-size", po::value(&a.model.quantization_group_size)->default_value(128), "int4: input columns per scale")
      ("kernel-dtype", po::value(&a.model.kernel_dtype)->default_value("float32"),
       "float32 | bf16: GEMM products of bf16-rounded activations (bf16 checkpoints, CPU) | int8: integer "
       "products of int8 activation blocks (int8/int4 weights, CPU)")
      ("ep-size", po::value(&a.model.ep_size)->default_value(1), "expert-parallel shards")
      ("expert-placement", po::value(&a.model.expert_placement), "JSON file of device_expert_mapping")
      ("json", po::bool_switch(&a.json), "print one JSON object");
  if (!parse_command_line(argc, argv, desc)) return 0;
  if (a.prompt.empty() == a.prompt_ids.empty()) throw Error("give exactly one of --prompt and --prompt-ids");
  require_local_directory("--model-path", a.model_path);
  // Token ids need no tokenizer: without one (none given, none in the model's directory) the reply
  // has ids only, and generation ends at generation_config.json's end-of-sequence ids.
  const bool has_tokenizer =
      !a.prompt.empty() || !a.tokenizer_path.empty() || file_exists(a.model_path + "/tokenizer.json");
  if (has_tokenizer) a.tokenizer_path = tokenizer_directory(a.tokenizer_path, a.model_path);
  const auto model_vocab_size = static_cast<int32_t>(load_model_config(a.model_path).vocab_size);
  tokenizer::Tokenizer tok = has_tokenizer ? tokenizer::Tokenizer::load(a.tokenizer_path)
                                           : tokenizer::Tokenizer::without_vocabulary(model_vocab_size);

  msg::GenerateRequest request;
  if (a.prompt.empty())
    request.input_ids = parse_id_list(a.prompt_ids);
  else
    request.text = a.prompt;
  static_cast<msg::DrawSettings&>(request.sampling) = a.draw;
  request.sampling.seed = a.seed;
  request.sampling.max_new_tokens = a.max_new_tokens;
  request.sampling.ignore_eos = a.ignore_eos;
  if (!a.stop_ids.empty()) request.sampling.stop_token_ids = parse_id_list(a.stop_ids);
  request.return_logprob = true;
  request.routing.return_routed_experts = a.routed;
  request.routing.include_last = a.include_last;
  request.routing.raw = true;

  const ModelOptions mo = model_options(a.model);
  EngineCoreOptions options;
  options.settings.chunked_prefill_size = a.chunk;
  options.settings.enable_return_routed_experts = a.routed;
  const tokenizer::TokenizerConfig tok_config =
      has_tokenizer ? tokenizer::load_tokenizer_config(a.tokenizer_path) : tokenizer::TokenizerConfig{};
  options.eos_token_ids = tokenizer::resolve_eos_token_ids(a.model_path, tok_config, tok);
  options.seed_source = a.seed;
  EngineCore engine(load_model_on_device(a.model_path, mo), tok, options);
  const std::vector<msg::TextOutput> outputs = engine.run({request});
  if (!engine.errors().empty()) throw Error(engine.errors().front().message);
  const msg::TextOutput& reply = outputs.at(0);  // one reply: the request does not stream
  const std::vector<int32_t> prompt_ids = request.input_ids ? *request.input_ids : tok.encode(a.prompt);

  nlohmann::json out = {{"prompt_ids", prompt_ids},
                        {"output_ids", reply.output_ids},
                        {"output_logprobs", reply.output_logprobs}};
  if (has_tokenizer) out["text"] = reply.text;
  if (a.routed) {
    out["routed_experts_shape"] = reply.routed_experts->shape;
    out["routed_experts"] = routed_json(*reply.routed_experts);
  }
  if (a.json) {
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::cout << "prompt_ids:      " << out["prompt_ids"].dump() << "\n";
  std::cout << "output_ids:      " << out["output_ids"].dump() << "\n";
  std::cout << "output_logprobs: " << out["output_logprobs"].dump() << "\n";
  std::cout << "text:            " << (has_tokenizer ? out["text"].dump() : "(no tokenizer: ids only)") << "\n";
  if (a.routed) {
    const auto& shape = reply.routed_experts->shape;
    std::cout << "routed_experts [" << shape[0] << " rows][" << shape[1] << " MoE layers][top-" << shape[2]
              << "] (row i = token at position i as input):\n";
    std::vector<int32_t> all = prompt_ids;
    all.insert(all.end(), reply.output_ids.begin(), reply.output_ids.end());
    for (int64_t i = 0; i < shape[0]; ++i)
      std::cout << "  pos " << i << " token " << all[i] << ": " << out["routed_experts"][i].dump() << "\n";
  }
  return 0;
}

const RegisterCommand registered("generate", "generate from a prompt; print ids, logprobs, routed experts",
                                 run_generate);

}  // namespace
}  // namespace moe::cli
