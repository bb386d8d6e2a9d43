#include "serving_harness.h"

#include <cstring>

#include "tokenizer/tokenizer.h"

namespace moe::testing {

ServingHarness::ServingHarness(const HarnessOptions& options) {
  const std::string dir = std::string(MOE_TEST_DATA_DIR) + "/" + options.fixture;
  auto model = Model::load(dir);
  const ModelConfig config = model->config();
  SchedulerServiceOptions so;
  so.scheduler = options.scheduler;
  so.enable_routed_experts = options.enable_routed_experts;
  so.seed_source = 42;
  service_ = std::make_unique<SchedulerService>(
      so, ServingModelInfo{config.vocab_size, config.num_moe_layers(), config.num_experts_per_tok, config.num_experts,
                           {}});
  ModelWorkerOptions wo;
  wo.kv_slots = service_->kv_cache_slots();
  wo.max_batch_tokens = 8192;
  wo.enable_routed_experts = options.enable_routed_experts;
  wo.on_routing_ready = [this] {
    std::lock_guard lock(mutex_);
    ++rows_signals_;
    rows_ready_.notify_all();
  };
  worker_ = std::make_unique<ModelWorker>(std::move(model), wo);
  detokenizer_ = std::make_unique<DetokenizerState>(
      tokenizer::Tokenizer::load(std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer"), config.num_experts);
}

void ServingHarness::wait_for_rows() {
  std::unique_lock lock(mutex_);
  rows_ready_.wait_for(lock, std::chrono::milliseconds(50), [&] { return rows_signals_ > 0; });
  rows_signals_ = 0;
}

std::vector<msg::TextOutput> ServingHarness::run(const std::vector<msg::TokenizedRequest>& requests) {
  std::vector<msg::TextOutput> outputs;
  for (const auto& r : requests)
    if (auto error = service_->add_request(r)) errors_.push_back(*error);
  auto drain_output = [&] {
    auto result = detokenizer_->apply(service_->take_output());
    for (auto& o : result.outputs) outputs.push_back(std::move(o));
    for (auto& e : result.errors) errors_.push_back(std::move(e));
    for (const auto& [rid, index] : result.stopped) service_->finish_by_stop_string(rid, index, "");
  };
  for (int idle_rounds = 0; idle_rounds < 200;) {
    if (auto batch = service_->next_batch()) {
      service_->on_worker_result(worker_->execute(*batch));
      drain_output();
      idle_rounds = 0;
      continue;
    }
    // Nothing to run: the last rows may still be on their way from the copy thread.
    service_->on_routing(worker_->take_ready_routing());
    drain_output();
    if (!service_->has_unfinished() && detokenizer_->live_completions() == 0) break;
    wait_for_rows();
    ++idle_rounds;
  }
  return outputs;
}

std::map<std::pair<std::string, int32_t>, JoinedOutput> join_outputs(const std::vector<msg::TextOutput>& outputs) {
  std::map<std::pair<std::string, int32_t>, JoinedOutput> joined;
  for (const auto& o : outputs) {
    JoinedOutput& j = joined[{o.rid, o.index}];
    j.text += o.text;
    j.ids.insert(j.ids.end(), o.output_ids.begin(), o.output_ids.end());
    if (o.routed_experts) {
      const std::string& bytes = o.routed_experts->data;
      const size_t old = j.rows.size();
      j.rows.resize(old + bytes.size() / 2);
      std::memcpy(j.rows.data() + old, bytes.data(), bytes.size());
      j.num_rows += o.routed_experts->shape[0];
    }
    j.cached_tokens = o.cached_tokens;
    if (o.finish_reason) j.finish = o.finish_reason;
    ++j.chunks;
  }
  return joined;
}

msg::TokenizedRequest greedy_request(const std::string& rid, const std::vector<int32_t>& ids, int max_new_tokens) {
  msg::TokenizedRequest r;
  r.rid = rid;
  r.input_ids = ids;
  r.sampling.temperature = 0.0f;
  r.sampling.max_new_tokens = max_new_tokens;
  r.sampling.ignore_eos = true;
  r.routing.return_routed_experts = true;
  r.routing.raw = true;
  r.routing.dtype = "int16";
  return r;
}

}  // namespace moe::testing
