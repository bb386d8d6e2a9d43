#include "serving/bench_report.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/error.h"

namespace moe::bench {

std::string markdown_table(const std::vector<LabelledStats>& runs) {
  std::string out =
      "| run | done/failed | req/s | output tok/s | prompt tok/s | TTFT mean / p50 / p99 (ms) | ITL mean / p50 / p99 (ms) |\n"
      "| --- | --- | --- | --- | --- | --- | --- |\n";
  char line[512];
  for (const LabelledStats& run : runs) {
    const ServingStats& s = run.stats;
    std::snprintf(line, sizeof(line), "| %s | %d/%d | %.3f | %.2f | %.1f | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f |\n",
                  run.label.c_str(), s.completed, s.failed, s.request_throughput, s.output_throughput,
                  s.prompt_throughput, s.ttft.mean_ms,
                  s.ttft.p50_ms, s.ttft.p99_ms, s.itl.mean_ms, s.itl.p50_ms, s.itl.p99_ms);
    out += line;
  }
  return out;
}

bool plot_sweep(const std::vector<LabelledStats>& runs, const std::string& png_path) {
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0) return false;
  const std::string data_path = png_path + ".dat";
  {
    std::ofstream data(data_path);
    if (!data) throw Error("moe-bench: cannot write " + data_path);
    for (const LabelledStats& run : runs)
      data << run.concurrency << ' ' << run.stats.output_throughput << ' ' << run.stats.itl.p50_ms << '\n';
  }
  const std::string script = "set terminal png size 900,500; set output '" + png_path +
                             "'; set logscale x 2; set xlabel 'concurrency'; set ylabel 'output tokens/s';"
                             " set y2label 'ITL p50 (ms)'; set y2tics; set key left top; plot '" + data_path +
                             "' using 1:2 with linespoints title 'output tokens/s', '' using 1:3 axes x1y2 "
                             "with linespoints title 'ITL p50 (ms)'";
  const int status = std::system(("gnuplot -e \"" + script + "\"").c_str());
  std::filesystem::remove(data_path);
  if (status != 0) throw Error("moe-bench: gnuplot failed drawing " + png_path);
  return true;
}

}  // namespace moe::bench
