#pragma once
// One GPTQ-quantized Linear module of a Hugging Face checkpoint (the tensors AutoGPTQ and GPTQModel
// write, described in docs/quantization.md) read into the engine's quantized form: signed values
// (the stored integer minus the symmetric zero point 2^(bits-1)) and float32 scales.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/weight.h"
#include "model/quantization.h"

namespace moe {

class Checkpoint;

struct GptqMatrix {
  DType dtype = DType::Q4;    // Q4 for 4 bits, Q8 for 8
  int64_t group_size = 0;     // as the engine stores it (kernels/quantized_weight.h)
  std::vector<int8_t> values; // [rows, cols] row-major
  std::vector<float> scales;  // [rows, groups] row-major
};

// Reads `module`.qweight, .qzeros, .scales and (when present) .g_idx for a [rows, cols] Linear
// (rows output features). A missing tensor, a wrong shape or dtype, a zero point other than the
// symmetric one, a g_idx other than column / group_size, or a group size the kernels cannot take is
// a moe::Error naming the tensor.
GptqMatrix read_gptq_matrix(const Checkpoint& ckpt, const std::string& module, int64_t rows, int64_t cols,
                            const GptqConfig& config);

}  // namespace moe
