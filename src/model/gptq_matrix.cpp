#include "model/gptq_matrix.h"

#include <cstring>

#include "common/error.h"
#include "kernels/quantized_weight.h"
#include "kernels/thread_pool.h"
#include "model/safetensors.h"

namespace moe {
namespace {

const TensorInfo& tensor_of(const Checkpoint& ckpt, const std::string& name, const std::vector<int64_t>& shape,
                            bool integers) {
  const TensorInfo& t = ckpt.tensor_of_shape(name, shape);
  const bool is_float = t.dtype == DType::F32 || t.dtype == DType::BF16 || t.dtype == DType::F16;
  if (integers ? t.dtype != DType::I32 : !is_float)
    throw Error(*t.file + ": tensor '" + name + "' has dtype " + dtype_name(t.dtype) + "; expected " +
                (integers ? "I32" : "F16, BF16 or F32"));
  return t;
}

uint32_t word(const TensorInfo& t, int64_t i) {
  uint32_t w;
  std::memcpy(&w, static_cast<const uint8_t*>(t.data) + 4 * i, 4);
  return w;
}

}  // namespace

GptqMatrix read_gptq_matrix(const Checkpoint& ckpt, const std::string& module, int64_t rows, int64_t cols,
                            const GptqConfig& config) {
  const int bits = config.bits, pack = 32 / bits;
  const uint32_t mask = (1u << bits) - 1;
  const int center = 1 << (bits - 1);
  if (cols % pack != 0 || rows % pack != 0)
    throw Error(module + ".qweight: a [" + std::to_string(rows) + ", " + std::to_string(cols) +
                "] Linear cannot be packed " + std::to_string(pack) + " values to an int32 (both sizes must be multiples)");
  const int64_t group = config.group_size == -1 ? cols : config.group_size;
  const int64_t groups = (cols + group - 1) / group;
  const TensorInfo& qweight = tensor_of(ckpt, module + ".qweight", {cols / pack, rows}, true);
  const TensorInfo& qzeros = tensor_of(ckpt, module + ".qzeros", {groups, rows / pack}, true);
  const TensorInfo& scales = tensor_of(ckpt, module + ".scales", {groups, rows}, false);
  if (ckpt.has(module + ".g_idx")) {
    const TensorInfo& g_idx = tensor_of(ckpt, module + ".g_idx", {cols}, true);
    for (int64_t c = 0; c < cols; ++c)
      if (static_cast<int64_t>(word(g_idx, c)) != c / group)
        throw Error(*g_idx.file + ": tensor '" + module + ".g_idx' puts column " + std::to_string(c) + " in group " +
                    std::to_string(static_cast<int32_t>(word(g_idx, c))) + ", not column / group_size = " +
                    std::to_string(c / group) + " (act-order is not supported)");
  }
  const uint32_t zero = static_cast<uint32_t>(center - (config.zeros_stored_minus_one ? 1 : 0));
  for (int64_t i = 0; i < groups * rows / pack; ++i)
    for (int k = 0; k < pack; ++k)
      if (const uint32_t z = (word(qzeros, i) >> (bits * k)) & mask; z != zero)
        throw Error(*qzeros.file + ": tensor '" + module + ".qzeros' holds zero point " + std::to_string(z) +
                    " (group " + std::to_string(i / (rows / pack)) + ", output row " +
                    std::to_string(i % (rows / pack) * pack + k) + "); only symmetric GPTQ is supported, whose stored zeros are all " +
                    std::to_string(zero));

  GptqMatrix out;
  out.dtype = bits == 4 ? DType::Q4 : DType::Q8;
  out.group_size = quantized::storage_group_size(group >= cols ? 0 : group, cols, module + ".scales");
  out.values.resize(static_cast<size_t>(rows * cols));
  out.scales.resize(static_cast<size_t>(rows * groups));
  std::vector<float> scale_row(static_cast<size_t>(rows));
  for (int64_t g = 0; g < groups; ++g) {
    const WeightView row{static_cast<const uint8_t*>(scales.data) + g * rows * dtype_size(scales.dtype), scales.dtype, 1,
                         rows};
    row.row_to_float(0, scale_row.data());
    for (int64_t r = 0; r < rows; ++r) out.scales[r * groups + g] = scale_row[r];
  }
  // qweight[i, r] packs input columns i * pack .. i * pack + pack - 1 of output row r, the first in
  // the lowest bits. Blocks of 64 output rows read whole cache lines of each qweight row.
  parallel_for(rows, 64, [&](int64_t begin, int64_t end) {
    for (int64_t i = 0; i < cols / pack; ++i)
      for (int64_t r = begin; r < end; ++r) {
        const uint32_t w = word(qweight, i * rows + r);
        int8_t* to = out.values.data() + r * cols + i * pack;
        for (int k = 0; k < pack; ++k) to[k] = static_cast<int8_t>(static_cast<int>((w >> (bits * k)) & mask) - center);
      }
  });
  // The engine reads its own copy; the file's pages need not stay in this process's resident set.
  drop_mapped_pages(qweight.data, static_cast<size_t>(cols / pack * rows) * 4);
  return out;
}

}  // namespace moe
