#include "model/forward_batch.h"

#include <string>

#include "common/error.h"

namespace moe {

int64_t ForwardBatch::num_logit_rows() const {
  int64_t rows = 0;
  for (const auto& s : sequences) rows += s.needs_logits ? 1 : 0;
  return rows;
}

std::vector<int64_t> ForwardBatch::logit_tokens() const {
  std::vector<int64_t> tokens;
  int64_t t = 0;
  for (const BatchSequence& seq : sequences) {
    t += seq.num_new_tokens;
    if (seq.needs_logits) tokens.push_back(t - 1);
  }
  return tokens;
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

void validate_forward_batch(const ForwardBatch& batch, int64_t vocab_size, int64_t num_slots) {
  if (batch.positions.size() != batch.token_ids.size()) throw Error("forward batch: positions and tokens differ");
  int64_t t = 0;
  for (const BatchSequence& seq : batch.sequences) {
    for (int32_t i = 0; i < seq.num_new_tokens; ++i, ++t) {
      if (t >= batch.num_tokens()) throw Error("forward batch: sequences hold more tokens than the batch");
      const int32_t id = batch.token_ids[t], pos = batch.positions[t];
      if (id < 0 || id >= vocab_size) throw Error("token id " + std::to_string(id) + " is outside the vocabulary");
      if (pos < 0 || pos >= static_cast<int64_t>(seq.kv_slots.size()) || (i > 0 && pos != batch.positions[t - 1] + 1))
        throw Error("forward batch: bad position " + std::to_string(pos));
    }
    for (int32_t slot : seq.kv_slots)
      if (slot < 0 || slot >= num_slots) throw Error("forward batch: KV slot " + std::to_string(slot) + " out of range");
  }
  if (t != batch.num_tokens()) throw Error("forward batch: tokens not covered by any sequence");
}

}  // namespace moe
