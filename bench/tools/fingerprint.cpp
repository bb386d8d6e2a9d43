// moe-fingerprint: prints a checkpoint directory's fingerprint (what a model worker reports in its
// handshake, model/model_fingerprint.h) and how long it took, to measure its cost at load and to
// tell which checkpoint a server's refusal names.
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "command_line/command_line.h"
#include "model/model_fingerprint.h"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  std::string model_path;
  int repeat = 1;
  po::options_description desc("moe-fingerprint options");
  desc.add_options()("help,h", "show this help")
      ("model-path", po::value(&model_path)->required(), "checkpoint directory")
      ("repeat", po::value(&repeat)->default_value(1), "times to compute it (the later ones from the page cache)");
  try {
    if (!moe::parse_command_line(argc, argv, desc, "usage: moe-fingerprint --model-path DIR [--repeat N]")) return 0;
    for (int i = 0; i < repeat; ++i) {
      const auto start = std::chrono::steady_clock::now();
      const uint64_t fingerprint = moe::model_fingerprint(model_path);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("%llu in %.3f s\n", static_cast<unsigned long long>(fingerprint), seconds);
    }
  } catch (const std::exception& e) {
    std::cerr << "moe-fingerprint: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
