// RotaryEmbedding::apply against reference::rotary in double precision: head_dim from one pair to
// 128 (80: frequencies whose exponents float32 rounds), all of each head rotating or half of it (GLM's
// partial rotary; the other half must pass through), Llama's and Qwen's theta, and positions from 0
// to 32k.
#include "kernels/rotary.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/reference.h"

namespace moe {
namespace {

TEST(Rotary, MatchesReference) {
  constexpr int kHeads = 3;
  for (const int head_dim : {2, 64, 80, 128})
    for (const int rotary_dim : {head_dim, head_dim / 2})
    for (const double theta : {1e4, 1e6})
      for (const int64_t position : {0, 1, 17, 1000, 4095, 32767}) {
        if (rotary_dim % 2 != 0) continue;
        SCOPED_TRACE(::testing::Message() << "head_dim " << head_dim << " rotary_dim " << rotary_dim << " theta "
                                          << theta << " position " << position);
        std::mt19937 rng(static_cast<uint32_t>(head_dim + position));
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        std::vector<float> heads(static_cast<size_t>(kHeads * head_dim));
        for (float& v : heads) v = dist(rng);
        std::vector<float> got = heads;
        RotaryEmbedding(head_dim, rotary_dim, theta).apply(got.data(), kHeads, position);
        std::vector<double> want(heads.size());
        reference::rotary(heads.data(), kHeads, head_dim, rotary_dim, theta, position, want.data());
        // The angle position · inv_freq carries float32's rounding of inv_freq (computed in float,
        // as transformers does) and of the product: an error that grows with the position.
        const double tolerance = 2e-7 * static_cast<double>(position + 1);
        for (size_t i = 0; i < heads.size(); ++i)
          ASSERT_NEAR(got[i], want[i], tolerance) << "head " << i / head_dim << ", element " << i % head_dim;
      }
}

}  // namespace
}  // namespace moe
