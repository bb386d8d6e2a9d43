#include "api/server_stats.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace moe::api {
namespace {

// The shortest text that reads back as `value` (Prometheus accepts any float syntax).
std::string number(double value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

// A label value escaped as the exposition format requires: backslash, quote and newline.
std::string escaped(const std::string& value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out;
}

// Accumulates the exposition text, one metric family after another.
class Exposition {
 public:
  explicit Exposition(const std::string& model_name) : label_("model_name=\"" + escaped(model_name) + "\"") {}

  void family(const std::string& name, const char* type, const char* help) {
    text_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void sample(const std::string& name, const std::string& value, const std::string& extra_label = {}) {
    text_ += name + "{" + label_ + (extra_label.empty() ? "" : "," + extra_label) + "} " + value + "\n";
  }
  void scalar(const std::string& name, const char* type, const char* help, double value) {
    family(name, type, help);
    sample(name, number(value));
  }
  void histogram(const std::string& name, const char* help, const Histogram& histogram) {
    family(name, "histogram", help);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < histogram.upper_bounds().size(); ++i) {
      cumulative += histogram.bucket_counts()[i];
      sample(name + "_bucket", std::to_string(cumulative), "le=\"" + number(histogram.upper_bounds()[i]) + "\"");
    }
    sample(name + "_bucket", std::to_string(histogram.count()), "le=\"+Inf\"");
    sample(name + "_sum", number(histogram.sum()));
    sample(name + "_count", std::to_string(histogram.count()));
  }
  const std::string& text() const { return text_; }

 private:
  std::string label_;
  std::string text_;
};

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)), bucket_counts_(upper_bounds_.size() + 1, 0) {
  if (!std::is_sorted(upper_bounds_.begin(), upper_bounds_.end())) {
    throw std::invalid_argument("histogram bounds must ascend");
  }
}

void Histogram::observe(double value) {
  const auto bucket = std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) - upper_bounds_.begin();
  ++bucket_counts_[static_cast<size_t>(bucket)];
  sum_ += value;
  ++count_;
}

Histogram step_time_histogram() {
  return Histogram({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0});
}

Histogram LatencyHistograms::request_time_histogram() {
  return Histogram({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0});
}

std::string render_prometheus(const ServerStats& stats, const std::string& model_name) {
  Exposition out(model_name);
  const auto d = [](auto v) { return static_cast<double>(v); };
  out.scalar("moe_requests_total", "counter", "Generation requests received.", d(stats.requests_total));
  out.scalar("moe_prompt_tokens_total", "counter", "Prompt tokens processed.", d(stats.prompt_tokens_total));
  out.scalar("moe_generation_tokens_total", "counter", "Tokens generated.", d(stats.generation_tokens_total));
  out.scalar("moe_cached_tokens_total", "counter", "Prompt tokens served from the prefix cache.",
             d(stats.cached_tokens_total));
  out.scalar("moe_num_running_requests", "gauge", "Requests in the running batch.", d(stats.running_requests));
  out.scalar("moe_num_waiting_requests", "gauge", "Requests waiting to be scheduled.", d(stats.waiting_requests));
  out.scalar("moe_kv_slots_used", "gauge", "KV-cache token slots in use.", d(stats.kv_slots_used));
  out.scalar("moe_kv_slots_total", "gauge", "KV-cache token slots in the pool.", d(stats.kv_slots_total));
  out.histogram("moe_step_time_seconds", "Time of one scheduler step (forward pass).", stats.step_time_seconds);
  out.scalar("moe_routed_experts_capture_bytes_total", "counter", "Routed-experts bytes copied from the device.",
             d(stats.capture_bytes_total));
  out.scalar("moe_routed_experts_host_cache_bytes", "gauge", "Size of the routed-experts host cache.",
             d(stats.capture_host_cache_bytes));
  out.scalar("moe_overlapped_decode_tokens_total", "counter",
             "Decode tokens planned before the step that samples them came back (overlapped scheduling).",
             d(stats.overlapped_tokens_total));
  out.scalar("moe_spec_verify_passes_total", "counter", "Speculative draft trees verified.",
             d(stats.spec_verify_passes_total));
  out.scalar("moe_spec_draft_tokens_total", "counter", "Draft tokens verified.", d(stats.spec_draft_tokens_total));
  out.scalar("moe_spec_accepted_drafts_total", "counter", "Draft tokens accepted.", d(stats.spec_accepted_drafts_total));
  const auto ratio = [](uint64_t a, uint64_t b) { return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b); };
  out.scalar("moe_spec_accepted_tokens_per_verify", "gauge",
             "Tokens one verify adds on average (accepted drafts and the one it draws itself).",
             stats.spec_verify_passes_total == 0
                 ? 0.0
                 : 1.0 + ratio(stats.spec_accepted_drafts_total, stats.spec_verify_passes_total));
  out.scalar("moe_spec_acceptance_rate", "gauge", "Accepted draft tokens over verified draft tokens.",
             ratio(stats.spec_accepted_drafts_total, stats.spec_draft_tokens_total));
  out.scalar("moe_spec_verify_experts_per_layer", "gauge",
             "Distinct experts a verifying step's draft-tree tokens use per MoE layer, on average.",
             ratio(stats.spec_verify_distinct_experts_total, stats.spec_verify_layer_passes_total));
  out.histogram("moe_time_to_first_token_seconds", "Time from a request's arrival to its first output.",
                stats.latencies.ttft_seconds);
  out.histogram("moe_inter_token_latency_seconds", "Time between a request's outputs, per token.",
                stats.latencies.inter_token_seconds);
  out.histogram("moe_e2e_request_latency_seconds", "Time from a request's arrival to its end.",
                stats.latencies.e2e_seconds);
  out.family("moe_weight_version_info", "gauge", "The weight version serving now, as a label (value 1).");
  out.sample("moe_weight_version_info", "1", "weight_version=\"" + escaped(stats.weight_version) + "\"");
  return out.text();
}

std::string periodic_stats_line(const PeriodicStats& s) {
  char line[256];
  const double usage = s.kv_slots_total > 0 ? static_cast<double>(s.kv_slots_used) / static_cast<double>(s.kv_slots_total) : 0.0;
  const double throughput = s.interval_seconds > 0.0 ? static_cast<double>(s.tokens_generated) / s.interval_seconds : 0.0;
  std::snprintf(line, sizeof line,
                "#running-req: %lld, #queue-req: %lld, #token: %lld, token usage: %.2f, gen throughput (token/s): %.2f",
                static_cast<long long>(s.running_requests), static_cast<long long>(s.waiting_requests),
                static_cast<long long>(s.kv_slots_used), usage, throughput);
  return line;
}

nlohmann::json expert_load_json(const ExpertLoad& load) {
  return {{"num_moe_layers", load.counts.size()},
          {"num_experts", load.counts.empty() ? 0 : load.counts.front().size()},
          {"tokens", load.tokens},
          {"counts", load.counts}};
}

}  // namespace moe::api
