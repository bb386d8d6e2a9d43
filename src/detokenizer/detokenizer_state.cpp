#include "detokenizer/detokenizer_state.h"

#include "common/error.h"

namespace moe {
namespace {

// What tells the scheduler that completion `key` ended here, keeping kept_tokens output tokens.
msg::Abort stop(const std::pair<std::string, int32_t>& key, const char* reason, int64_t kept_tokens = -1) {
  msg::Abort abort;
  abort.rid = key.first;
  abort.index = key.second;
  abort.reason = reason;
  abort.stop_string = true;
  abort.kept_tokens = kept_tokens;
  return abort;
}

}  // namespace

DetokenizerState::Result DetokenizerState::apply(const msg::DetokenizeBatch& batch) {
  Result result;
  for (const msg::DetokenizeItem& item : batch.items) {
    const auto key = std::make_pair(item.rid, item.index);
    auto it = outputs_.find(key);
    if (it == outputs_.end()) {
      // Items of a completion already ended by a stop string (still in flight) have nowhere to go.
      if (!item.options) continue;
      it = outputs_.emplace(key, std::make_unique<CompletionOutput>(item.rid, item.index, tokenizer_, *item.options,
                                                                    num_experts_, draft_num_experts_, layer_axis_))
               .first;
    }
    CompletionOutput& output = *it->second;
    try {
      if (auto out = output.apply(item)) result.outputs.push_back(std::move(*out));
    } catch (const Error& e) {
      result.errors.push_back({item.rid, e.what(), 500, "detokenizer", {}});
      result.stopped.push_back(stop(key, "failed"));
      outputs_.erase(it);
      continue;
    }
    if (output.take_stop_report()) result.stopped.push_back(stop(key, "stop string", output.completion_tokens()));
    if (output.finished()) outputs_.erase(it);
  }
  return result;
}

}  // namespace moe
