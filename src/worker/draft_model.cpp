#include "worker/draft_model.h"

#include <algorithm>
#include <string>

#include "common/error.h"
#include "moe/routing_capture.h"
#include "sampling/sampler.h"

namespace moe {
namespace {

// The draft's routing of one forward, straight into rows [T, layers, top_k] (the draft runs on the
// CPU: its rows are in host memory when the hook is called).
class RowsCollector final : public RoutingCapture {
 public:
  RowsCollector(int64_t num_tokens, int num_layers, int top_k) {
    rows_.num_layers = num_layers;
    rows_.top_k = top_k;
    rows_.expert_ids.assign(static_cast<size_t>(num_tokens * num_layers * top_k), -1);
  }
  void on_routing(int moe_layer, int64_t num_tokens, int top_k, const int32_t* ids, const float*) override {
    for (int64_t t = 0; t < num_tokens; ++t)
      for (int k = 0; k < top_k; ++k)
        rows_.expert_ids[static_cast<size_t>((t * rows_.num_layers + moe_layer) * top_k + k)] =
            static_cast<int16_t>(ids[t * top_k + k]);
  }
  msg::RoutingRows take() { return std::move(rows_); }

 private:
  msg::RoutingRows rows_;
};

// One draft-then-verify sequence while its tree grows.
struct GrowingTree {
  size_t sequence = 0;       // in the batch
  int64_t first_token = 0;   // its root's index in the batch's token axis
  std::vector<int32_t> prefix_slots;  // the positions before the tree
  std::vector<int32_t> node_slots;    // one per node, in node order
  std::vector<int32_t> depths;        // the shape the scheduler reserved
  int32_t topk = 0;
  std::vector<int32_t> tokens, parents;
  std::vector<float> scores;  // cumulative draft log-probability; the root's is 0
  size_t fed = 0;             // nodes whose K/V the draft's cache holds

  bool full() const { return tokens.size() == depths.size(); }
  // The nodes the next layer takes: those at the depth after the last node's.
  size_t next_layer_size() const {
    const int32_t depth = depths[tokens.size() - 1] + 1;
    return static_cast<size_t>(std::count(depths.begin() + static_cast<int64_t>(tokens.size()), depths.end(), depth));
  }
};

GrowingTree start_tree(const msg::WorkerBatch& batch, size_t i, int64_t first_token) {
  const msg::WorkerSequence& s = batch.sequences[i];
  const auto nodes = static_cast<size_t>(s.num_new_tokens);
  if (s.tree_parents.size() != nodes || nodes < 2 || s.kv_slots.size() < nodes || s.draft_topk < 1 || !s.needs_logits)
    throw Error("a draft-then-verify sequence needs a tree shape of at least two nodes, a slot for each, and logits");
  GrowingTree tree;
  tree.sequence = i;
  tree.first_token = first_token;
  tree.prefix_slots.assign(s.kv_slots.begin(), s.kv_slots.end() - static_cast<int64_t>(nodes));
  tree.node_slots.assign(s.kv_slots.end() - static_cast<int64_t>(nodes), s.kv_slots.end());
  tree.depths = tree_depths(s.tree_parents);
  for (size_t n = 1; n < nodes; ++n)
    if (tree.depths[n] < tree.depths[n - 1] || tree.depths[n] > tree.depths[n - 1] + 1)
      throw Error("a draft-then-verify tree shape must list its nodes layer by layer");
  tree.topk = s.draft_topk;
  tree.tokens = {batch.token_ids[static_cast<size_t>(first_token)]};
  tree.parents = {-1};
  tree.scores = {0.0f};
  return tree;
}

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
      {static_cast<int32_t>(tree.tokens.size() - tree.fed), std::move(slots), true, tree.parents});
}

// Adds the next layer: the best children (by cumulative score; ties to the earlier parent, then the
// more probable child) of the newest layer's nodes, whose logits rows start at `rows`.
void grow_layer(GrowingTree& tree, const float* rows, int64_t vocab) {
  struct Candidate {
    float score;
    int32_t parent, token;
  };
  std::vector<Candidate> candidates;
  msg::TokenSampling greedy;
  greedy.temperature = 0.0f;
  greedy.top_logprobs = tree.topk;
  for (size_t n = tree.fed; n < tree.tokens.size(); ++n) {
    const SampledToken drawn = sample_token(rows + static_cast<int64_t>(n - tree.fed) * vocab, vocab, greedy);
    for (size_t c = 0; c < drawn.top.ids.size(); ++c)
      candidates.push_back({tree.scores[n] + drawn.top.logprobs[c], static_cast<int32_t>(n), drawn.top.ids[c]});
  }
  const size_t take = tree.next_layer_size();
  if (candidates.size() < take)
    throw Error("a draft-then-verify tree shape has a layer wider than draft_topk times the layer above");
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  // Node order within a layer follows the parents, as the shape's layer-by-layer listing wants.
  std::stable_sort(candidates.begin(), candidates.begin() + static_cast<int64_t>(take),
                   [](const Candidate& a, const Candidate& b) { return a.parent < b.parent; });
  tree.fed = tree.tokens.size();
  for (size_t c = 0; c < take; ++c) {
    tree.tokens.push_back(candidates[c].token);
    tree.parents.push_back(candidates[c].parent);
    tree.scores.push_back(candidates[c].score);
  }
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
  ForwardBatch quiet = batch;
  quiet.max_tree_experts = 0;
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

void DraftModel::draft_trees(msg::WorkerBatch& batch, std::vector<int32_t>& tokens, std::vector<int32_t>& parents) {
  std::vector<GrowingTree> trees;
  int64_t first_token = 0;
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    if (batch.sequences[i].draft_topk > 0) trees.push_back(start_tree(batch, i, first_token));
    first_token += batch.sequences[i].num_new_tokens;
  }
  const int64_t vocab = model_->config().vocab_size;
  // One draft forward per layer, over every tree that still has nodes to fill.
  for (;;) {
    ForwardBatch forward;
    std::vector<GrowingTree*> growing;
    for (GrowingTree& tree : trees)
      if (!tree.full()) {
        add_newest_layer(forward, tree);
        growing.push_back(&tree);
      }
    if (growing.empty()) break;
    model_->forward(forward, kv_, logits_, nullptr);
    int64_t row = 0;
    for (GrowingTree* tree : growing) {
      const auto rows = static_cast<int64_t>(tree->tokens.size() - tree->fed);
      grow_layer(*tree, logits_.data() + row * vocab, vocab);
      row += rows;
    }
  }
  for (const GrowingTree& tree : trees) {
    msg::WorkerSequence& s = batch.sequences[tree.sequence];
    std::copy(tree.tokens.begin(), tree.tokens.end(), batch.token_ids.begin() + tree.first_token);
    s.tree_parents = tree.parents;
    tokens.insert(tokens.end(), tree.tokens.begin(), tree.tokens.end());
    parents.insert(parents.end(), tree.parents.begin(), tree.parents.end());
  }
}

}  // namespace moe
