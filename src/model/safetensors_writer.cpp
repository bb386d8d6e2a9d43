#include "model/safetensors_writer.h"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace moe {

TensorToWrite make_tensor(std::string name, DType dtype, std::vector<int64_t> shape, const std::vector<float>& values) {
  TensorToWrite t{std::move(name), dtype, std::move(shape), {}};
  t.bytes.resize(values.size() * dtype_size(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::F32) {
      std::memcpy(t.bytes.data() + 4 * i, &values[i], 4);
    } else if (dtype == DType::BF16) {
      const uint16_t b = float_to_bf16(values[i]);
      std::memcpy(t.bytes.data() + 2 * i, &b, 2);
    } else {
      throw Error("make_tensor: F16 output is not supported");
    }
  }
  return t;
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data section 8-byte aligned
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("cannot write " + path);
  const uint64_t header_len = text.size();
  out.write(reinterpret_cast<const char*>(&header_len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& t : tensors) out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  if (!out) throw Error("failed writing " + path);
}

}  // namespace moe
