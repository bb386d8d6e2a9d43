#include "scheduler/speculation.h"

#include <algorithm>
#include <cctype>

#include "common/error.h"
#include "sampling/sampler.h"

namespace moe {
namespace {

// The child of `node` (-1: the root) carrying token, or -1.
int32_t find_child(const DraftTree& tree, int32_t node, int32_t token) {
  for (size_t i = 0; i < tree.size(); ++i)
    if (tree.parents[i] == node && tree.tokens[i] == token) return static_cast<int32_t>(i);
  return -1;
}

int32_t num_children(const DraftTree& tree, int32_t node) {
  return static_cast<int32_t>(std::count(tree.parents.begin(), tree.parents.end(), node));
}

}  // namespace

SpeculativeAlgorithm parse_speculative_algorithm(const std::string& name) {
  std::string upper = name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper.empty() || upper == "NONE") return SpeculativeAlgorithm::None;
  if (upper == "NGRAM") return SpeculativeAlgorithm::Ngram;
  if (upper == "STANDALONE") return SpeculativeAlgorithm::Standalone;
  if (upper == "NEXTN" || upper == "EAGLE") return SpeculativeAlgorithm::Nextn;
  if (upper == "EAGLE3") return SpeculativeAlgorithm::Eagle3;
  throw Error("unknown --speculative-algorithm '" + name +
              "'; choose NGRAM, STANDALONE, NEXTN (EAGLE: NEXTN) or EAGLE3");
}

std::optional<Quantization> parse_draft_quantization(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (name == "unquant") return Quantization::None;
  if (name == "int8") return Quantization::Int8;
  if (name == "int4") return Quantization::Int4;
  throw Error("--speculative-draft-model-quantization '" + name +
              "': expected unquant, int8 or int4 (or leave it out: the draft is quantized as the target)");
}

void validate(const SpeculativeConfig& config, int top_k, int pp_size) {
  if (!config.enabled()) {
    if (config.max_tree_experts != 0) throw Error("--max-tree-experts needs --speculative-algorithm");
    if (!config.draft_model_path.empty())
      throw Error("--speculative-draft-model-path needs --speculative-algorithm STANDALONE or EAGLE3");
    if (config.draft_quantization)
      throw Error("--speculative-draft-model-quantization needs --speculative-algorithm STANDALONE");
    return;
  }
  if (config.num_steps < 1) throw Error("--speculative-num-steps must be at least 1");
  if (config.eagle_topk < 1) throw Error("--speculative-eagle-topk must be at least 1");
  if (config.num_draft_tokens < 2)
    throw Error("--speculative-num-draft-tokens must be at least 2 (the root and one draft token)");
  if (config.ngram_min_match < 1 || config.ngram_max_match < config.ngram_min_match)
    throw Error("--speculative-ngram-min-match-window-size must be at least 1 and at most "
                "--speculative-ngram-max-match-window-size, got " + std::to_string(config.ngram_min_match) + " and " +
                std::to_string(config.ngram_max_match));
  if (config.max_tree_experts < 0 || (config.max_tree_experts > 0 && config.max_tree_experts < top_k))
    throw Error("--max-tree-experts must be 0 (off) or at least the model's top_k (" + std::to_string(top_k) +
                "), got " + std::to_string(config.max_tree_experts));
  const bool standalone = config.algorithm == SpeculativeAlgorithm::Standalone;
  if (standalone && config.draft_model_path.empty())
    throw Error("--speculative-algorithm STANDALONE needs --speculative-draft-model-path (the draft checkpoint)");
  if (config.algorithm == SpeculativeAlgorithm::Eagle3 && config.draft_model_path.empty())
    throw Error("--speculative-algorithm EAGLE3 needs --speculative-draft-model-path (the EAGLE-3 head's directory)");
  if (!config.takes_draft_path() && !config.draft_model_path.empty())
    throw Error(config.algorithm == SpeculativeAlgorithm::Nextn
                    ? "--speculative-algorithm NEXTN (or EAGLE) drafts with --model-path's own next-token-prediction "
                      "layer: leave out --speculative-draft-model-path (an EAGLE-3 head is --speculative-algorithm "
                      "EAGLE3)"
                    : "--speculative-draft-model-path is for --speculative-algorithm STANDALONE or EAGLE3 only");
  if (!standalone && config.draft_quantization)
    throw Error("--speculative-draft-model-quantization is for --speculative-algorithm STANDALONE only");
  // The worker's drafter ranks each node's children with the sampler's top alternatives.
  if (config.worker_drafts() && config.eagle_topk > kMaxTopLogprobs)
    throw Error("--speculative-eagle-topk must be at most " + std::to_string(kMaxTopLogprobs) +
                " with STANDALONE, NEXTN or EAGLE3, got " + std::to_string(config.eagle_topk));
  if (pp_size > 1)
    throw Error("--speculative-algorithm cannot be combined with --pp-size " + std::to_string(pp_size) +
                " yet (draft trees are verified only by a whole model in one stage); use --pp-size 1 "
                "or serve without --speculative-algorithm");
}

std::vector<int32_t> standalone_tree_shape(int num_nodes, int width) {
  std::vector<int32_t> parents = {-1};
  for (int n = 1; n < num_nodes; ++n) {
    const int layer = (n - 1) / width;  // 0: the root's children
    parents.push_back(layer == 0 ? 0 : 1 + (layer - 1) * width);
  }
  return parents;
}

DraftTree ngram_draft(std::span<const int32_t> context, int max_nodes, int max_depth, int max_children,
                      NgramMatchWindow window) {
  DraftTree tree;
  const auto n = static_cast<int64_t>(context.size());
  if (max_nodes < 1 || max_depth < 1 || n < 2) return tree;
  for (int64_t g = std::min<int64_t>(window.max, n - 1); g >= std::max(window.min, 1) && tree.size() == 0; --g) {
    const std::span<const int32_t> suffix = context.last(static_cast<size_t>(g));
    // Earlier occurrences end at `end` (exclusive) < n, the most recent first.
    for (int64_t end = n - 1; end >= g && static_cast<int>(tree.size()) < max_nodes; --end) {
      if (!std::equal(suffix.begin(), suffix.end(), context.begin() + (end - g))) continue;
      int32_t node = -1;
      for (int64_t p = end; p < n && p - end < max_depth && static_cast<int>(tree.size()) < max_nodes; ++p) {
        int32_t child = find_child(tree, node, context[p]);
        if (child < 0) {
          if (num_children(tree, node) >= max_children) break;
          tree.tokens.push_back(context[p]);
          tree.parents.push_back(node);
          child = static_cast<int32_t>(tree.size()) - 1;
        }
        node = child;
      }
    }
  }
  return tree;
}

}  // namespace moe
