#pragma once
// The output check of every GEMM-rows test (float, bf16 products, quantized): the kernel wrote rows
// [row_begin, row_end) of the product into columns y_offset.. of a y of row stride out_stride, each
// value within its tolerance of the reference, and left every other element at the sentinel it was
// filled with.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace moe::test {

struct GemmRows {
  int64_t tokens, out_stride, y_offset, row_begin, row_end;
};

// expected(i): the wanted value and tolerance of element i = t · rows + (r − row_begin) of the
// reference; describe(t, r) names token t, row r in a failure.
inline void expect_gemm_rows(const std::vector<float>& y, const GemmRows& g, float sentinel,
                             const std::function<std::pair<double, double>(int64_t)>& expected,
                             const std::function<std::string(int64_t, int64_t)>& describe) {
  const int64_t rows = g.row_end - g.row_begin;
  for (int64_t t = 0; t < g.tokens; ++t)
    for (int64_t col = 0; col < g.out_stride; ++col) {
      const float got = y[static_cast<size_t>(t * g.out_stride + col)];
      const int64_t r = g.row_begin + col - g.y_offset;
      if (r < g.row_begin || r >= g.row_end) {
        ASSERT_EQ(got, sentinel) << "wrote outside its rows: token " << t << ", y column " << col;
        continue;
      }
      const auto [want, tolerance] = expected(t * rows + (r - g.row_begin));
      ASSERT_NEAR(got, want, tolerance) << describe(t, r);
    }
}

}  // namespace moe::test
