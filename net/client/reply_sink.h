#pragma once
// One request's handlers as a client of the engine sees them: outputs go to on_output until the last
// of its n completions has finished, then on_done fires once; an error ends it at once. Shared by
// the ZeroMQ client and the embedded Engine, which receive the same outputs by different roads.
#include <algorithm>
#include <memory>
#include <vector>

#include "moe/client.h"

namespace moe {

class ReplySink {
 public:
  ReplySink(int32_t completions, OutputHandler on_output, DoneHandler on_done)
      : remaining_(std::max(completions, 1)), on_output_(std::move(on_output)), on_done_(std::move(on_done)) {}

  // Returns true when this output ended the request.
  bool deliver(const msg::TextOutput& output) {
    on_output_(output);
    if (!output.finish_reason || --remaining_ > 0) return false;
    on_done_(nullptr);
    return true;
  }
  void fail(const msg::ErrorReply& error) { on_done_(std::make_exception_ptr(RequestError(error))); }

 private:
  int32_t remaining_;
  OutputHandler on_output_;
  DoneHandler on_done_;
};

// Handlers that gather a non-streamed request's outputs (one per completion) into `outputs`, ordered
// by completion index when the request is done, then call `on_done`.
inline std::pair<OutputHandler, DoneHandler> collect_outputs(std::shared_ptr<std::vector<msg::TextOutput>> outputs,
                                                             DoneHandler on_done) {
  OutputHandler on_output = [outputs](const msg::TextOutput& output) { outputs->push_back(output); };
  DoneHandler sorted_then_done = [outputs, on_done = std::move(on_done)](std::exception_ptr error) {
    std::sort(outputs->begin(), outputs->end(),
              [](const msg::TextOutput& a, const msg::TextOutput& b) { return a.index < b.index; });
    on_done(error);
  };
  return {std::move(on_output), std::move(sorted_then_done)};
}

}  // namespace moe
