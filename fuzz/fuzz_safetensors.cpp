// A safetensors file's bytes (a checkpoint may come from anywhere): parse_safetensors gives tensors
// whose every byte lies inside the file, or a moe::Error. The input is a heap copy of exactly its
// size, so AddressSanitizer catches any read past it; the extents are also checked outright.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "common/error.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<unsigned char> file(data, data + size);
  try {
    for (const auto& [name, info] : moe::parse_safetensors(file.data(), file.size(), "fuzz.safetensors")) {
      uint64_t bytes = moe::dtype_size(info.dtype);
      for (int64_t d : info.shape) bytes *= static_cast<uint64_t>(d);
      const auto* begin = static_cast<const unsigned char*>(info.data);
      if (begin < file.data() || static_cast<uint64_t>(file.data() + file.size() - begin) < bytes) std::abort();
    }
  } catch (const moe::Error&) {
  }
  return 0;
}
