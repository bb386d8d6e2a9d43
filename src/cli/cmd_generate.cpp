// moe-cli generate: load a model, generate from one prompt, print ids, logprobs and routed experts.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "common/command_line.h"
#include "common/error.h"
#include "common/json_file.h"
#include "generate/offline_generator.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_config.h"

namespace moe::cli {
namespace {

namespace po = boost::program_options;

struct GenerateArgs {
  std::string model_path, tokenizer_path, prompt, prompt_ids, backend = "auto", placement, stop_ids;
  int max_new_tokens = 16, ep_size = 1, chunk = 0;
  bool routed = false, include_last = false, json = false, ignore_eos = false;
  SamplingParams sampling{0.0f, 1.0f, -1, 0.0f, 0};
};

// [rows][layers][k] as nested JSON lists.
nlohmann::json routed_json(const GenerationResult& r, int layers, int k) {
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t i = 0; i < r.routed_rows; ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (int l = 0; l < layers; ++l)
      row.push_back(std::vector<int32_t>(r.routed_experts.begin() + (i * layers + l) * k,
                                         r.routed_experts.begin() + (i * layers + l + 1) * k));
    rows.push_back(std::move(row));
  }
  return rows;
}

int run_generate(int argc, char** argv) {
  GenerateArgs a;
  po::options_description desc("moe-cli generate options");
  desc.add_options()("help,h", "show this help")
      ("model-path", po::value(&a.model_path)->required(), "Hugging Face model directory")
      ("tokenizer-path", po::value(&a.tokenizer_path), "tokenizer directory (default: the model's, if it has one)")
      ("prompt", po::value(&a.prompt), "prompt text (needs a tokenizer)")
      ("prompt-ids", po::value(&a.prompt_ids), "prompt token ids, comma-separated")
      ("max-new-tokens", po::value(&a.max_new_tokens)->default_value(16), "tokens to generate")
      ("temperature", po::value(&a.sampling.temperature)->default_value(0.0f), "0 = greedy")
      ("top-p", po::value(&a.sampling.top_p)->default_value(1.0f), "nucleus sampling mass")
      ("top-k", po::value(&a.sampling.top_k)->default_value(-1), "keep the k most probable tokens (-1 = off)")
      ("min-p", po::value(&a.sampling.min_p)->default_value(0.0f), "drop tokens below min-p x top probability")
      ("seed", po::value(&a.sampling.seed)->default_value(0), "sampling seed")
      ("stop-token-ids", po::value(&a.stop_ids), "extra ids that end generation, comma-separated")
      ("ignore-eos", po::bool_switch(&a.ignore_eos), "do not stop at the end-of-sequence ids")
      ("return-routed-experts", po::bool_switch(&a.routed), "print the routed experts of every position")
      ("include-last", po::bool_switch(&a.include_last), "also route the last generated token")
      ("chunked-prefill-size", po::value(&a.chunk)->default_value(0), "prompt tokens per step (0 = all)")
      ("moe-runner-backend", po::value(&a.backend)->default_value("auto"), "auto | reference | grouped")
      ("ep-size", po::value(&a.ep_size)->default_value(1), "expert-parallel shards")
      ("expert-placement", po::value(&a.placement), "JSON file of device_expert_mapping")
      ("json", po::bool_switch(&a.json), "print one JSON object");
  if (!parse_command_line(argc, argv, desc)) return 0;
  if (a.prompt.empty() == a.prompt_ids.empty()) throw Error("give exactly one of --prompt and --prompt-ids");
  validate(a.sampling);

  if (a.tokenizer_path.empty() && file_exists(a.model_path + "/tokenizer.json")) a.tokenizer_path = a.model_path;
  std::optional<tokenizer::Tokenizer> tok;
  if (!a.tokenizer_path.empty()) tok = tokenizer::Tokenizer::load(a.tokenizer_path);
  if (!a.prompt.empty() && !tok) throw Error("--prompt needs a tokenizer: pass --tokenizer-path");

  GenerationRequest req;
  req.prompt_ids = a.prompt.empty() ? parse_id_list(a.prompt_ids) : tok->encode(a.prompt);
  req.max_new_tokens = a.max_new_tokens;
  req.sampling = a.sampling;
  if (!a.stop_ids.empty()) req.stop_token_ids = parse_id_list(a.stop_ids);
  if (!a.ignore_eos && tok) {
    const auto eos = tokenizer::resolve_eos_token_ids(a.model_path, tokenizer::load_tokenizer_config(a.tokenizer_path), *tok);
    req.stop_token_ids.insert(req.stop_token_ids.end(), eos.begin(), eos.end());
  }
  ModelOptions mo;
  mo.moe_backend = parse_moe_backend(a.backend);
  mo.ep_size = a.ep_size;
  mo.expert_placement_file = a.placement;
  auto model = Model::load(a.model_path, mo);
  GeneratorOptions go;
  go.prefill_chunk_size = a.chunk;
  go.record_routing = a.routed;
  go.include_last = a.include_last;
  const GenerationResult r = generate(*model, {req}, go)[0];
  const int layers = model->config().num_moe_layers(), k = model->config().num_experts_per_tok;

  nlohmann::json out = {{"prompt_ids", req.prompt_ids}, {"output_ids", r.output_ids}, {"output_logprobs", r.output_logprobs}};
  if (tok) out["text"] = tok->decode(r.output_ids);
  if (a.routed) {
    out["routed_experts_shape"] = {r.routed_rows, layers, k};
    out["routed_experts"] = routed_json(r, layers, k);
  }
  if (a.json) {
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::cout << "prompt_ids:      " << out["prompt_ids"].dump() << "\n";
  std::cout << "output_ids:      " << out["output_ids"].dump() << "\n";
  std::cout << "output_logprobs: " << out["output_logprobs"].dump() << "\n";
  if (tok) std::cout << "text:            " << out["text"].dump() << "\n";
  if (a.routed) {
    std::cout << "routed_experts [" << r.routed_rows << " rows][" << layers << " MoE layers][top-" << k
              << "] (row i = token at position i as input):\n";
    const std::vector<int32_t> all = [&] {
      auto v = req.prompt_ids;
      v.insert(v.end(), r.output_ids.begin(), r.output_ids.end());
      return v;
    }();
    for (int64_t i = 0; i < r.routed_rows; ++i)
      std::cout << "  pos " << i << " token " << all[i] << ": " << out["routed_experts"][i].dump() << "\n";
  }
  return 0;
}

const RegisterCommand registered("generate", "generate from a prompt; print ids, logprobs, routed experts",
                                 run_generate);

}  // namespace
}  // namespace moe::cli
