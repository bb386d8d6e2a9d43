#pragma once
// The scheduler side of routed-experts capture: stores each step's staged rows in the host cache by
// KV slot, in step order, and says after each step it stored, so that the records held for their
// rows (SchedulerService's queue) go out with exactly their rows, in order, even though rows travel a
// step behind the sampled tokens. With
// pipeline parallelism every stage sends the slice of its own MoE layers; a step's rows count as
// arrived once every layer's slice has. Slices are written to the host cache in step order: stages
// answer independently, so a later step's slice (which may reuse the KV slots of a request that
// finished in an earlier step) can arrive before the earlier step is whole, and must not overwrite
// rows that request's reply has not gathered yet. With an MoE STANDALONE draft, a step is whole once
// the draft model's rows of it (which ride on the step's WorkerResult) are in too; they go to a host
// cache of their own, so they never mix with the target's rows.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "capture/routing_host_cache.h"
#include "moe/messages.h"

namespace moe {

// The draft model's row shape: its MoE layers and top_k (zero layers: no draft rows).
struct DraftRowShape {
  int num_moe_layers = 0;
  int top_k = 0;
};

class RoutingRowsTracker {
 public:
  // `on_step_stored` runs after each step's rows are stored, before a later step's may overwrite
  // slots that step's records name: the moment to gather them.
  RoutingRowsTracker(int64_t num_slots, int num_moe_layers, int top_k, bool with_weights, DraftRowShape draft = {},
                     std::function<void()> on_step_stored = {});

  // A step was sent to the worker: its token axis writes these KV slots.
  void step_scheduled(uint64_t step, std::vector<int32_t> token_slots);
  // Whether the rows of every step <= `step` are in the host cache.
  bool rows_stored_through(uint64_t step) const;
  // Staged rows (a whole row, or one stage's slice of it) from a worker: stored by slot once the step
  // has all its layers and every earlier step is stored, each step followed by on_step_stored.
  void rows_arrived(const msg::StepRouting& routing);
  // The draft model's rows of a step (one per token of its batch); without a draft shape, ignored.
  void draft_rows_arrived(uint64_t step, const msg::RoutingRows& rows);
  // The worker is gone: rows of steps still out will never come.
  void reset();
  // Rows of the given slots (one per position), in order.
  msg::RoutingRows gather(const int32_t* slots, int64_t count, bool with_weights) const;
  // The draft model's rows of the given slots, in order.
  msg::RoutingRows gather_draft(const int32_t* slots, int64_t count) const;

  const RoutingHostCache& host_cache() const { return host_; }
  RoutingHostCache& host_cache() { return host_; }

 private:
  RoutingHostCache host_;
  std::optional<RoutingHostCache> draft_host_;  // with an MoE draft
  struct OutstandingStep {
    std::vector<int32_t> token_slots;
    std::vector<bool> layer_arrived;  // per MoE layer
    int layers_missing = 0;
    std::vector<std::pair<int, StagedRouting>> slices{};  // (first layer, rows), held until stored in order
    bool draft_missing = false;
    StagedRouting draft{};
    bool whole() const { return layers_missing == 0 && !draft_missing; }
  };
  // Stores every whole step at the front, oldest first, each followed by on_step_stored_.
  void store_whole_steps();
  std::map<uint64_t, OutstandingStep> step_slots_;  // scheduled steps whose rows are still (partly) out
  std::function<void()> on_step_stored_;
};

}  // namespace moe
