#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/exp_sum.h"
#include "kernels/simd.h"
#include "kernels/thread_pool.h"

namespace moe {
namespace {

constexpr int kLanes = 8;
// A parallel chunk covers at least this many query·key products, each also weighing a value row
// (~8 µs of work): a decode batch's items still spread over the threads, yet each chunk
// outweighs its hand-out.
constexpr int64_t kMinChunkProducts = int64_t{1} << 16;
// How many positions ahead of the scores a decode token's key rows are prefetched: its rows sit
// at scattered slots and come from DRAM, read by no other token of the step.
constexpr int64_t kPrefetchPositions = 16;

float horizontal_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// Lane i of the result is the sum of the lanes of a[i]: eight horizontal sums in nine shuffles
// and adds, where one costs four.
__m256 sum_each(const __m256 (&a)[kLanes]) {
  const __m256 pairs01 = _mm256_hadd_ps(a[0], a[1]), pairs23 = _mm256_hadd_ps(a[2], a[3]);
  const __m256 pairs45 = _mm256_hadd_ps(a[4], a[5]), pairs67 = _mm256_hadd_ps(a[6], a[7]);
  // Lanes 0-3: a[0..3] summed over their low 128 bits, lanes 4-7: over their high 128 bits.
  const __m256 quads0123 = _mm256_hadd_ps(pairs01, pairs23), quads4567 = _mm256_hadd_ps(pairs45, pairs67);
  return _mm256_add_ps(_mm256_permute2f128_ps(quads0123, quads4567, 0x20),
                       _mm256_permute2f128_ps(quads0123, quads4567, 0x31));
}

// head_dim as whole 8-float chunks and, when it is not a multiple of 8, one last chunk read
// through a lane mask (masked lanes load as 0 and touch no memory).
struct HeadDimChunks {
  explicit HeadDimChunks(int head_dim)
      : full(head_dim / kLanes), has_tail(head_dim % kLanes != 0), tail_mask(simd::lanes_below(head_dim % kLanes)) {}
  int full;
  bool has_tail;
  __m256i tail_mask;
};

// The rows of one KV head in the cache, by sequence position.
struct KvHeadRows {
  const float* base;  // the cache's first row, offset to this KV head
  const int32_t* slots;
  int64_t stride;
  const float* row(int64_t position) const { return base + slots[position] * stride; }
};

// Runs step(d, load) over head_dim's chunks, load being a plain or a masked 8-float load.
template <typename Step>
inline void for_each_chunk(const HeadDimChunks& dim, Step step) {
  for (int c = 0; c < dim.full; ++c) step(c * kLanes, [](const float* p) { return _mm256_loadu_ps(p); });
  if (dim.has_tail)
    step(dim.full * kLanes, [mask = dim.tail_mask](const float* p) { return _mm256_maskload_ps(p, mask); });
}

// The H·P = 8 dot products of H query heads with P key rows, in lane h·P + p. Each chunk of a key
// row is loaded once for all H heads, and no sum is reduced before the end.
template <int H, int P>
__m256 dot_products(const float* const* queries, const float* const* keys, const HeadDimChunks& dim) {
  static_assert(H * P == kLanes);
  __m256 acc[kLanes];
  for (__m256& a : acc) a = _mm256_setzero_ps();
  for_each_chunk(dim, [&](int d, auto load) {
    __m256 key[P];
    for (int p = 0; p < P; ++p) key[p] = load(keys[p] + d);
    for (int h = 0; h < H; ++h) {
      const __m256 query = load(queries[h] + d);
      for (int p = 0; p < P; ++p) acc[h * P + p] = _mm256_fmadd_ps(query, key[p], acc[h * P + p]);
    }
  });
  return sum_each(acc);
}

// Asks for the cache lines of one head_dim-long row ahead of its use (the last one separately:
// rows need not start on a line).
void prefetch_row(const float* row, int head_dim) {
  constexpr int kFloatsPerLine = 64 / sizeof(float);
  for (int d = 0; d < head_dim; d += kFloatsPerLine) _mm_prefetch(reinterpret_cast<const char*>(row + d), _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(row + head_dim - 1), _MM_HINT_T0);
}

// One token's query heads that share a KV head, and where their results go.
struct QueryGroup {
  const float* q;  // heads × head_dim
  float* out;      // heads × head_dim
  int heads;
  int head_dim;
};

// scores[h·stride + p] = scale · q_h·k_p for p < stride (visible rounded up to 8): positions past
// the visible ones repeat the last visible key, so the padding holds copies of real scores. Heads
// go in pairs (4 keys per tile), an odd one last (8 keys per tile). With prefetch, the key rows
// ahead and the value rows for the weighted sums that follow are asked for on the way (for a
// prefill's tokens, which share their rows, they are mostly in cache and it costs more than it saves).
void compute_scores(const QueryGroup& group, const KvHeadRows& keys, const KvHeadRows& values, int64_t visible,
                    bool prefetch, const HeadDimChunks& dim, float scale, float* scores, int64_t stride) {
  const __m256 scale8 = _mm256_set1_ps(scale);
  const float* key_rows[kLanes];
  for (int64_t p0 = 0; p0 < stride; p0 += kLanes) {
    for (int j = 0; j < kLanes; ++j) key_rows[j] = keys.row(std::min(p0 + j, visible - 1));
    for (int j = 0; prefetch && j < kLanes; ++j) {
      prefetch_row(keys.row(std::min(p0 + kPrefetchPositions + j, visible - 1)), group.head_dim);
      prefetch_row(values.row(std::min(p0 + j, visible - 1)), group.head_dim);
    }
    int h = 0;
    for (; h + 2 <= group.heads; h += 2) {
      const float* queries[2] = {group.q + h * group.head_dim, group.q + (h + 1) * group.head_dim};
      for (int half = 0; half < 2; ++half) {
        const __m256 s = _mm256_mul_ps(dot_products<2, 4>(queries, key_rows + 4 * half, dim), scale8);
        _mm_storeu_ps(scores + h * stride + p0 + 4 * half, _mm256_castps256_ps128(s));
        _mm_storeu_ps(scores + (h + 1) * stride + p0 + 4 * half, _mm256_extractf128_ps(s, 1));
      }
    }
    if (h < group.heads) {
      const float* query = group.q + h * group.head_dim;
      _mm256_storeu_ps(scores + h * stride + p0, _mm256_mul_ps(dot_products<1, 8>(&query, key_rows, dim), scale8));
    }
  }
}

// Replaces one head's scores over the visible positions by exp(score - max) and returns 1 / their
// sum; the padding past them is left as it is (nothing reads it). The padding holds copies of real
// scores, so the max may include it. Subtracting the max keeps every exponent <= 0.
float exponentiate(float* scores, int64_t visible, int64_t stride) {
  __m256 max8 = _mm256_set1_ps(-INFINITY);
  for (int64_t p = 0; p < stride; p += kLanes) max8 = _mm256_max_ps(max8, _mm256_loadu_ps(scores + p));
  return static_cast<float>(1.0 / sum_of_exps(scores, visible, horizontal_max(max8), 1.0f, scores));
}

// Softmax weights of consecutive heads: weights[h·stride + p], to be scaled by norms[h].
struct HeadWeights {
  const float* weights;
  int64_t stride;
  const float* norms;
};

// out_h[d .. d + 8C) = norm_h · Σ_p weight_h[p]·v_p[d .. d + 8C) for H heads (out_h at
// out + h·head_dim): an H × C tile of accumulators stays in registers over all positions. Masked is
// for the last partial chunk (C = 1).
template <int H, int C, bool Masked>
void weighted_value_tile(const HeadWeights& heads, const KvHeadRows& values, int64_t visible, int d, float* out,
                         int head_dim, __m256i mask) {
  static_assert(!Masked || C == 1);
  __m256 acc[H][C];
  for (auto& row : acc)
    for (__m256& a : row) a = _mm256_setzero_ps();
  for (int64_t p = 0; p < visible; ++p) {
    const float* v = values.row(p) + d;
    __m256 value[C];
    for (int c = 0; c < C; ++c) value[c] = Masked ? _mm256_maskload_ps(v, mask) : _mm256_loadu_ps(v + c * kLanes);
    for (int h = 0; h < H; ++h) {
      const __m256 w = _mm256_broadcast_ss(heads.weights + h * heads.stride + p);
      for (int c = 0; c < C; ++c) acc[h][c] = _mm256_fmadd_ps(w, value[c], acc[h][c]);
    }
  }
  for (int h = 0; h < H; ++h) {
    const __m256 norm = _mm256_set1_ps(heads.norms[h]);
    for (int c = 0; c < C; ++c) {
      float* o = out + h * head_dim + d + c * kLanes;
      const __m256 result = _mm256_mul_ps(acc[h][c], norm);
      if constexpr (Masked)
        _mm256_maskstore_ps(o, mask, result);
      else
        _mm256_storeu_ps(o, result);
    }
  }
}

// The weighted value sums of H heads over all of head_dim: tiles of 8/H chunks, then single
// chunks, then the masked tail.
template <int H>
void weighted_values(const HeadWeights& heads, const KvHeadRows& values, int64_t visible, const HeadDimChunks& dim,
                     float* out, int head_dim) {
  constexpr int kTileChunks = kLanes / H;
  int c = 0;
  for (; c + kTileChunks <= dim.full; c += kTileChunks)
    weighted_value_tile<H, kTileChunks, false>(heads, values, visible, c * kLanes, out, head_dim, dim.tail_mask);
  for (; c < dim.full; ++c)
    weighted_value_tile<H, 1, false>(heads, values, visible, c * kLanes, out, head_dim, dim.tail_mask);
  if (dim.has_tail) weighted_value_tile<H, 1, true>(heads, values, visible, c * kLanes, out, head_dim, dim.tail_mask);
}

// What one new token sees: its sequence's slots, how many positions, and whether it is its
// sequence's only new token (a decode token, whose KV rows are worth prefetching).
struct TokenView {
  const int32_t* kv_slots;
  int64_t visible;
  bool decode;
};

// Attention of one token's query group over its visible positions; scratch holds the scores.
void attend(const QueryGroup& group, const KvHeadRows& keys, const KvHeadRows& values, const TokenView& token,
            const HeadDimChunks& dim, float scale, std::vector<float>& scratch) {
  const int64_t visible = token.visible;
  const int64_t stride = (visible + kLanes - 1) / kLanes * kLanes;
  scratch.resize(static_cast<size_t>(group.heads * (stride + 1)));
  float* scores = scratch.data();
  float* norms = scores + group.heads * stride;
  compute_scores(group, keys, values, visible, token.decode, dim, scale, scores, stride);
  for (int h = 0; h < group.heads; ++h) norms[h] = exponentiate(scores + h * stride, visible, stride);
  // Heads in tiles of 4, then 2, then 1: at most 8 accumulators each.
  for (int h = 0; h < group.heads;) {
    const HeadWeights tile{scores + h * stride, stride, norms + h};
    float* tile_out = group.out + h * group.head_dim;
    const int remaining = group.heads - h;
    if (remaining >= 4) {
      weighted_values<4>(tile, values, visible, dim, tile_out, group.head_dim);
      h += 4;
    } else if (remaining >= 2) {
      weighted_values<2>(tile, values, visible, dim, tile_out, group.head_dim);
      h += 2;
    } else {
      weighted_values<1>(tile, values, visible, dim, tile_out, group.head_dim);
      h += 1;
    }
  }
}

}  // namespace

void causal_attention(const float* q, std::span<const AttentionSequence> sequences, const float* keys,
                      const float* values, int64_t kv_stride, const AttentionShape& shape, float* out) {
  std::vector<TokenView> tokens;
  int64_t longest = 0;
  for (const AttentionSequence& seq : sequences) {
    for (int64_t i = 0; i < seq.num_new; ++i)
      tokens.push_back({seq.kv_slots, seq.first_position + i + 1, seq.num_new == 1});
    longest = std::max(longest, seq.first_position + seq.num_new);
  }
  const int hd = shape.head_dim;
  const int group_size = shape.num_heads / shape.num_kv_heads;
  const int64_t q_stride = static_cast<int64_t>(shape.num_heads) * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const HeadDimChunks dim(hd);
  const int64_t num_items = static_cast<int64_t>(tokens.size()) * shape.num_kv_heads;
  const int64_t item_products = std::max<int64_t>(1, longest * hd * group_size);
  const int64_t min_items = (kMinChunkProducts + item_products - 1) / item_products;
  // Items are (token, KV head) pairs, independent of each other: each reads its KV rows once for
  // all the query heads that share them.
  parallel_for(num_items, min_items, [&](int64_t item_begin, int64_t item_end) {
    thread_local std::vector<float> scratch;
    for (int64_t item = item_begin; item < item_end; ++item) {
      // Last token first: a prefill's last tokens see the most positions, and handing out the
      // costliest items first leaves cheap ones to even out the threads at the end.
      const int64_t reversed = num_items - 1 - item;
      const int64_t t = reversed / shape.num_kv_heads;
      const int kv_head = static_cast<int>(reversed % shape.num_kv_heads);
      const int64_t head_offset = t * q_stride + static_cast<int64_t>(kv_head) * group_size * hd;
      const QueryGroup group{q + head_offset, out + head_offset, group_size, hd};
      const int64_t kv_offset = static_cast<int64_t>(kv_head) * hd;
      const TokenView& token = tokens[t];
      attend(group, KvHeadRows{keys + kv_offset, token.kv_slots, kv_stride},
             KvHeadRows{values + kv_offset, token.kv_slots, kv_stride}, token, dim, scale, scratch);
    }
  });
}

}  // namespace moe
