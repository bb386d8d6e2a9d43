#include "worker/model_worker.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <span>
#include <random>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/error.h"
#include "kernels/thread_pool.h"
#include "model/model_fingerprint.h"
#include "model/nextn_layer.h"
#include "sampling/logit_adjustments.h"
#include "sampling/sampler.h"
#include "sampling/tree_acceptance.h"
#include "worker/verify_expert_counter.h"

namespace moe {
namespace {

msg::StepRouting to_message(StagedRouting&& staged, int first_layer) {
  msg::StepRouting out;
  out.step = staged.step;
  out.first_layer = first_layer;
  out.rows.num_layers = staged.num_moe_layers;
  out.rows.top_k = staged.top_k;
  out.rows.expert_ids = std::move(staged.ids);
  out.rows.weights = std::move(staged.weights);
  return out;
}

// Non-zero, and different for every worker started (0 means "no worker yet" to the scheduler).
uint64_t draw_instance() {
  std::random_device device;
  const uint64_t value = (uint64_t{device()} << 32) ^ device() ^
                         static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return value == 0 ? 1 : value;
}

}  // namespace

ForwardBatch to_forward_batch(const msg::WorkerBatch& batch, const SequenceTables& tables) {
  ForwardBatch forward;
  forward.token_ids = batch.token_ids;
  forward.positions = batch.positions;
  forward.max_tree_experts = batch.max_tree_experts;
  forward.sequences.reserve(batch.sequences.size());
  for (const auto& s : batch.sequences)
    forward.sequences.push_back({s.num_new_tokens, tables.table(s.id), s.needs_logits, s.tree_parents,
                                 static_cast<int32_t>(s.prompt_logprob_ids.size())});
  return forward;
}

ModelWorker::ModelWorker(std::unique_ptr<Model> model, const ModelWorkerOptions& options)
    : load_checkpoint_(options.load_checkpoint),
      model_(std::move(model)),
      kv_(model_->make_kv_cache(options.settings.kv_slots)),
      on_routing_ready_(options.on_routing_ready),
      settings_(options.settings),
      instance_(draw_instance()) {
  // The largest step the scheduler sends: reserved now, so a size the device cannot hold stops the
  // start, not a step.
  model_->reserve_step_workspace(settings_.max_batch_tokens);
  first_moe_layer_ = moe_layers_of(model_->config().moe_layer_ids, model_->layers()).begin;
  if (settings_.capture_routing) capturer_ = make_capturer();
  if (options.eagle3)
    eagle3_ = load_eagle3_head(options.draft_model_path);
  else if (!options.draft_model_path.empty())
    draft_ = load_draft(options.draft_model_path, options.draft_quantization);
  hidden_drafter_ = make_hidden_drafter();
}

std::unique_ptr<Eagle3Head> ModelWorker::load_eagle3_head(const std::string& path) {
  try {
    // The model in place when a token is embedded: a weight update's embedding is the head's from then on.
    return std::make_unique<Eagle3Head>(path, model_->config(),
                                        [this](int32_t token, float* out) { model_->embedding_row(token, out); });
  } catch (const std::exception& e) {
    throw Error("--speculative-draft-model-path " + path + " (an EAGLE-3 head, --speculative-algorithm EAGLE3): " +
                e.what());
  }
}

std::unique_ptr<HiddenStateDrafter> ModelWorker::make_hidden_drafter() {
  const int64_t vocab = model_->config().vocab_size;
  if (eagle3_) return std::make_unique<HiddenStateDrafter>(*eagle3_, vocab, settings_.kv_slots);
  if (NextnLayer* layer = model_->nextn()) return std::make_unique<HiddenStateDrafter>(*layer, vocab, settings_.kv_slots);
  return nullptr;
}

std::unique_ptr<DraftModel> ModelWorker::load_draft(const std::string& path,
                                                    std::optional<Quantization> quantization) const {
  std::unique_ptr<Model> draft;
  try {
    if (load_checkpoint_) {
      draft = load_checkpoint_(path, quantization);
    } else {
      ModelOptions options;
      options.quantization = quantization.value_or(Quantization::None);
      draft = Model::load(path, options);
    }
  } catch (const std::exception& e) {
    // The loader's messages name --quantization: say when the draft's own setting applied instead.
    const std::string own = quantization ? " (as --speculative-draft-model-quantization says)" : "";
    throw Error("--speculative-draft-model-path " + path + own + ": " + e.what());
  }
  return std::make_unique<DraftModel>(std::move(draft), model_->config(), settings_.kv_slots);
}

std::unique_ptr<RoutedExpertsCapturer> ModelWorker::make_capturer() const {
  const ModelConfig& c = model_->config();
  const LayerRange moe_layers = moe_layers_of(c.moe_layer_ids, model_->layers());
  const RoutingBufferShape shape{moe_layers.size(), settings_.max_batch_tokens, c.num_experts_per_tok,
                                 settings_.capture_router_weights};
  return std::make_unique<RoutedExpertsCapturer>(model_->make_copy_engine(shape, on_routing_ready_));
}

ModelWorker::ForwardRun ModelWorker::run_forward(
    const msg::WorkerBatch& batch, const std::function<void(const ForwardBatch&, RoutingCapture*)>& run) {
  ForwardRun done{to_forward_batch(batch, tables_), {}};
  recent_samples_.fill(done.forward.token_ids, batch.future_tokens);
  const ForwardBatch& forward = done.forward;
  const bool capture = batch.capture_routing;
  if (capture && !capturer_) throw Error("routing capture asked of a worker started without it");
  if (capture && batch.capture_router_weights && !capturer_->with_weights())
    throw Error("router weights asked of a worker started without --enable-return-router-weights");
  std::vector<uint8_t> tree_tokens = forward.tree_token_mask();
  const ModelConfig& config = model_->config();
  std::optional<VerifyExpertCounter> counter;
  if (!tree_tokens.empty())
    counter.emplace(capture ? capturer_.get() : nullptr, std::move(tree_tokens),
                    moe_layers_of(config.moe_layer_ids, model_->layers()).size(), config.num_experts);
  RoutingCapture* hook = capture ? capturer_.get() : nullptr;
  if (counter) hook = &*counter;
  if (capture) capturer_->begin_step(batch.step, forward.num_tokens());
  try {
    run(forward, hook);
  } catch (...) {
    if (capture) capturer_->end_step();  // keep the capturer's step sequence consistent
    throw;
  }
  if (capture) capturer_->end_step();
  if (counter) done.verify_experts = counter->counts();
  return done;
}

msg::WorkerResult ModelWorker::execute(const msg::WorkerBatch& batch) {
  tables_.apply(batch);
  if (!model_) throw Error("a step reached a worker whose weights are released (release_memory_occupation)");
  const bool drafts = std::any_of(batch.sequences.begin(), batch.sequences.end(),
                                  [](const msg::WorkerSequence& s) { return s.draft_topk > 0; });
  if (drafts && !draft_ && !hidden_drafter_)
    throw Error("a draft-then-verify step reached a worker without a draft model (--speculative-draft-model-path), "
                "next-token-prediction layer (--speculative-algorithm NEXTN) or EAGLE-3 head (EAGLE3)");
  // The batch as verified: the drafter's trees in place of the placeholders.
  msg::WorkerBatch drafted;
  std::vector<int32_t> drafted_tokens, drafted_parents;
  if (drafts) {
    drafted = batch;
    if (draft_)
      draft_->draft_trees(drafted, tables_, drafted_tokens, drafted_parents);
    else
      hidden_drafter_->draft_trees(drafted, tables_, drafted_tokens, drafted_parents);
  }
  const msg::WorkerBatch& verified = drafts ? drafted : batch;
  const bool greedy_picks = !hidden_drafter_ && model_picks(verified);
  msg::RoutingRows draft_routing;
  ForwardRun done = run_forward(verified, [&](const ForwardBatch& forward, RoutingCapture* capture) {
    if (eagle3_) {
      model_->forward_with_layer_inputs(forward, kv_, logits_, capture, eagle3_->captured_layers(), layer_inputs_);
      eagle3_->project(layer_inputs_.data(), forward.num_tokens(), hidden_);
      hidden_drafter_->shadow(forward, hidden_, false);  // the head has no routing
    } else if (hidden_drafter_) {
      model_->forward_with_hidden(forward, kv_, logits_, capture, hidden_);
      draft_routing = hidden_drafter_->shadow(forward, hidden_, batch.capture_routing);
    } else if (greedy_picks) {
      model_->forward_greedy(forward, kv_, picks_, capture);
    } else {
      model_->forward(forward, kv_, logits_, capture);
    }
    if (draft_) draft_routing = draft_->shadow(forward, batch.capture_routing);
  });
  done.greedy_picks = greedy_picks;
  msg::WorkerResult result = sample(verified, std::move(done));
  result.drafted_tokens = std::move(drafted_tokens);
  result.drafted_parents = std::move(drafted_parents);
  result.draft_routing = std::move(draft_routing);
  return result;
}

std::optional<msg::WorkerResult> ModelWorker::execute_stage(const msg::WorkerBatch& batch, float* hidden) {
  tables_.apply(batch);
  if (!model_) throw Error("a step reached a worker whose weights are released (release_memory_occupation)");
  ForwardRun done = run_forward(batch, [&](const ForwardBatch& forward, RoutingCapture* capture) {
    model_->forward_stage(forward, kv_, hidden, logits_, capture);
  });
  if (!model_->is_last_stage()) return std::nullopt;
  return sample(batch, std::move(done));
}

bool ModelWorker::model_picks(const msg::WorkerBatch& batch) const {
  if (!model_->picks_greedy()) return false;
  return std::all_of(batch.sequences.begin(), batch.sequences.end(), [](const msg::WorkerSequence& s) {
    const msg::TokenSampling& sampling = s.sampling;
    if (!s.prompt_logprob_ids.empty()) return false;  // prompt rows are scored from the logits
    return !s.needs_logits || (s.tree_parents.empty() && sampling.temperature == 0.0f &&
                               sampling.top_logprobs == 0 && !adjusts_logits(sampling));
  });
}

msg::WorkerResult ModelWorker::sample(const msg::WorkerBatch& batch, ForwardRun run) {
  msg::WorkerResult result;
  result.step = batch.step;
  draw(batch, run, result);
  recent_samples_.remember(batch.step, result.sampled_ids);
  result.verify_experts = std::move(run.verify_experts);
  result.routing = take_ready_routing();
  result.worker_instance = instance_;
  return result;
}

void ModelWorker::draw(const msg::WorkerBatch& batch, const ForwardRun& run, msg::WorkerResult& result) const {
  const int64_t vocab = model_->config().vocab_size;
  const ForwardBatch& forward = run.forward;
  struct Draw {
    const msg::WorkerSequence* sequence;
    int64_t first_row;    // its sampled row (the first of a tree's)
    int64_t first_token;  // its first token in the batch's flattened axis
  };
  // One prompt logprob: the row before the prompt token `id` (prompt_logprob_ids).
  struct Scored {
    int64_t row;
    int32_t id;
    int32_t top;
  };
  std::vector<Draw> draws;
  std::vector<Scored> scored;
  bool any_tree = false, any_prompt_top = false;
  int64_t row = 0, token = 0;
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const msg::WorkerSequence& s = batch.sequences[i];
    for (int32_t id : s.prompt_logprob_ids) {
      scored.push_back({row++, id, s.sampling.top_logprobs});
      any_prompt_top |= s.sampling.top_logprobs > 0;
    }
    if (s.needs_logits) draws.push_back({&s, row, token});
    row += forward.sequences[i].num_logit_rows() - forward.sequences[i].prompt_logit_rows;
    token += s.num_new_tokens;
    any_tree |= !s.tree_parents.empty();
  }
  std::vector<std::vector<SampledToken>> drawn(draws.size());
  const auto draw_one = [&](size_t i) {
    const Draw& d = draws[i];
    const msg::TokenSampling& sampling = d.sequence->sampling;
    if (run.greedy_picks) {
      validate(sampling);  // the checks sample_token would make
      const auto pick = static_cast<size_t>(d.first_row);
      drawn[i] = {SampledToken{picks_.ids[pick], picks_.logprobs[pick], {}}};
      return;
    }
    const float* rows = logits_.data() + d.first_row * vocab;
    if (d.sequence->tree_parents.empty()) {
      drawn[i] = {sample_token(rows, vocab, sampling)};
      return;
    }
    const std::span<const int32_t> nodes(forward.token_ids.data() + d.first_token,
                                         static_cast<size_t>(d.sequence->num_new_tokens));
    drawn[i] = accept_draft_tree(rows, vocab, nodes, d.sequence->tree_parents, sampling);
  };
  std::vector<SampledToken> prompt(scored.size());
  if (run.greedy_picks) {  // never with prompt rows to score: model_picks leaves those to the logits
    for (size_t i = 0; i < draws.size(); ++i) draw_one(i);
  } else {
    // Each draw, and each prompt row scored, passes over the whole vocabulary a few times: they share
    // the kernel threads.
    parallel_for(static_cast<int64_t>(draws.size() + scored.size()), 1, [&](int64_t begin, int64_t end) {
      for (auto i = static_cast<size_t>(begin); i < static_cast<size_t>(end); ++i) {
        if (i < draws.size()) {
          draw_one(i);
          continue;
        }
        const Scored& p = scored[i - draws.size()];
        prompt[i - draws.size()] = token_logprob(logits_.data() + p.row * vocab, vocab, p.id, p.top);
      }
    });
  }
  bool any_logprob = false, any_top = false;
  for (const Draw& d : draws) {
    any_logprob |= d.sequence->sampling.return_logprob;
    any_top |= d.sequence->sampling.top_logprobs > 0;
  }
  for (std::vector<SampledToken>& tokens : drawn) {
    if (any_tree) result.sampled_counts.push_back(static_cast<int32_t>(tokens.size()));
    for (SampledToken& t : tokens) {
      result.sampled_ids.push_back(t.id);
      if (any_logprob) result.logprobs.push_back(t.logprob);
      if (any_top) result.top_logprobs.push_back(std::move(t.top));
    }
  }
  for (SampledToken& p : prompt) {
    result.prompt_logprobs.push_back(p.logprob);
    if (any_prompt_top) result.prompt_top_logprobs.push_back(std::move(p.top));
  }
}

void ModelWorker::drop_capturer() {
  if (!capturer_) return;
  for (StagedRouting& staged : capturer_->drain())
    drained_routing_.push_back(to_message(std::move(staged), first_moe_layer_));
  capturer_.reset();  // before the model its copy engine may run on
}

void ModelWorker::install(std::unique_ptr<Model> model) {
  KvCache kv = model->make_kv_cache(settings_.kv_slots);
  model->reserve_step_workspace(settings_.max_batch_tokens);
  drop_capturer();
  hidden_drafter_.reset();  // it may run the old model's next-token-prediction layer
  model_ = std::move(model);  // the old model goes now, before its KV cache
  kv_ = std::move(kv);
  // A new pool is whole: given back again while the KV cache stays released.
  if (kv_released_) model_->release_kv_memory(kv_);
  hidden_drafter_ = make_hidden_drafter();
  if (settings_.capture_routing) capturer_ = make_capturer();
}

msg::WeightsUpdated ModelWorker::update_weights(const msg::UpdateWeights& update) {
  if (update.memory != msg::MemoryAction::None) return change_memory(update);
  if (update.group.action != msg::WeightGroupAction::None) return weight_group_call(update);
  msg::WeightsUpdated answer;
  answer.request = update;
  answer.worker_instance = instance_;
  // The requester reads only the path and a reason of ours: the loader's own message may quote the
  // files it read (a header length, a JSON parse error's last token), which may be any file the
  // server can read. The server log keeps the whole message.
  std::string reason = " failed: its files could not be read as a checkpoint (a file missing or unreadable, or "
                       "not a valid config.json or safetensors file; the server log names it)";
  try {
    if (!load_checkpoint_) throw Error("this model worker cannot load new weights");
    if (!model_) {
      reason = " failed: the weights are released; resume_memory_occupation first";
      throw Error("the weights are released");
    }
    std::unique_ptr<Model> model = load_checkpoint_(update.model_path, std::nullopt);
    if (auto mismatch = config_mismatch(model_->config(), model->config())) {
      reason = " failed: it holds another model than the one serving; new weights must keep the architecture and "
               "sizes (the server log names the difference)";
      throw Error(update.model_path + " holds another model than the one serving (" + *mismatch + ")");
    }
    answer.model_fingerprint = model_fingerprint(update.model_path);
    install(std::move(model));
    std::lock_guard lock(settings_mutex_);
    settings_.model_fingerprint = answer.model_fingerprint;
  } catch (const std::exception& e) {
    spdlog::error("worker: loading new weights from {} failed: {}", update.model_path, e.what());
    answer.message = "loading " + update.model_path + reason;
    return answer;
  }
  answer.success = true;
  return answer;
}

std::vector<msg::StepRouting> ModelWorker::take_ready_routing() {
  std::vector<msg::StepRouting> out = std::exchange(drained_routing_, {});
  if (!capturer_) return out;
  for (StagedRouting& staged : capturer_->take_ready())
    out.push_back(to_message(std::move(staged), first_moe_layer_));
  return out;
}

}  // namespace moe
