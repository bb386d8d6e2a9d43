#include "cuda/device_batch.h"

namespace moe::cuda {

void DeviceBatch::upload(const ForwardBatch& batch, cudaStream_t stream) {
  num_tokens_ = batch.num_tokens();
  const std::vector<int64_t> logit_tokens = batch.logit_tokens();
  num_logit_rows_ = static_cast<int64_t>(logit_tokens.size());

  std::vector<int32_t> own_slots, slot_offsets, slot_table;
  int64_t t = 0;
  for (const BatchSequence& seq : batch.sequences) {
    const auto offset = static_cast<int32_t>(slot_table.size());
    for (int32_t i = 0; i < seq.num_new_tokens; ++i, ++t) {
      own_slots.push_back(seq.kv_slots[batch.positions[t]]);
      slot_offsets.push_back(offset);
    }
    slot_table.insert(slot_table.end(), seq.kv_slots.begin(), seq.kv_slots.end());
  }

  host_.clear();
  auto append = [&](Table table, const auto& values) {
    starts_[table] = host_.size();
    for (auto v : values) host_.push_back(static_cast<int32_t>(v));
  };
  append(kTokenIds, batch.token_ids);
  append(kPositions, batch.positions);
  append(kOwnSlots, own_slots);
  append(kSlotOffsets, slot_offsets);
  append(kLogitTokens, logit_tokens);
  append(kSlotTable, slot_table);
  device_.reserve(host_.size());
  check(cudaMemcpyAsync(device_.data(), host_.data(), host_.size() * sizeof(int32_t), cudaMemcpyHostToDevice, stream),
        "cudaMemcpyAsync (batch tables)");
}

}  // namespace moe::cuda
