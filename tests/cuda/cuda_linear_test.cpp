// The backend's linears against a double-precision reference on the host: Blas::linear with bf16
// and float32 weights on both of its paths (small_linear up to kSmallRows rows, widened SGEMM above,
// chunked when the matrix exceeds the widening scratch) and in bf16 products (cuBLAS's bf16 GEMM),
// and the grouped expert MLP, float32 and in bf16 products on tensor cores, with expert row counts
// from none to several tiles, odd widths included. Skipped where no GPU is visible.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "cuda/blas.h"
#include "cuda/device_weights.h"
#include "cuda/stream.h"
#include "kernels/weight.h"

namespace moe::cuda {
namespace {

class CudaLinearTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    stream_.emplace();
  }
  cudaStream_t stream() const { return stream_->get(); }

  std::vector<float> random_floats(size_t n) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng_);
    return v;
  }
  // Random weights rounded to bf16, as bits and widened.
  std::vector<uint16_t> random_bf16(size_t n, std::vector<float>& widened) {
    std::vector<uint16_t> bits;
    widened.clear();
    for (float x : random_floats(n)) {
      bits.push_back(float_to_bf16(x));
      widened.push_back(bf16_to_float(bits.back()));
    }
    return bits;
  }
  // A random [rows, cols] matrix on the device, bf16 or float32; `host` gets its values as float32.
  DeviceMatrix random_matrix(int64_t rows, int64_t cols, bool bf16, std::vector<float>& host) {
    DeviceMatrix m;
    m.rows = rows;
    m.cols = cols;
    if (bf16) {
      m.bf16 = DeviceArray<uint16_t>::from_host(random_bf16(static_cast<size_t>(rows * cols), host));
    } else {
      host = random_floats(static_cast<size_t>(rows * cols));
      m.f32 = DeviceArray<float>::from_host(host);
    }
    return m;
  }
  std::vector<float> download(const DeviceArray<float>& a, size_t n) {
    std::vector<float> host(n);
    check(cudaStreamSynchronize(stream()), "sync");
    check(cudaMemcpy(host.data(), a.data(), n * sizeof(float), cudaMemcpyDeviceToHost), "download");
    return host;
  }

  std::mt19937 rng_{7};
  std::optional<Stream> stream_;  // made once a device is known to be there
};

// y[t, n] = Σ_k x[t, k] w[n, k] in double.
std::vector<double> reference_linear(const std::vector<float>& x, int64_t rows, const std::vector<float>& w, int64_t n,
                                     int64_t k) {
  std::vector<double> y(static_cast<size_t>(rows * n), 0.0);
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < k; ++i) y[t * n + j] += double{x[t * k + i]} * w[j * k + i];
  return y;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, int64_t k, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double tolerance = 1e-5 * std::sqrt(static_cast<double>(k)) * 4;
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tolerance) << what << " element " << i;
}

// x with every element rounded to bf16, as bf16 products multiply it.
std::vector<float> rounded_to_bf16(std::vector<float> x) {
  for (float& v : x) v = bf16_to_float(float_to_bf16(v));
  return x;
}

// In bf16 products (the Blas of KernelDType::BF16) a bf16 matrix above kSmallRows rows multiplies x
// rounded to bf16: the products are exact in float32, so the reference on the rounded x holds to
// float32's summation error, as the float32 paths do on x itself.
TEST_F(CudaLinearTest, LinearMatchesReferenceOnBothPathsAndBothDtypes) {
  for (const KernelDType products : {KernelDType::F32, KernelDType::BF16}) {
    const Blas blas(stream(), products);
    for (const auto& [n, k] : {std::pair<int64_t, int64_t>{96, 128}, {37, 61}}) {
      for (const bool bf16 : {true, false}) {
        std::vector<float> w;
        const DeviceMatrix matrix = random_matrix(n, k, bf16, w);
        for (const int64_t rows : {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{9}, int64_t{17}, Blas::kSmallRows,
                                   Blas::kSmallRows + 1, int64_t{150}}) {
          const std::vector<float> x = random_floats(static_cast<size_t>(rows * k));
          const DeviceArray<float> x_dev = DeviceArray<float>::from_host(x);
          DeviceArray<float> y(static_cast<size_t>(rows * n));
          blas.linear(x_dev.data(), rows, matrix, y.data());
          const bool rounds = bf16 && blas.bf16_products(rows);
          expect_close(download(y, y.size()), reference_linear(rounds ? rounded_to_bf16(x) : x, rows, w, n, k), k,
                       std::string(kernel_dtype_name(products)) + " products, " + (bf16 ? "bf16 " : "f32 ") +
                           std::to_string(n) + "x" + std::to_string(k) + " rows " + std::to_string(rows));
        }
      }
    }
  }
}

// A bf16 matrix larger than the widening scratch (16 Mi elements) is widened and multiplied in chunks
// of rows; every chunk's columns of y must land in place.
TEST_F(CudaLinearTest, LargeBf16MatrixIsMultipliedInChunks) {
  const Blas blas(stream());
  const int64_t n = 17000, k = 1024, rows = Blas::kSmallRows + 2;  // 17.4 Mi elements: two chunks
  std::vector<float> w;
  const DeviceMatrix matrix = random_matrix(n, k, true, w);
  const std::vector<float> x = random_floats(static_cast<size_t>(rows * k));
  const DeviceArray<float> x_dev = DeviceArray<float>::from_host(x);
  DeviceArray<float> y(static_cast<size_t>(rows * n));
  blas.linear(x_dev.data(), rows, matrix, y.data());
  const std::vector<float> got = download(y, y.size());
  // Spot checks across both chunks (the full reference is 18 G multiply-adds).
  for (const int64_t t : {int64_t{0}, rows - 1})
    for (const int64_t j : {int64_t{0}, int64_t{16383}, int64_t{16384}, n - 1}) {
      double want = 0.0;
      for (int64_t i = 0; i < k; ++i) want += double{x[t * k + i]} * w[j * k + i];
      EXPECT_NEAR(got[t * n + j], want, 1e-3) << "row " << t << " column " << j;
    }
}

TEST_F(CudaLinearTest, GroupedExpertMlpMatchesReference) {
  // Rows per expert: none, one, a full tile, several tiles; then at most one each, as a one-token
  // step gives them (the kernels then take one row at a time).
  const std::vector<std::vector<int32_t>> row_counts = {{0, 1, 8, 19, 3}, {1, 0, 1, 1, 0}};
  for (const auto& [hidden, width, bf16, counts] :
       {std::tuple<int64_t, int64_t, bool, std::vector<int32_t>>{64, 48, true, row_counts[0]},
        {64, 48, false, row_counts[0]},
        {30, 22, true, row_counts[0]},
        {64, 48, true, row_counts[1]},
        {30, 22, false, row_counts[1]},
        // The tensor-core kernel's shapes (multiples of 64): a block with idle warps (the down
        // projection's 64 of 128 columns), inputs wider than its staged chunk of 256.
        {64, 128, true, row_counts[0]},
        {320, 192, true, row_counts[0]},
        // Several 64-row tiles per expert, a partial last tile, an expert with none: the tiled
        // kernels' cases (a 192-column output leaves the second column block half empty).
        {320, 192, true, {0, 1, 70, 130, 64}},
        {128, 192, true, {65, 0, 3, 128, 1}}}) {
    const int num_experts = 5;
    const int64_t tokens = *std::max_element(counts.begin(), counts.end());
    std::vector<int32_t> offsets = {0};
    for (int32_t c : counts) offsets.push_back(offsets.back() + c);
    const int64_t rows = offsets.back();
    std::vector<std::vector<float>> gate(num_experts), up(num_experts), down(num_experts);
    std::vector<DeviceMatrix> mats;
    auto upload = [&](std::vector<float>& host, int64_t r, int64_t c) {
      mats.push_back(random_matrix(r, c, bf16, host));
      return mats.back().ref().data;
    };
    mats.reserve(3 * num_experts);
    std::vector<const void*> gates, ups, downs;
    for (int e = 0; e < num_experts; ++e) {
      gates.push_back(upload(gate[e], width, hidden));
      ups.push_back(upload(up[e], width, hidden));
      downs.push_back(upload(down[e], hidden, width));
    }
    const auto gate_table = DeviceArray<const void*>::from_host(gates);
    const auto up_table = DeviceArray<const void*>::from_host(ups);
    const auto down_table = DeviceArray<const void*>::from_host(downs);
    const ExpertTables tables{gate_table.data(), up_table.data(), down_table.data(), bf16, num_experts, hidden,
                              width};
    // The experts with rows in id order, then -1 (as group_by_expert lists them); a top_k of that
    // many lets the kernels' block rows reach each of them.
    std::vector<int32_t> active;
    for (int e = 0; e < num_experts; ++e)
      if (counts[e] > 0) active.push_back(e);
    const int top_k = static_cast<int>(active.size());
    active.resize(num_experts, -1);
    // Grouped row r is routed pair order[r] of token token_of[r]: the rows are read in place from
    // the token rows, in an order unlike theirs.
    const int64_t num_tokens = rows + 3;
    std::vector<int32_t> order(static_cast<size_t>(rows)), token_of(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      token_of[r] = static_cast<int32_t>((r * 7 + 2) % num_tokens);
      order[r] = token_of[r] * top_k + static_cast<int32_t>(r % top_k);
    }
    const std::vector<float> tokens_x = random_floats(static_cast<size_t>(num_tokens * hidden));
    std::vector<float> x(static_cast<size_t>(rows * hidden));
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(tokens_x.begin() + token_of[r] * hidden, hidden, x.begin() + r * hidden);
    const auto x_dev = DeviceArray<float>::from_host(tokens_x);
    const auto order_dev = DeviceArray<int32_t>::from_host(order);
    const auto offsets_dev = DeviceArray<int32_t>::from_host(offsets);
    const auto active_dev = DeviceArray<int32_t>::from_host(active);
    DeviceArray<float> act(static_cast<size_t>(rows * width)), out(static_cast<size_t>(rows * hidden));
    // The reference in double; in bf16 products on the input and activation rows rounded to bf16.
    // A float32 activation may round to the neighbouring bf16 where the double one does not: each
    // such flip moves an output by at most 2^-8 of its term, so bf16 products are held to 2^-8 of
    // Σ|act · down| (the float32 kernels to expect_close's summation bound).
    const auto reference = [&](bool bf16_products, std::vector<double>& bound) {
      std::vector<double> want(static_cast<size_t>(rows * hidden));
      bound.assign(want.size(), 0.0);
      const auto input = [&](double v) {
        return bf16_products ? double{bf16_to_float(float_to_bf16(static_cast<float>(v)))} : v;
      };
      for (int e = 0; e < num_experts; ++e)
        for (int64_t r = offsets[e]; r < offsets[e + 1]; ++r) {
          std::vector<double> a(static_cast<size_t>(width));
          for (int64_t j = 0; j < width; ++j) {
            double g = 0.0, u = 0.0;
            for (int64_t i = 0; i < hidden; ++i) {
              g += input(x[r * hidden + i]) * gate[e][j * hidden + i];
              u += input(x[r * hidden + i]) * up[e][j * hidden + i];
            }
            a[j] = input(g / (1.0 + std::exp(-g)) * u);
          }
          for (int64_t c = 0; c < hidden; ++c) {
            double sum = 0.0;
            for (int64_t j = 0; j < width; ++j) {
              sum += a[j] * down[e][c * width + j];
              bound[r * hidden + c] += std::fabs(a[j] * down[e][c * width + j]);
            }
            want[r * hidden + c] = sum;
          }
        }
      return want;
    };
    const std::string label = "grouped " + std::to_string(hidden) + "x" + std::to_string(width);
    std::vector<double> bound;
    grouped_expert_mlp(x_dev.data(), tokens, top_k, order_dev.data(), offsets_dev.data(), active_dev.data(), tables,
                       act.data(), out.data(), stream());
    expect_close(download(out, out.size()), reference(false, bound), hidden * width, label);
    if (!grouped_mma_fits(tables)) continue;
    const std::vector<double> want = reference(true, bound);
    // NaN in every element first: a kernel that leaves one unwritten fails the comparison.
    const auto poison = [&](DeviceArray<float>& a) {
      check(cudaMemsetAsync(a.data(), 0xff, a.size() * sizeof(float), stream()), "cudaMemsetAsync");
    };
    const auto expect_bf16_close = [&](const std::string& kernel) {
      const std::vector<float> got = download(out, out.size());
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-4 + bound[i] / 256) << label << " " << kernel << ", element " << i;
    };
    poison(out);
    grouped_expert_mlp_mma(x_dev.data(), tokens, top_k, order_dev.data(), offsets_dev.data(), active_dev.data(),
                           tables, act.data(), out.data(), stream());
    expect_bf16_close("grouped in bf16 products");
    // The tiled kernels read the token rows in bf16 and keep the activations in bf16.
    DeviceArray<uint16_t> x_bf16(tokens_x.size()), act_bf16(static_cast<size_t>(rows * width));
    round_to_bf16(x_dev.data(), static_cast<int64_t>(tokens_x.size()), x_bf16.data(), stream());
    DeviceArray<int32_t> tiles(static_cast<size_t>(2 * grouped_tiles_capacity(tokens * top_k, num_experts)));
    poison(out);
    grouped_expert_mlp_tiles(x_bf16.data(), tokens, top_k, order_dev.data(), offsets_dev.data(), active_dev.data(),
                             tables, tiles.data(), act_bf16.data(), out.data(), stream());
    expect_bf16_close("tiled");
  }
}

}  // namespace
}  // namespace moe::cuda
