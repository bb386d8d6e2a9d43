// Checkpoint::projection: projection matrices read from GPTQ tensors or quantized at load, kept in
// the checkpoint's weight arena beside the tiled half-precision matrices.
#include <cstring>

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

}  // namespace

WeightView Checkpoint::projection(const std::string& name, int64_t rows, int64_t cols) const {
  const std::string module = module_of(name);
  const bool gptq = format_.gptq && has(module + ".qweight");
  if (format_.gptq && !gptq && !has(name))
    throw Error(dir_ + ": missing tensor '" + module + ".qweight' (GPTQ) or '" + name + "'");
  // A GPTQ checkpoint keeps the modules it did not quantize (lm_head) in float, as they are.
  if (!gptq && format_.at_load == Quantization::None) return matrix(name, rows, cols);
  if (!gptq && format_.gptq) return matrix(name, rows, cols);
  return quantized_projection(name, module, gptq, rows, cols);
}

WeightView Checkpoint::quantized_projection(const std::string& name, const std::string& module, bool gptq,
                                            int64_t rows, int64_t cols) const {
  std::lock_guard lock(tiled_->mutex);
  // Its own key: a tied lm_head quantizes the embedding, which stays as it is for the lookup.
  auto [it, added] = tiled_->views.try_emplace(name + " (quantized)");
  if (!added) return it->second;
  // Set once here, so the cached view carries it: float32 or integer products (--kernel-dtype int8).
  const KernelDType kernel_dtype = format_.kernel_dtype == KernelDType::Int8 ? KernelDType::Int8 : KernelDType::F32;
  try {
    GptqMatrix q;
    if (gptq) {
      q = read_gptq_matrix(*this, module, rows, cols, *format_.gptq);
    } else {
      const TensorInfo& t = float_tensor(name, {rows, cols});
      // Quantized from the file's row-major values: no tiled half-precision copy is made.
      const WeightView source{t.data, t.dtype, rows, cols};
      q.dtype = format_.at_load == Quantization::Int8 ? DType::Q8 : DType::Q4;
      // int8 keeps one scale per output channel, int4 one per group of input columns.
      q.group_size = quantized::storage_group_size(q.dtype == DType::Q8 ? 0 : format_.group_size, cols, name);
      q.values.resize(static_cast<size_t>(rows * cols));
      q.scales.resize(static_cast<size_t>(rows * quantized::num_groups(cols, q.group_size)));
      quantized::quantize_symmetric(source, q.dtype, q.group_size, q.values.data(), q.scales.data());
      drop_mapped_pages(t.data, static_cast<size_t>(rows * cols) * dtype_size(t.dtype));
    }
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
