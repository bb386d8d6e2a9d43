// moe-make-checkpoint: writes a random-weight checkpoint in the Hugging Face hub layout from a
// config.json, for benchmarks (bench/configs/*.json). The same seed gives the same bytes. With
// --gptq-bits the projections are written straight in GPTQ form, so a 30B-class checkpoint never
// needs its bf16 bytes on disk. With --truncate-from DIR --keep-layers N it writes instead DIR's first N
// decoder layers with its embedding, final norm and lm_head: an early-exit self-speculative draft. With
// --eagle3-head-for DIR it writes a random EAGLE-3 draft head (SGLang's layout) for the model in DIR.
#include <boost/program_options.hpp>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "command_line/command_line.h"
#include "common/error.h"
#include "common/json_file.h"
#include "model/model_config.h"
#include "model/random_checkpoint.h"
#include "model/random_eagle3_head.h"
#include "model/truncated_checkpoint.h"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  std::string config_path, out_dir, dtype_name, truncate_from, eagle3_target;
  int keep_layers = 0;
  int64_t draft_vocab_size = 0;
  moe::RandomCheckpointOptions options;
  po::options_description desc("moe-make-checkpoint options");
  desc.add_options()("help,h", "show this help")
      ("config", po::value(&config_path), "config.json of the model (e.g. bench/configs/qwen3-moe-small.json)")
      ("out", po::value(&out_dir)->required(), "directory to write")
      ("seed", po::value(&options.seed)->default_value(0), "random seed")
      ("dtype", po::value(&dtype_name)->default_value("bf16"), "bf16 | f32 (the tensors not in GPTQ form)")
      ("gptq-bits", po::value(&options.gptq_bits)->default_value(0), "4 | 8: projections as a GPTQ checkpoint (0: float)")
      ("gptq-group-size", po::value(&options.gptq_group_size)->default_value(128), "GPTQ input columns per scale (-1: one group)")
      ("truncate-from", po::value(&truncate_from), "a checkpoint to copy the first --keep-layers layers of (instead of --config)")
      ("keep-layers", po::value(&keep_layers)->default_value(0), "with --truncate-from: decoder layers to keep")
      ("eagle3-head-for", po::value(&eagle3_target), "a checkpoint to write a random EAGLE-3 head for (instead of --config)")
      ("draft-vocab-size", po::value(&draft_vocab_size)->default_value(0),
       "with --eagle3-head-for: the head's draft vocabulary (0: the target's, no d2t)");
  try {
    if (!moe::parse_command_line(argc, argv, desc,
                                 "usage: moe-make-checkpoint --config FILE --out DIR [--seed S] [--dtype bf16|f32] [--gptq-bits 4|8]\n"
                                 "       moe-make-checkpoint --truncate-from DIR --keep-layers N --out DIR\n"
                                 "       moe-make-checkpoint --eagle3-head-for DIR [--draft-vocab-size N] --out DIR"))
      return 0;
    if (!truncate_from.empty() + !config_path.empty() + !eagle3_target.empty() != 1)
      throw moe::Error("give exactly one of --config, --truncate-from and --eagle3-head-for");
    if (eagle3_target.empty() && draft_vocab_size != 0) throw moe::Error("--draft-vocab-size needs --eagle3-head-for");
    if (truncate_from.empty() && keep_layers != 0) throw moe::Error("--keep-layers needs --truncate-from");
    if (dtype_name != "bf16" && dtype_name != "f32") throw moe::Error("--dtype must be bf16 or f32, got " + dtype_name);
    options.dtype = dtype_name == "bf16" ? moe::DType::BF16 : moe::DType::F32;
    const auto start = std::chrono::steady_clock::now();
    if (!eagle3_target.empty())
      moe::write_random_eagle3_head(moe::load_model_config(eagle3_target), out_dir,
                                    {options.seed, options.dtype, draft_vocab_size, {}});
    else if (truncate_from.empty())
      moe::write_random_checkpoint(moe::read_json_file(config_path), out_dir, options);
    else
      moe::write_truncated_checkpoint(truncate_from, out_dir, keep_layers);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    std::cout << "wrote " << out_dir << " in " << took.count() << " s\n";
    return 0;
  } catch (const po::error& e) {
    std::cerr << "moe-make-checkpoint: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "moe-make-checkpoint: " << e.what() << "\n";
    return 1;
  }
}
