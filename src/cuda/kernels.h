#pragma once
// Launchers of the CUDA backend's kernels (the .cu files beside this header). Pointers are device
// memory; matrices are row-major float32. Each launcher queues its kernel on `stream` and checks the
// launch. The arithmetic follows the CPU kernels (src/kernels/) in float32, so results differ from
// the CPU's only by summation order.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace moe {
struct RandomElementRule;
}

namespace moe::cuda {

// A weight matrix's device data in its stored type (bf16 bits or float32), [rows, cols] row-major.
struct WeightRef {
  const void* data;
  bool bf16;
  int64_t rows;
  int64_t cols;
};

// out[r] = src[index[r] / index_divisor] for r < rows, rows of `width` floats: the embedding (index =
// token ids), the rows that need logits (index = token indices) and the tokens routed to each expert
// (index = routed pair t·K + k, divisor K).
void gather_rows(const float* src, const int32_t* index, int index_divisor, int64_t rows, int64_t width, float* out,
                 cudaStream_t stream);
// The same from a weight matrix in its stored type (the embedding), widened to float32.
void gather_weight_rows(const WeightRef& src, const int32_t* index, int64_t rows, float* out, cudaStream_t stream);

// y[t, n] = x[t, :] · w[n, :] for t < tokens, in float32 with w widened as read: a warp per few
// output columns, tokens in tiles, so the weights are read once per tile. For few tokens (decode), where a
// step is bound by reading the weights.
void small_linear(const float* x, int64_t tokens, const WeightRef& w, float* y, cudaStream_t stream);
// Up to kMaxLinearParts small_linears of the same input in one launch (y[i] = x · w[i]ᵀ): a layer's
// q, k and v projections. Every w[i] has x's width and one stored type.
constexpr int kMaxLinearParts = 3;
void small_linears(const float* x, int64_t tokens, const WeightRef* w, float* const* y, int parts,
                   cudaStream_t stream);
// dst[i] = widened src[i], bf16 bits to float32 (exact).
void widen_bf16(const uint16_t* src, int64_t n, float* dst, cudaStream_t stream);

// The routed experts of one MoE layer, every expert's matrices of one stored type: device arrays of
// pointers to gate/up [width, hidden] and down [hidden, width], indexed by global expert id.
// num_experts: how many entries the `active` list the grouped kernels are given holds (every
// expert, or one expert-parallel shard's E/D).
struct ExpertTables {
  const void* const* gate;
  const void* const* up;
  const void* const* down;
  bool bf16;
  int num_experts;
  int64_t hidden;
  int64_t width;
};
// The routed pairs sorted by expert (group_by_expert's offsets, order and active, on the device)
// through their expert's SwiGLU MLP, with no host round trip: grouped row r is pair order[r], whose
// input is token row x[order[r] / top_k] (read in place); expert e's rows are offsets[e] ..
// offsets[e+1]-1. act[r] = silu(gate_e·x) · (up_e·x) of `width`, then out[r] = down_e·act[r] of
// `hidden`. The kernels run a block row for each of the first min(E, tokens · top_k) entries of
// `active`, so a decode step launches blocks for the experts it reaches, not for all E. A row count
// any size runs in tiles. `tokens`: the step's, which bounds an expert's rows.
void grouped_expert_mlp(const float* x, int64_t tokens, int top_k, const int32_t* order, const int32_t* offsets,
                        const int32_t* active, const ExpertTables& experts, float* act, float* out,
                        cudaStream_t stream);
// grouped_expert_mlp in bf16 products (--kernel-dtype bf16) on tensor cores: each input row and
// each activation row rounded to bf16 (nearest even), multiplied by the bf16 weights with float32
// accumulation. Only where grouped_mma_fits: bf16 weights, hidden and width multiples of 64.
bool grouped_mma_fits(const ExpertTables& experts);
void grouped_expert_mlp_mma(const float* x, int64_t tokens, int top_k, const int32_t* order, const int32_t* offsets,
                            const int32_t* active, const ExpertTables& experts, float* act, float* out,
                            cudaStream_t stream);
// grouped_expert_mlp_mma for prefill-sized steps (where grouped_mma_fits), with no host round trip
// whatever the step's size: x is the token rows already rounded to bf16 ([tokens, hidden] bf16
// bits), act the activations in bf16 ([tokens · top_k, width]), out as grouped_expert_mlp's. The
// grouped rows are cut into tiles on the device, into `tiles` (2 · grouped_tiles_capacity ints),
// and each projection is one launch sized by that capacity.
int64_t grouped_tiles_capacity(int64_t pairs, int num_experts);
void grouped_expert_mlp_tiles(const uint16_t* x, int64_t tokens, int top_k, const int32_t* order,
                              const int32_t* offsets, const int32_t* active, const ExpertTables& experts,
                              int32_t* tiles, uint16_t* act, float* out, cudaStream_t stream);
// out[rows, cols] = the block at (row0, col0) of a random bf16 tensor with `full_cols` columns, element
// (r, c) being random_element(rule, r · full_cols + c) rounded to bf16 (--load-format dummy).
void random_bf16_block(const RandomElementRule& rule, int64_t full_cols, int64_t row0, int64_t col0, int64_t rows,
                       int64_t cols, uint16_t* out, cudaStream_t stream);
// dst[i] = src[i] rounded to bf16 bits (nearest even, NaN stays NaN): a bf16 product's activations.
void round_to_bf16(const float* src, int64_t n, uint16_t* dst, cudaStream_t stream);
// x[i] += y[i] for i < n.
void add_in_place(float* x, const float* y, int64_t n, cudaStream_t stream);
// x[r, c] += bias[c].
void add_bias(float* x, const float* bias, int64_t rows, int64_t width, cudaStream_t stream);
// gate[i] = silu(gate[i]) · up[i].
void silu_mul(float* gate, const float* up, int64_t n, cudaStream_t stream);
// out[r, c] += sigmoid(gate[r]) · shared[r, c]: Qwen2-MoE's gated shared expert.
void add_sigmoid_gated(float* out, const float* gate, const float* shared, int64_t rows, int64_t width,
                       cudaStream_t stream);

// out[r] = weight · x[r] / rms(x[r]) over rows of `dim` floats; out may be x.
void rms_norm(const float* x, int64_t rows, int64_t dim, const float* weight, float eps, float* out,
              cudaStream_t stream);
// x += branch, then rms_norm of the sum into out: a decoder layer's residual add and the next norm.
void add_rms_norm(float* x, const float* branch, int64_t rows, int64_t dim, const float* weight, float eps, float* out,
                  cudaStream_t stream);

// Where each new token's attention reads: token t sits at positions[t] of its sequence, whose slot
// of position p is slot_table[slot_offsets[t] + p].
struct AttentionTables {
  const int32_t* positions;
  const int32_t* slot_offsets;
  const int32_t* slot_table;
};

// The heads of a layer's attention: num_heads query heads and num_kv_heads key/value heads of
// head_dim floats each.
struct HeadShape {
  int num_heads, num_kv_heads, head_dim;
};
// One layer's K/V pools, [slot, num_kv_heads · head_dim] each: float32, or bf16 bits (bf16: the
// K/V rounded to nearest even as stored, widened as read).
struct KvPoolRef {
  void* keys;
  void* values;
  bool bf16;
};

// Everything between the q/k/v projections and the attention, one block per token and head: each
// q and k head RMS-normed over head_dim with q_norm / k_norm where given (Qwen3; null: none), then
// rotated by its token's position (the pair (i, i + head_dim/2) by position · inv_freq[i],
// kernels/rotary.h's convention); the rotated q stays in q, each token's k and v go to its slot of
// the pools (a prefill chunk's tokens all stored before any attends). q: [tokens, num_heads ·
// head_dim]; k, v: [tokens, num_kv_heads · head_dim].
// split_counters (null where the attention is not split): zeroed for the causal_attention after it.
void norm_rotate_store(float* q, const float* k, const float* v, int64_t tokens, HeadShape heads, const float* q_norm,
                       const float* k_norm, float eps, const int32_t* positions, const float* inv_freq,
                       const int32_t* slots, const KvPoolRef& pool, int32_t* split_counters, cudaStream_t stream);
// Which kernel attends which of a step's tokens. A plain sequence's run of at least kMinTiledRun new
// tokens (a prefill chunk) is cut into query tiles of at most kQueryTile consecutive tokens, which
// the tiled kernel takes (prefill_attention.cu); every other token (decodes, draft-tree tokens,
// short runs) is attended one token at a time. DeviceBatch builds the lists with the step's tables.
constexpr int kQueryTile = 64;
constexpr int kMinTiledRun = 16;
struct QueryRuns {
  const int32_t* tiles = nullptr;  // [num_tiles][2]: a tile's first token and its token count
  int64_t num_tiles = 0;
  const int32_t* single_tokens = nullptr;  // the tokens attended one at a time; null: tokens 0 .. num_single - 1
  int64_t num_single = 0;
  // Every one of `tokens` tokens attended one at a time.
  static QueryRuns every_token(int64_t tokens) { return {nullptr, 0, nullptr, tokens}; }
};
// Whether the tiled kernel takes a layer of this pool and head_dim: bf16 K/V (tensor cores) and
// head_dim 16, 32, 64 or 128. Elsewhere (the float32 exact mode, other head sizes) every token is
// attended one at a time.
bool tiled_attention_supports(const KvPoolRef& pool, int head_dim);
// The step's runs where the tiled kernel takes this layer, else every token one at a time.
QueryRuns attention_runs(const QueryRuns& step_runs, int64_t tokens, const KvPoolRef& pool, int head_dim);

// Causal grouped-query attention of every new token (prefill chunks and decodes mixed) over its
// sequence's slots 0..position, whose K/V are already stored. q, out: [tokens, num_heads · head_dim].
// head_dim <= kMaxHeadDim. runs.tiles go to the tiled kernel, runs' single tokens to the per-token
// kernel. Where few (token, head) pairs of the single tokens
// would leave the device idle, each one's positions are split over several blocks (flash-decoding):
// each writes its partial result to `partials` and counts itself done in `counters`, which
// norm_rotate_store zeroed (for every token of the step; single token i uses counter row i), and the
// last one merges them. The split count depends on runs.num_single and num_heads only, so a captured
// graph stays valid for any positions.
constexpr int kMaxHeadDim = 256;
constexpr int kMaxAttentionSplits = 16;
struct AttentionSplits {
  float* partials;    // attention_partials_size floats of the single tokens (null where that is 0)
  int32_t* counters;  // attention_counters_size ints of the step's tokens (likewise)
};
int attention_splits(int64_t single_tokens, int num_heads);
size_t attention_partials_size(int64_t single_tokens, int num_heads, int head_dim);
// 0 where `single_tokens` of a step of `tokens` are not split, else a counter per token and head.
size_t attention_counters_size(int64_t tokens, int64_t single_tokens, int num_heads);
void causal_attention(const float* q, const QueryRuns& runs, const AttentionTables& tables, const KvPoolRef& pool,
                      int num_heads, int num_kv_heads, int head_dim, const AttentionSplits& split, float* out,
                      cudaStream_t stream);
// The largest attention_partials_size and attention_counters_size of any step up to max_tokens.
size_t max_attention_partials_size(int64_t max_tokens, int num_heads, int head_dim);
size_t max_attention_counters_size(int64_t max_tokens, int num_heads);

// The tiled kernel alone (causal_attention calls it for runs.tiles): a block per (query tile, q
// head). Requires tiled_attention_supports(pool, head_dim).
void tiled_attention(const float* q, const int32_t* tiles, int64_t num_tiles, const AttentionTables& tables,
                     const KvPoolRef& pool, int num_heads, int num_kv_heads, int head_dim, float* out,
                     cudaStream_t stream);

// Expert limiting (--max-tree-experts) as the routing kernels see it: a token t with
// limited_tokens[t] != 0 picks its top-k among the experts e with in_pool[e] != 0 only (its weights
// still the router's probabilities over every expert). All null: no limit.
struct ExpertLimitRef {
  const int32_t* limited_tokens = nullptr;  // [tokens]
  const int32_t* in_pool = nullptr;         // [num_experts]
};
// The pool of an expert limit (moe/moe_runner.h's expert_pool): in_pool[e] = 1 for the max_experts
// experts with the largest router probability summed (in double, in token order) over the tokens
// with limited_tokens[t] != 0, ties to the lower id; 0 for the others. One block: for the few dozen
// tokens of a verify pass. probs: [tokens, num_experts] scratch.
void expert_pool(const float* logits, int64_t tokens, int num_experts, int max_experts, const int32_t* limited_tokens,
                 float* probs, int32_t* in_pool, cudaStream_t stream);
// The router's top-k (at most 32) per token from logits [tokens, num_experts]:
// descending probability, ties to the lower id, weights renormalised over the k when `normalize`
// (moe/moe_runner.cpp's rules), limited tokens among their pool's experts. ids, weights: [tokens,
// top_k]. Where routing is captured, the same ids as int16 and weights also go to capture_ids and
// capture_weights (each may be null).
void route_top_k(const float* logits, int64_t tokens, int num_experts, int top_k, bool normalize,
                 const ExpertLimitRef& limit, int32_t* ids, float* weights, int16_t* capture_ids,
                 float* capture_weights, cudaStream_t stream);
// Sorts the routed pairs p = t·K + k by expert: expert e's pairs take slots offsets[e] ..
// offsets[e + 1] - 1 of `order` (order[slot] = p, slot_of_pair[p] = slot). offsets: [E + 1];
// cursor: [E] scratch; active: [E], the experts with pairs in id order, then -1.
void group_by_expert(const int32_t* ids, int64_t pairs, int num_experts, int32_t* offsets, int32_t* cursor,
                     int32_t* order, int32_t* slot_of_pair, int32_t* active, cudaStream_t stream);
// route_top_k and group_by_expert in one launch of one block, for steps of a few hundred tokens at
// most (the block routes them a warp at a time; its counts and cursors stay in shared memory).
void route_and_group(const float* logits, int64_t tokens, int num_experts, int top_k, bool normalize,
                     const ExpertLimitRef& limit, int32_t* ids, float* weights, int16_t* capture_ids,
                     float* capture_weights, int32_t* offsets, int32_t* order, int32_t* slot_of_pair, int32_t* active,
                     cudaStream_t stream);
// route_top_k and group_by_expert in one launch over many blocks (the last block to finish groups),
// for steps too large for route_and_group's one block. offsets: [E + 2], its last entry the blocks'
// ticket (zeroed here with the counts).
void route_and_group_spread(const float* logits, int64_t tokens, int num_experts, int top_k, bool normalize,
                            const ExpertLimitRef& limit, int32_t* ids, float* weights, int16_t* capture_ids,
                            float* capture_weights, int32_t* offsets, int32_t* cursor, int32_t* order, int32_t* slot_of_pair, int32_t* active,
                            cudaStream_t stream);
// out[t] = Σ_k weights[t, k] · expert_out[slot_of_pair[t·K + k]], added in top-k order.
void combine_experts(const float* expert_out, const int32_t* slot_of_pair, const float* weights, int64_t tokens,
                     int top_k, int64_t width, float* out, cudaStream_t stream);

// Expert parallelism over D shards on this device: shard d holds the experts e with owner[e] = d.
// At most kMaxExpertShards shards (the all-reduce takes the shards' buffers by value).
constexpr int kMaxExpertShards = 64;
// shard_active[d, 0 ..] = the experts of group_by_expert's `active` list that shard d holds, in the
// list's order, then -1 up to per_shard = E/D entries: each shard's grouped kernels run a block row
// per expert of its own that has rows.
void split_active_by_shard(const int32_t* active, const int32_t* owner, int num_experts, int ep_size,
                           int32_t* shard_active, cudaStream_t stream);
// combine_experts over shard `shard`'s pairs only (owner[ids[t·K + k]] = shard), still added in
// top-k order: the shard's partial output, zero for tokens with no expert on it.
void combine_shard_experts(const float* expert_out, const int32_t* slot_of_pair, const float* weights,
                           const int32_t* ids, const int32_t* owner, int shard, int64_t tokens, int top_k,
                           int64_t width, float* out, cudaStream_t stream);
// The all-reduce of the shards' partial outputs with a communicator's in-place contract: afterwards
// each of the `count_buffers` buffers of `count` floats holds their element-wise sum, added in shard
// order (moe_ops.h's all_reduce_sum). The shards share this device, so one kernel reads them all.
void all_reduce_sum(float* const* buffers, int count_buffers, int64_t count, cudaStream_t stream);

// Greedy draws on the device, one per row of logits [rows, vocab]: ids[r] = the row's first maximum
// (ties to the lower id; NaN and -inf never picked, a row of nothing above -inf gives 0, as the
// host's first_max), logprobs[r] = its log_softmax over the row. `scratch`: device memory of
// greedy_pick_scratch_bytes(rows, vocab), for the partial results of each row's chunks.
size_t greedy_pick_scratch_bytes(int64_t rows, int64_t vocab);
void greedy_pick(const float* logits, int64_t rows, int64_t vocab, void* scratch, int32_t* ids, float* logprobs,
                 cudaStream_t stream);

// Holds `stream` for `nanoseconds` with one spinning thread: a test's stand-in for slow work on it.
void spin_for(int64_t nanoseconds, cudaStream_t stream);

}  // namespace moe::cuda
