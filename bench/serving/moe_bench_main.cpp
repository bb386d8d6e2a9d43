// moe-bench: a serving benchmark client for a running moe-serve, over ZeroMQ or HTTP.
//   sweep:   moe-bench --endpoint tcp://127.0.0.1:30001 --concurrency 1,8,32
//            moe-bench --endpoint http://127.0.0.1:30000 [--api openai] --concurrency 1,8,32
//   compare: moe-bench ... --compare-pairs 4 --b-return-routed-experts   (A B A B ..., ratio B/A per pair)
//            moe-bench --endpoint tcp://... --compare-pairs 4 --b-endpoint http://...   (HTTP's overhead)
#include <boost/program_options.hpp>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "command_line/command_line.h"
#include "common/error.h"
#include "serving/bench_report.h"
#include "serving/server_target.h"

namespace po = boost::program_options;
using namespace moe::bench;

namespace {

// One measured configuration: where the requests go and what they are.
struct Configuration {
  ServerTarget target;
  LoadOptions load;
};

std::vector<int> parse_int_list(const std::string& text) {
  std::vector<int> values;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) values.push_back(std::stoi(item));
  if (values.empty()) throw moe::Error("moe-bench: --concurrency needs at least one value");
  return values;
}

LabelledStats measure(const Configuration& config, const std::string& label) {
  const std::unique_ptr<StreamingTransport> transport = make_transport(config.target);
  double duration = 0;
  const std::vector<RequestRecord> records = run_load(*transport, config.load, duration);
  LabelledStats run{label, config.load.concurrency, summarize(records, duration)};
  std::cerr << label << ": " << run.stats.output_throughput << " output tok/s\n";
  if (run.stats.failed > 0) {
    std::cerr << label << ": " << run.stats.failed << " failed, first: " << run.stats.first_error << "\n";
  }
  return run;
}

// A B A B ...: the ratio B/A of output tokens/s pair by pair, so slow drifts of a shared machine cancel.
nlohmann::json compare(const Configuration& a, const Configuration& b, int pairs, std::vector<LabelledStats>& runs) {
  nlohmann::json ratios = nlohmann::json::array();
  for (int p = 0; p < pairs; ++p) {
    // Fresh prompts for every run: a repeated prompt would be served from the prefix cache.
    Configuration run_a = a, run_b = b;
    run_a.load.seed = a.load.seed + 2 * p;
    run_b.load.seed = a.load.seed + 2 * p + 1;
    runs.push_back(measure(run_a, "A#" + std::to_string(p)));
    runs.push_back(measure(run_b, "B#" + std::to_string(p)));
    const double base = runs[runs.size() - 2].stats.output_throughput;
    ratios.push_back(base > 0 ? runs.back().stats.output_throughput / base : 0.0);
  }
  return ratios;
}

}  // namespace

int main(int argc, char** argv) {
  Configuration config;
  LoadOptions& options = config.load;
  std::string api = "generate", concurrency_list, b_endpoint, b_api, output_json, output_md, plot_path;
  int compare_pairs = 0;
  bool b_return_routed_experts = false;
  po::options_description desc("moe-bench options");
  desc.add_options()("help,h", "show this help")
      ("endpoint", po::value(&config.target.endpoint)->default_value(config.target.endpoint),
       "moe-serve's --zmq-endpoint (tcp://, ipc://) or its HTTP address (http://HOST:PORT)")
      ("api", po::value(&api)->default_value(api), "HTTP API: generate (SGLang /generate) or openai (/v1/completions)")
      ("num-prompts", po::value(&options.num_prompts)->default_value(options.num_prompts), "measured requests per run")
      ("warmup-prompts", po::value(&options.warmup_prompts)->default_value(options.warmup_prompts), "")
      ("input-len", po::value(&options.input_len)->default_value(options.input_len), "prompt tokens")
      ("output-len", po::value(&options.output_len)->default_value(options.output_len), "generated tokens (ignore_eos)")
      ("temperature", po::value(&options.temperature)->default_value(options.temperature),
       "sampling temperature (0: greedy; a rollout samples at 1)")
      ("concurrency", po::value(&concurrency_list)->default_value("1"), "comma-separated list: one run each")
      ("request-rate", po::value(&options.request_rate)->default_value(0), "Poisson requests/s (0 = closed loop)")
      ("vocab-size", po::value(&options.vocab_size)->default_value(options.vocab_size), "prompt ids in [0, N)")
      ("return-routed-experts", po::bool_switch(&options.return_routed_experts), "ask for routed experts (A)")
      ("request-timeout", po::value(&options.request_timeout_s)->default_value(options.request_timeout_s),
       "seconds after which an unfinished request fails")
      ("seed", po::value(&options.seed)->default_value(0), "")
      ("compare-pairs", po::value(&compare_pairs)->default_value(0), "run A and B alternately this many times")
      ("b-endpoint", po::value(&b_endpoint), "configuration B's server, of either transport (default: A's)")
      ("b-api", po::value(&b_api), "configuration B's HTTP API (default: A's)")
      ("b-return-routed-experts", po::bool_switch(&b_return_routed_experts), "configuration B asks for routed experts")
      ("output-json", po::value(&output_json), "write every run's figures here")
      ("output-md", po::value(&output_md), "write the Markdown table here")
      ("plot", po::value(&plot_path), "PNG of throughput and ITL against concurrency (needs gnuplot)");
  try {
    if (!moe::parse_command_line(argc, argv, desc)) return 0;
    config.target.api = parse_http_api(api);
    std::vector<LabelledStats> runs;
    nlohmann::json report;
    if (compare_pairs > 0) {
      Configuration b = config;
      if (!b_endpoint.empty()) b.target.endpoint = b_endpoint;
      if (!b_api.empty()) b.target.api = parse_http_api(b_api);
      b.load.return_routed_experts = b_return_routed_experts;
      options.concurrency = b.load.concurrency = parse_int_list(concurrency_list).front();
      report["ratios_b_over_a"] = compare(config, b, compare_pairs, runs);
    } else {
      for (int concurrency : parse_int_list(concurrency_list)) {
        options.concurrency = concurrency;
        ++options.seed;  // fresh prompts for every run, as in compare()
        runs.push_back(measure(config, "c=" + std::to_string(concurrency)));
      }
    }
    for (const LabelledStats& run : runs) report["runs"][run.label] = to_json(run.stats);
    const std::string table = markdown_table(runs);
    std::cout << table;
    if (report.contains("ratios_b_over_a")) {
      std::cout << "\nB/A output tok/s per pair: " << report["ratios_b_over_a"].dump() << "\n";
    }
    if (!output_json.empty()) std::ofstream(output_json) << report.dump(2) << "\n";
    if (!output_md.empty()) std::ofstream(output_md) << table;
    if (!plot_path.empty() && !plot_sweep(runs, plot_path)) std::cerr << "moe-bench: gnuplot not found, no plot\n";
    return 0;
  } catch (const po::error& e) {
    std::cerr << "moe-bench: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "moe-bench: " << e.what() << "\n";
    return 1;
  }
}
