#include "generate/offline_generator.h"

#include <algorithm>

#include "common/error.h"
#include "generate/routing_recorder.h"

namespace moe {
namespace {

// One request's progress: every token it holds (prompt, then outputs) and how many are in the KV cache.
struct SequenceState {
  std::vector<int32_t> tokens;
  std::vector<int32_t> slots;  // a private contiguous range, one per position it can ever hold
  size_t prompt_len = 0;
  size_t fed = 0;
  bool finished = false;
};

}  // namespace

std::vector<GenerationResult> generate(Model& model, const std::vector<GenerationRequest>& requests,
                                       const GeneratorOptions& options) {
  const ModelConfig& config = model.config();
  std::vector<SequenceState> states(requests.size());
  std::vector<GenerationResult> results(requests.size());
  int32_t next_slot = 0;
  for (size_t r = 0; r < requests.size(); ++r) {
    const GenerationRequest& req = requests[r];
    if (req.prompt_ids.empty()) throw Error("request " + std::to_string(r) + ": empty prompt");
    if (req.max_new_tokens < 1) throw Error("request " + std::to_string(r) + ": max_new_tokens must be >= 1");
    states[r].tokens = req.prompt_ids;
    states[r].prompt_len = req.prompt_ids.size();
    const size_t capacity = req.prompt_ids.size() + static_cast<size_t>(req.max_new_tokens);
    for (size_t i = 0; i < capacity; ++i) states[r].slots.push_back(next_slot++);
  }
  KvCache kv = model.make_kv_cache(next_slot);
  RoutingRecorder recorder(static_cast<int>(requests.size()), config.num_moe_layers(), config.num_experts_per_tok);
  std::vector<float> logits;

  for (;;) {
    ForwardBatch batch;
    std::vector<int> owners;
    for (size_t r = 0; r < states.size(); ++r) {
      SequenceState& s = states[r];
      const bool wants_last = s.finished && options.include_last && s.fed < s.tokens.size();
      if (s.finished && !wants_last) continue;
      size_t n = s.tokens.size() - s.fed;
      if (s.fed < s.prompt_len && options.prefill_chunk_size > 0)
        n = std::min(n, static_cast<size_t>(options.prefill_chunk_size));
      const std::vector<int32_t> chunk(s.tokens.begin() + s.fed, s.tokens.begin() + s.fed + n);
      const bool samples = !s.finished && s.fed + n == s.tokens.size();
      batch.add_sequence(chunk, std::vector<int32_t>(s.slots.begin(), s.slots.begin() + s.fed + n), samples);
      owners.push_back(static_cast<int>(r));
    }
    if (owners.empty()) break;
    recorder.begin_batch(batch, owners);
    model.forward(batch, kv, logits, options.record_routing ? &recorder : nullptr);

    int64_t logit_row = 0;
    for (size_t i = 0; i < owners.size(); ++i) {
      const int r = owners[i];
      SequenceState& s = states[r];
      s.fed += batch.sequences[i].num_new_tokens;
      if (!batch.sequences[i].needs_logits) continue;
      const GenerationRequest& req = requests[r];
      GenerationResult& out = results[r];
      const SampledToken token = sample_token(logits.data() + logit_row * config.vocab_size, config.vocab_size,
                                              req.sampling, out.output_ids.size());
      ++logit_row;
      out.output_ids.push_back(token.id);
      out.output_logprobs.push_back(token.logprob);
      s.tokens.push_back(token.id);
      const bool stop = std::find(req.stop_token_ids.begin(), req.stop_token_ids.end(), token.id) !=
                        req.stop_token_ids.end();
      if (stop || static_cast<int>(out.output_ids.size()) >= req.max_new_tokens) s.finished = true;
    }
  }
  if (options.record_routing) {
    for (size_t r = 0; r < results.size(); ++r) {
      results[r].routed_experts = recorder.ids(static_cast<int>(r));
      results[r].routed_weights = recorder.weights(static_cast<int>(r));
      results[r].routed_rows = recorder.rows(static_cast<int>(r));
    }
  }
  return results;
}

}  // namespace moe
