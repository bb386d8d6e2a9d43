// The pipeline stages overlap: two stages of the Qwen3-MoE fixture run as model-worker threads over
// inproc:// sockets, stage 1 slowed by an injected delay; of two micro-batches A and B sent one after
// the other, stage 0 begins B before stage 1 has finished A, and both come back with the golden
// first token. (That the scheduler keeps a micro-batch per stage in flight is SchedulerPipeline's.)
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <zmq.hpp>

#include "pipeline/worker_actor.h"
#include "support/golden_support.h"
#include "transport/message_codec.h"
#include "transport/zmq_context.h"

namespace moe::testing {
namespace {

using Clock = std::chrono::steady_clock;

// When each forward_stage call began and ended, in call order.
struct StageRuns {
  using Run = std::pair<Clock::time_point, Clock::time_point>;
  std::mutex mutex;
  std::vector<Run> runs;

  // The stage's thread appends under the mutex; the test reads a copy under it too (the ZeroMQ hand-off
  // that orders them is invisible to ThreadSanitizer).
  std::vector<Run> snapshot() {
    std::lock_guard lock(mutex);
    return runs;
  }
};

// The real stage model, with its runs timed and `delay` added before each (the injected slowness).
class TimedStage final : public Model {
 public:
  TimedStage(std::unique_ptr<Model> inner, std::chrono::milliseconds delay, StageRuns& runs)
      : inner_(std::move(inner)), delay_(delay), runs_(runs) {}
  const ModelConfig& config() const override { return inner_->config(); }
  KvCache make_kv_cache(int64_t num_slots) const override { return inner_->make_kv_cache(num_slots); }
  void forward(const ForwardBatch& batch, KvCache& kv, std::vector<float>& logits, RoutingCapture* capture) override {
    inner_->forward(batch, kv, logits, capture);
  }
  LayerRange layers() const override { return inner_->layers(); }
  void forward_stage(const ForwardBatch& batch, KvCache& kv, float* hidden, std::vector<float>& logits,
                     RoutingCapture* capture) override {
    const Clock::time_point begin = Clock::now();
    std::this_thread::sleep_for(delay_);
    inner_->forward_stage(batch, kv, hidden, logits, capture);
    std::lock_guard lock(runs_.mutex);
    runs_.runs.emplace_back(begin, Clock::now());
  }
  std::unique_ptr<CopyEngine> make_copy_engine(const RoutingBufferShape& shape,
                                               std::function<void()> on_ready) const override {
    return inner_->make_copy_engine(shape, std::move(on_ready));
  }

 private:
  std::unique_ptr<Model> inner_;
  std::chrono::milliseconds delay_;
  StageRuns& runs_;
};

// A greedy prefill of `prompt` at slots [first_slot, first_slot + size).
msg::WorkerBatch prefill(uint64_t step, const std::vector<int32_t>& prompt, int32_t first_slot) {
  msg::WorkerBatch batch;
  batch.step = step;
  batch.token_ids = prompt;
  msg::WorkerSequence sequence;
  sequence.id = step;  // a new sequence each time
  sequence.num_new_tokens = static_cast<int32_t>(prompt.size());
  for (size_t i = 0; i < prompt.size(); ++i) {
    batch.positions.push_back(static_cast<int32_t>(i));
    sequence.new_slots.push_back(first_slot + static_cast<int32_t>(i));
  }
  sequence.needs_logits = true;
  sequence.sampling.temperature = 0.0f;
  batch.sequences.push_back(sequence);
  batch.capture_routing = true;
  return batch;
}

TEST(PipelineOverlap, StageZeroBeginsTheNextMicroBatchWhileStageOneStillRunsTheFirst) {
  const Golden golden = load_golden("qwen3-moe-tiny");
  const std::string tag = "inproc://pp-overlap-" + std::to_string(::getpid());
  transport::Context context;
  zmq::socket_t scheduler(context.native(), zmq::socket_type::pull);
  scheduler.set(zmq::sockopt::linger, 0);
  scheduler.bind(tag + "-scheduler");
  zmq::socket_t to_stage0(context.native(), zmq::socket_type::push);
  to_stage0.set(zmq::sockopt::linger, 0);

  StageRuns runs[2];
  const std::vector<LayerRange> layers = split_layers(4, 2);
  std::vector<std::unique_ptr<transport::ActorLoop>> loops;
  transport::ActorLoop heartbeat(context, "heartbeat");
  std::vector<std::unique_ptr<actors::WorkerActor>> stages;
  for (int rank = 0; rank < 2; ++rank) {
    ModelOptions mo;
    mo.layers = layers[rank];
    ModelWorkerOptions options;
    options.settings = {.kv_slots = 512, .max_batch_tokens = 256, .capture_routing = true, .pp_size = 2,
                        .pp_rank = rank, .layer_begin = layers[rank].begin, .layer_end = layers[rank].end};
    auto model = std::make_unique<TimedStage>(Model::load(golden.model_dir, mo),
                                              std::chrono::milliseconds(rank == 1 ? 400 : 0), runs[rank]);
    loops.push_back(std::make_unique<transport::ActorLoop>(context, "stage" + std::to_string(rank)));
    stages.push_back(std::make_unique<actors::WorkerActor>(*loops.back(), heartbeat, std::move(model), options,
                                                           tag + "-stage" + std::to_string(rank), tag + "-scheduler",
                                                           rank == 0 ? tag + "-stage1" : std::string()));
    loops.back()->start();
  }
  heartbeat.start();
  to_stage0.connect(tag + "-stage0");

  // The stages' instances, from their heartbeats; then their results.
  std::vector<uint64_t> instances(2, 0);
  std::vector<msg::WorkerResult> results;
  auto receive = [&](const auto& done) {
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (!done() && Clock::now() < deadline) {
      zmq::pollitem_t item{scheduler.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) == 0) continue;
      zmq::message_t frame;
      (void)scheduler.recv(frame);
      msg::Message message = transport::decode_message(std::string_view(static_cast<const char*>(frame.data()), frame.size()));
      if (auto* beat = std::get_if<msg::Heartbeat>(&message)) instances[beat->settings.pp_rank] = beat->instance;
      if (auto* result = std::get_if<msg::WorkerResult>(&message)) results.push_back(*result);
    }
  };
  receive([&] { return instances[0] != 0 && instances[1] != 0; });
  ASSERT_NE(instances[0], 0u);
  ASSERT_NE(instances[1], 0u);

  for (int i = 0; i < 2; ++i) {  // A, then B at once
    msg::WorkerBatch batch = prefill(static_cast<uint64_t>(i + 1), golden.cases[i].prompt_ids, 200 * i);
    batch.stage_instances = instances;
    const std::string frame = transport::encode_message(batch);
    to_stage0.send(zmq::buffer(frame));
  }
  receive([&] { return results.size() == 2; });
  ASSERT_EQ(results.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(results[i].step, static_cast<uint64_t>(i + 1));
    EXPECT_EQ(results[i].sampled_ids, std::vector<int32_t>{golden.cases[i].output_ids[0]});
  }
  const auto stage0 = runs[0].snapshot(), stage1 = runs[1].snapshot();
  ASSERT_EQ(stage0.size(), 2u);
  ASSERT_EQ(stage1.size(), 2u);
  // Stage 0 began B while stage 1 was still on A: the stages overlapped.
  EXPECT_LT(stage0[1].first, stage1[0].second);
  EXPECT_LT(stage1[0].first, stage1[0].second);

  heartbeat.stop();
  for (auto& loop : loops) loop->stop();
  heartbeat.join();
  for (auto& loop : loops) loop->join();
}

}  // namespace
}  // namespace moe::testing
