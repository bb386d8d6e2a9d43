// Routing capture on the GPU: the router kernels write the device buffers, a copy stream moves the
// rows into pinned staging, and the rows come out of the capturer exactly and in step order, also
// when every copy is made late by a spinning kernel on the copy stream. Device timestamps show the
// copy of step n running while step n+1's kernels run, after the step's last MoE layer, and the
// buffer it read written again only after it; a capture in host memory gets the rows after the step.
// Skipped where no GPU is visible.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "capture/thread_copy_engine.h"
#include "cuda/cuda_copy_engine.h"
#include "cuda/cuda_model.h"
#include "sampling/sampler.h"
#include "support/capture_run.h"
#include "worker/load_model_on_device.h"

namespace moe::testing {
namespace {

using cuda::CopyTestHooks;
using cuda::CudaCopyEngine;
using cuda::CudaModel;
using cuda::Event;

constexpr int64_t kBufferRows = 4096;

class CudaCaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
    golden_ = load_golden("qwen3-moe-tiny");
    ModelOptions options;
    options.device = Device::Cuda;
    loaded_ = load_model_on_device(golden_.model_dir, options);
    model_ = dynamic_cast<CudaModel*>(loaded_.get());
    ASSERT_NE(model_, nullptr);
  }

  RoutingBufferShape shape() const {
    return {model_->config().num_moe_layers(), kBufferRows, model_->config().num_experts_per_tok, true};
  }

  // A capturer over a CUDA copy engine on the model's stream.
  std::unique_ptr<RoutedExpertsCapturer> capturer(CopyTestHooks hooks, CudaCopyEngine** engine = nullptr) {
    auto copy_engine = std::make_unique<CudaCopyEngine>(model_->stream(), shape(), std::function<void()>{}, hooks);
    if (engine) *engine = copy_engine.get();
    return std::make_unique<RoutedExpertsCapturer>(std::move(copy_engine));
  }

  Golden golden_;
  std::unique_ptr<Model> loaded_;
  CudaModel* model_ = nullptr;
};

// Every case in one batch (prompts whole or a token at a time, then decodes), once with copies as
// fast as they go and once with each copy held 3 ms: both runs give the same ids and weights,
// bit for bit, and those equal the goldens (ids up to near-ties, weights within 1e-4).
TEST_F(CudaCaptureTest, RowsExactAndInStepOrderWithASlowCopy) {
  const int L = shape().num_moe_layers, K = shape().top_k;
  for (int chunk : {1, 1000}) {
    std::vector<std::vector<int16_t>> ids(2);
    std::vector<std::vector<float>> weights(2);
    for (int slow = 0; slow < 2; ++slow) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + (slow ? " slow copy" : " fast copy"));
      const auto capture = capturer({std::chrono::microseconds(slow ? 3000 : 0), false});
      RoutingHostCache host(4096, L, K, true);
      host.fill(-7);
      CaptureRun run{*model_, *capture, host};
      const auto tokens = run.run(golden_.cases, chunk, golden_.max_new_tokens);
      for (size_t r = 0; r < golden_.cases.size(); ++r) {
        const GoldenCase& c = golden_.cases[r];
        SCOPED_TRACE("case " + std::to_string(r));
        EXPECT_EQ(std::vector<int32_t>(tokens[r].begin() + c.prompt_ids.size(), tokens[r].end()), c.output_ids);
        const auto count = static_cast<int64_t>(tokens[r].size() - 1);
        std::vector<int16_t> rows;
        std::vector<float> row_weights;
        host.gather(run.slot_tables[r].data(), count, rows, &row_weights);
        EXPECT_EQ(std::count(rows.begin(), rows.end(), int16_t{-7}), 0);
        expect_rows_match(golden_, c, rows, count);
        for (int64_t i = 0; i < count * L * K; ++i) {
          const int64_t pos = i / (L * K), l = i / K % L, k = i % K;
          if (rows[i] == c.routed_experts[pos][l][k]) {
            EXPECT_NEAR(row_weights[i], c.routed_weights[pos][l][k], 1e-4) << "position " << pos << " layer " << l;
          }
        }
        ids[slow].insert(ids[slow].end(), rows.begin(), rows.end());
        weights[slow].insert(weights[slow].end(), row_weights.begin(), row_weights.end());
      }
    }
    EXPECT_EQ(ids[0], ids[1]);
    EXPECT_TRUE(weights[0] == weights[1]) << "a late copy changed router weights";
  }
}

// Step times on the model's stream, as the test records them around each forward.
struct StepEvents {
  Event begin{Event::Timing::On}, end{Event::Timing::On};
};

// One case decoded for `steps` steps (the prompt first), with test events around each forward.
std::vector<StepEvents> decode_with_events(CudaModel& model, RoutedExpertsCapturer& capturer, const GoldenCase& c,
                                           int steps) {
  KvCache kv = model.make_kv_cache(256);
  std::vector<int32_t> slots;
  for (int32_t i = 0; i < 256; ++i) slots.push_back(i);
  std::vector<StepEvents> events(static_cast<size_t>(steps));
  std::vector<int32_t> tokens = c.prompt_ids;
  std::vector<float> logits;
  size_t fed = 0;
  for (int step = 0; step < steps; ++step) {
    ForwardBatch batch;
    batch.add_sequence({tokens.begin() + fed, tokens.end()}, {slots.begin(), slots.begin() + tokens.size()}, true);
    capturer.begin_step(step, batch.num_tokens());
    events[step].begin.record(model.stream());  // behind the wait for the copy that read this buffer
    model.forward(batch, kv, logits, &capturer);
    events[step].end.record(model.stream());
    capturer.end_step();
    fed = tokens.size();
    tokens.push_back(sample_token(logits.data(), model.config().vocab_size, {{0.0f, 1.0f, -1, 0.0f}, 0, 0, false}).id);
  }
  cuda::check(cudaStreamSynchronize(model.stream()), "cudaStreamSynchronize");  // the last end event
  return events;
}

// Prints every step's times in ms from the first step's start: forward begin/end, rows queued (after
// the last MoE layer), copy begin/end.
void print_timeline(const char* title, const std::vector<StepEvents>& steps, const CudaCopyEngine& engine) {
  std::printf("%s\n  step  forward_begin  forward_end  rows_queued  copy_begin  copy_end   (ms)\n", title);
  const Event& origin = steps[0].begin;
  for (size_t n = 0; n < steps.size(); ++n) {
    const CudaCopyEngine::StepTimes& t = engine.step_times()[n];
    std::printf("  %4zu  %13.3f  %11.3f  %11.3f  %10.3f  %8.3f\n", n, cuda::elapsed_ms(origin, steps[n].begin),
                cuda::elapsed_ms(origin, steps[n].end), cuda::elapsed_ms(origin, t.rows_queued),
                cuda::elapsed_ms(origin, t.copy_begin), cuda::elapsed_ms(origin, t.copy_end));
  }
}

// Copies held 2 ms each (longer than a step of this model): copy n begins after step n's rows are
// queued, is still running when step n+1's kernels begin (the forward did not wait for it) and
// ends before step n+2, which writes the same buffer, begins (the device did wait for that).
TEST_F(CudaCaptureTest, CopyOfStepNOverlapsKernelsOfStepNPlus1) {
  constexpr int kSteps = 8;
  CudaCopyEngine* engine = nullptr;
  const auto capture = capturer({std::chrono::microseconds(2000), true}, &engine);
  const std::vector<StepEvents> steps = decode_with_events(*model_, *capture, golden_.cases[0], kSteps);
  const std::vector<StagedRouting> staged = capture->drain();
  ASSERT_EQ(staged.size(), static_cast<size_t>(kSteps));
  for (int n = 0; n < kSteps; ++n) EXPECT_EQ(staged[n].step, static_cast<uint64_t>(n));
  ASSERT_EQ(engine->step_times().size(), static_cast<size_t>(kSteps));
  print_timeline("copies held 2 ms:", steps, *engine);
  for (int n = 0; n < kSteps; ++n) {
    SCOPED_TRACE("step " + std::to_string(n));
    const CudaCopyEngine::StepTimes& t = engine->step_times()[n];
    EXPECT_GE(cuda::elapsed_ms(t.rows_queued, t.copy_begin), 0.0f);  // after the last MoE layer
    EXPECT_GE(cuda::elapsed_ms(steps[n].begin, t.rows_queued), 0.0f);
    if (n + 1 < kSteps) {
      EXPECT_GT(cuda::elapsed_ms(steps[n + 1].begin, t.copy_end), 0.0f);  // n+1 began before copy n ended
      EXPECT_GT(cuda::elapsed_ms(t.copy_begin, steps[n + 1].end), 0.0f);  // and ended after copy n began
    }
    if (n + 2 < kSteps) {
      EXPECT_GE(cuda::elapsed_ms(t.copy_end, steps[n + 2].begin), 0.0f);  // n+2 began after copy n ended
    }
  }
}

// The same decode with copies as fast as they go, for the figures: the copy of step n, a few
// microseconds, is over before step n+1 gets far.
TEST_F(CudaCaptureTest, PrintsTheTimelineOfUnheldCopies) {
  constexpr int kSteps = 6;
  CudaCopyEngine* engine = nullptr;
  const auto capture = capturer({std::chrono::microseconds(0), true}, &engine);
  const std::vector<StepEvents> steps = decode_with_events(*model_, *capture, golden_.cases[0], kSteps);
  ASSERT_EQ(capture->drain().size(), static_cast<size_t>(kSteps));
  print_timeline("copies unheld:", steps, *engine);
  for (int n = 0; n < kSteps; ++n) {
    const CudaCopyEngine::StepTimes& t = engine->step_times()[n];
    EXPECT_GE(cuda::elapsed_ms(t.rows_queued, t.copy_begin), 0.0f) << "step " << n;
  }
}

// A capture whose buffers are host memory (a draft model's rows, a CPU-side recorder) gets the step's
// rows through on_routing before forward returns: the golden rows.
TEST_F(CudaCaptureTest, HostBufferCaptureGetsTheRowsAfterTheStep) {
  RoutedExpertsCapturer host_capture(std::make_unique<ThreadCopyEngine>(shape()));
  const std::vector<int32_t>& prompt = golden_.cases[0].prompt_ids;
  KvCache kv = model_->make_kv_cache(static_cast<int64_t>(prompt.size()));
  std::vector<int32_t> slots(prompt.size());
  std::iota(slots.begin(), slots.end(), 0);
  ForwardBatch batch;
  batch.add_sequence(prompt, slots, true);
  std::vector<float> logits;
  host_capture.begin_step(0, batch.num_tokens());
  model_->forward(batch, kv, logits, &host_capture);
  host_capture.end_step();
  const std::vector<StagedRouting> staged = host_capture.drain();
  ASSERT_EQ(staged.size(), 1u);
  expect_rows_match(golden_, golden_.cases[0], staged[0].ids, static_cast<int64_t>(prompt.size()));
}

}  // namespace
}  // namespace moe::testing
