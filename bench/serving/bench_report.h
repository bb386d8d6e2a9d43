#pragma once
// moe-bench's outputs: a Markdown table, and a PNG of throughput and latency against concurrency
// drawn by gnuplot when it is installed.
#include <string>
#include <vector>

#include "serving/serving_stats.h"

namespace moe::bench {

// One measured configuration: its label (e.g. "c=8") and figures.
struct LabelledStats {
  std::string label;
  int concurrency = 0;
  ServingStats stats;
};

std::string markdown_table(const std::vector<LabelledStats>& runs);

// Draws output tokens/s and ITL p50 against concurrency into png_path. Returns false (and writes
// nothing) when gnuplot is not on PATH.
bool plot_sweep(const std::vector<LabelledStats>& runs, const std::string& png_path);

}  // namespace moe::bench
