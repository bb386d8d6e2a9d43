#include "detokenizer/detokenizer_state.h"

#include "common/error.h"

namespace moe {

DetokenizerState::Result DetokenizerState::apply(const msg::DetokenizeBatch& batch) {
  Result result;
  for (const msg::DetokenizeItem& item : batch.items) {
    const auto key = std::make_pair(item.rid, item.index);
    auto it = outputs_.find(key);
    if (it == outputs_.end()) {
      // Items of a completion already ended by a stop string (still in flight) have nowhere to go.
      if (!item.options) continue;
      try {
        it = outputs_.emplace(key, std::make_unique<CompletionOutput>(item.rid, item.index, tokenizer_,
                                                                      *item.options, num_experts_)).first;
      } catch (const Error& e) {
        result.errors.push_back({item.rid, e.what(), 400, "detokenizer"});
        result.stopped.push_back(key);
        continue;
      }
    }
    CompletionOutput& output = *it->second;
    try {
      if (auto out = output.apply(item)) result.outputs.push_back(std::move(*out));
    } catch (const Error& e) {
      result.errors.push_back({item.rid, e.what(), 500, "detokenizer"});
      result.stopped.push_back(key);
      outputs_.erase(it);
      continue;
    }
    if (output.stopped_by_string()) result.stopped.push_back(key);
    if (output.finished()) outputs_.erase(it);
  }
  return result;
}

}  // namespace moe
