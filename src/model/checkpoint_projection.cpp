// Checkpoint::projection: projection matrices read from GPTQ tensors or quantized at load, kept in
// the checkpoint's weight arena beside the tiled half-precision matrices; and a tensor-parallel rank's
// block of a projection.
#include <cstring>
#include <optional>

#include "common/error.h"
#include "kernels/quantized_weight.h"
#include "model/gptq_matrix.h"
#include "model/safetensors.h"

namespace moe {
namespace {

// The module a "<module>.weight" name belongs to (GPTQ names its tensors after it).
std::string module_of(const std::string& name) {
  constexpr std::string_view kSuffix = ".weight";
  return name.ends_with(kSuffix) ? name.substr(0, name.size() - kSuffix.size()) : name;
}

// Columns `cols` of `whole`, a quantization of whole rows of `whole_cols` columns, with its integers
// and scales as they are: possible where the columns lie within one of its groups (always for int8,
// whose one group is the row) or are whole groups of it; nullopt otherwise.
std::optional<GptqMatrix> column_block(const GptqMatrix& whole, int64_t whole_cols, IndexRange cols,
                                       const std::string& name) {
  const int64_t g = whole.group_size, rows = static_cast<int64_t>(whole.values.size()) / whole_cols;
  const int64_t groups = quantized::num_groups(whole_cols, g);
  const int64_t first = cols.begin / g, last = (cols.begin + cols.count - 1) / g;
  const bool within_one = first == last;
  if (!within_one && (cols.begin % g != 0 || (cols.count % g != 0 && cols.begin + cols.count != whole_cols)))
    return std::nullopt;
  GptqMatrix block;
  block.dtype = whole.dtype;
  block.group_size = quantized::storage_group_size(within_one ? 0 : g, cols.count, name);
  for (int64_t r = 0; r < rows; ++r) {
    const int8_t* row = whole.values.data() + r * whole_cols + cols.begin;
    block.values.insert(block.values.end(), row, row + cols.count);
  }
  for (int64_t r = 0; r < rows; ++r)
    block.scales.insert(block.scales.end(), whole.scales.begin() + r * groups + first,
                        whole.scales.begin() + r * groups + last + 1);
  return block;
}

}  // namespace

WeightView Checkpoint::projection(const std::string& name, int64_t rows, int64_t cols) const {
  const std::string module = module_of(name);
  const bool gptq = format_.gptq && has(module + ".qweight");
  if (format_.gptq && !gptq && !has(name))
    throw Error(dir_ + ": missing tensor '" + module + ".qweight' (GPTQ) or '" + name + "'");
  // A GPTQ checkpoint keeps the modules it did not quantize (lm_head) in float, as they are.
  if (!gptq && format_.at_load == Quantization::None) return matrix(name, rows, cols);
  if (!gptq && format_.gptq) return matrix(name, rows, cols);
  if (gptq) return quantized_copy(name + " (quantized)", rows, cols, [&] { return read_gptq_matrix(*this, module, rows, cols, *format_.gptq); });
  const TensorInfo& t = float_tensor(name, {rows, cols});
  // Quantized from the file's row-major values: no tiled half-precision copy is made.
  return quantized_copy(name + " (quantized)", rows, cols, [&] {
    GptqMatrix q = quantize_at_load(name, WeightView{t.data, t.dtype, rows, cols});
    drop_mapped_pages(t.data, static_cast<size_t>(rows * cols) * dtype_size(t.dtype));
    return q;
  });
}

WeightView Checkpoint::projection_block(const std::string& name, int64_t full_rows, int64_t full_cols, IndexRange rows,
                                        IndexRange cols) const {
  if (rows.begin == 0 && rows.count == full_rows && cols.begin == 0 && cols.count == full_cols)
    return projection(name, full_rows, full_cols);
  const std::string module = module_of(name);
  if (format_.gptq && has(module + ".qweight"))
    throw Error(dir_ + ": the GPTQ tensors of '" + module + "' are not split over tensor-parallel ranks (--tp-size)");
  const TensorInfo& t = float_tensor(name, {full_rows, full_cols});
  check_kernel_dtype(name, t);
  // The block, copied row by row out of the tensor; then tiled or quantized as the whole would be.
  const size_t element = dtype_size(t.dtype), row_bytes = static_cast<size_t>(cols.count) * element;
  std::vector<unsigned char> block(static_cast<size_t>(rows.count) * row_bytes);
  const auto* source = static_cast<const unsigned char*>(t.data);
  for (int64_t r = 0; r < rows.count; ++r)
    std::memcpy(block.data() + static_cast<size_t>(r) * row_bytes,
                source + (static_cast<size_t>(rows.begin + r) * static_cast<size_t>(full_cols) + static_cast<size_t>(cols.begin)) * element,
                row_bytes);
  const WeightView row_major{block.data(), t.dtype, rows.count, cols.count};
  const std::string key = name + " [rows " + std::to_string(rows.begin) + "+" + std::to_string(rows.count) + ", cols " +
                          std::to_string(cols.begin) + "+" + std::to_string(cols.count) + "]";
  if (!format_.gptq && format_.at_load != Quantization::None)
    return quantized_copy(key + " (quantized)", rows.count, cols.count, [&] {
      // Some input columns (a row-parallel block): quantized as part of the whole rows, so that its
      // integers and scales are the one process's and the ranks' partial products add up to its product.
      const WeightView whole_rows{source + static_cast<size_t>(rows.begin) * static_cast<size_t>(full_cols) * element,
                                  t.dtype, rows.count, full_cols};
      if (cols.count < full_cols)
        if (auto block = column_block(quantize_at_load(name, whole_rows), full_cols, cols, name)) return std::move(*block);
      return quantize_at_load(name, row_major);
    });
  return tiled_copy(key, row_major, [] {});
}

VectorParam Checkpoint::vector_part(const std::string& name, int64_t n, IndexRange part) const {
  const VectorParam whole = vector(name, n);
  return VectorParam(whole.begin() + part.begin, whole.begin() + part.begin + part.count);
}

GptqMatrix Checkpoint::quantize_at_load(const std::string& name, const WeightView& source) const {
  GptqMatrix q;
  q.dtype = format_.at_load == Quantization::Int8 ? DType::Q8 : DType::Q4;
  // int8 keeps one scale per output channel, int4 one per group of input columns.
  q.group_size = quantized::storage_group_size(q.dtype == DType::Q8 ? 0 : format_.group_size, source.cols, name);
  q.values.resize(static_cast<size_t>(source.rows * source.cols));
  q.scales.resize(static_cast<size_t>(source.rows * quantized::num_groups(source.cols, q.group_size)));
  quantized::quantize_symmetric(source, q.dtype, q.group_size, q.values.data(), q.scales.data());
  return q;
}

WeightView Checkpoint::quantized_copy(const std::string& key, int64_t rows, int64_t cols,
                                      const std::function<GptqMatrix()>& make) const {
  std::lock_guard lock(tiled_->mutex);
  // Its own key: a tied lm_head quantizes the embedding, which stays as it is for the lookup.
  auto [it, added] = tiled_->views.try_emplace(key);
  if (!added) return it->second;
  // Set once here, so the cached view carries it: float32 or integer products (--kernel-dtype int8).
  const KernelDType kernel_dtype = format_.kernel_dtype == KernelDType::Int8 ? KernelDType::Int8 : KernelDType::F32;
  try {
    const GptqMatrix q = make();
    auto* scales = reinterpret_cast<float*>(tiled_->arena.allocate_bytes(static_cast<int64_t>(q.scales.size() * sizeof(float))));
    std::memcpy(scales, q.scales.data(), q.scales.size() * sizeof(float));
    uint8_t* values = tiled_->arena.allocate_bytes(quantized::tiled_bytes(q.dtype, rows, cols));
    it->second = quantized::tile_into(q.dtype, q.values.data(), rows, cols, scales, q.group_size, values);
    it->second.kernel_dtype = kernel_dtype;
  } catch (...) {
    tiled_->views.erase(it);
    throw;
  }
  return it->second;
}

}  // namespace moe
