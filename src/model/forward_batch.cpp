#include "model/forward_batch.h"

#include "common/error.h"

namespace moe {

int64_t ForwardBatch::num_logit_rows() const {
  int64_t rows = 0;
  for (const auto& s : sequences) rows += s.needs_logits ? 1 : 0;
  return rows;
}

void ForwardBatch::add_sequence(const std::vector<int32_t>& tokens, std::vector<int32_t> kv_slots,
                                bool needs_logits) {
  if (tokens.empty() || kv_slots.size() < tokens.size())
    throw Error("a batch sequence needs at least one new token and a KV slot for every position");
  const int32_t first = static_cast<int32_t>(kv_slots.size() - tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    token_ids.push_back(tokens[i]);
    positions.push_back(first + static_cast<int32_t>(i));
  }
  sequences.push_back({static_cast<int32_t>(tokens.size()), std::move(kv_slots), needs_logits});
}

}  // namespace moe
