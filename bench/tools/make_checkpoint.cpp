// moe-make-checkpoint: writes a random-weight checkpoint in the Hugging Face hub layout from a
// config.json, for benchmarks (bench/configs/*.json). The same seed gives the same bytes. With
// --gptq-bits the projections are written straight in GPTQ form, so a 30B-class checkpoint never
// needs its bf16 bytes on disk.
#include <boost/program_options.hpp>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "command_line/command_line.h"
#include "common/error.h"
#include "common/json_file.h"
#include "model/random_checkpoint.h"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  std::string config_path, out_dir, dtype_name;
  moe::RandomCheckpointOptions options;
  po::options_description desc("moe-make-checkpoint options");
  desc.add_options()("help,h", "show this help")
      ("config", po::value(&config_path)->required(), "config.json of the model (e.g. bench/configs/qwen3-moe-small.json)")
      ("out", po::value(&out_dir)->required(), "directory to write")
      ("seed", po::value(&options.seed)->default_value(0), "random seed")
      ("dtype", po::value(&dtype_name)->default_value("bf16"), "bf16 | f32 (the tensors not in GPTQ form)")
      ("gptq-bits", po::value(&options.gptq_bits)->default_value(0), "4 | 8: projections as a GPTQ checkpoint (0: float)")
      ("gptq-group-size", po::value(&options.gptq_group_size)->default_value(128), "GPTQ input columns per scale (-1: one group)");
  try {
    if (!moe::parse_command_line(argc, argv, desc,
                                 "usage: moe-make-checkpoint --config FILE --out DIR [--seed S] [--dtype bf16|f32] [--gptq-bits 4|8]"))
      return 0;
    if (dtype_name != "bf16" && dtype_name != "f32") throw moe::Error("--dtype must be bf16 or f32, got " + dtype_name);
    options.dtype = dtype_name == "bf16" ? moe::DType::BF16 : moe::DType::F32;
    const auto start = std::chrono::steady_clock::now();
    moe::write_random_checkpoint(moe::read_json_file(config_path), out_dir, options);
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
