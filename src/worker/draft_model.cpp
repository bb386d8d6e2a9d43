#include "worker/draft_model.h"

#include <algorithm>
#include <string>

#include "common/error.h"
#include "worker/draft_trees.h"
#include "worker/rows_collector.h"

namespace moe {
namespace {

// The tree's newest layer (the nodes the draft has not run yet) as one sequence of `forward`.
void add_newest_layer(ForwardBatch& forward, const GrowingTree& tree) {
  const auto prefix = static_cast<int32_t>(tree.prefix_slots.size());
  for (size_t n = tree.fed; n < tree.tokens.size(); ++n) {
    forward.token_ids.push_back(tree.tokens[n]);
    forward.positions.push_back(prefix + tree.depths[n]);
  }
  std::vector<int32_t> slots = tree.prefix_slots;
  slots.insert(slots.end(), tree.node_slots.begin(), tree.node_slots.begin() + static_cast<int64_t>(tree.tokens.size()));
  forward.sequences.push_back(
      {static_cast<int32_t>(tree.tokens.size() - tree.fed), forward.keep_slots(std::move(slots)), true, tree.parents});
}

}  // namespace

DraftModel::DraftModel(std::unique_ptr<Model> model, const ModelConfig& target, int64_t kv_slots)
    : model_(std::move(model)), kv_(model_->make_kv_cache(kv_slots)) {
  if (model_->config().vocab_size != target.vocab_size)
    throw Error("--speculative-draft-model-path: the draft's vocabulary (" + std::to_string(model_->config().vocab_size) +
                " tokens) differs from the target's (" + std::to_string(target.vocab_size) +
                "); the draft must share the target's tokenizer");
}

msg::RoutingRows DraftModel::shadow(const ForwardBatch& batch, bool capture_routing) {
  ForwardBatch quiet;
  quiet.token_ids = batch.token_ids;
  quiet.positions = batch.positions;
  quiet.sequences = batch.sequences;  // viewing the slots `batch` keeps, which outlives `quiet`
  for (BatchSequence& s : quiet.sequences) {
    s.needs_logits = false;
    s.prompt_logit_rows = 0;
  }
  const ModelConfig& config = model_->config();
  if (!capture_routing || config.num_moe_layers() == 0) {
    model_->forward(quiet, kv_, logits_, nullptr);
    return {};
  }
  RowsCollector rows(quiet.num_tokens(), config.num_moe_layers(), config.num_experts_per_tok);
  model_->forward(quiet, kv_, logits_, &rows);
  return rows.take();
}

void DraftModel::draft_trees(msg::WorkerBatch& batch, const SequenceTables& tables, std::vector<int32_t>& tokens,
                             std::vector<int32_t>& parents) {
  grow_draft_trees(
      batch, tables, model_->config().vocab_size,
      [&](const std::vector<GrowingTree*>& growing) {
        ForwardBatch forward;
        for (const GrowingTree* tree : growing) add_newest_layer(forward, *tree);
        model_->forward(forward, kv_, logits_, nullptr);
        return logits_.data();
      },
      tokens, parents);
}

}  // namespace moe
