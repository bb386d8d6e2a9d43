// Client text through the real Qwen3 tokenizer: any bytes encode (ill-formed UTF-8 is repaired,
// never refused) into known ids, which decode; ids a client sends decode or are refused with a
// moe::Error (negative ids).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "tokenizer/tokenizer.h"

namespace {

const moe::tokenizer::Tokenizer& qwen3() {
  static const moe::tokenizer::Tokenizer tokenizer = moe::tokenizer::Tokenizer::load(MOE_TEST_DATA_DIR "/qwen3-tokenizer");
  return tokenizer;
}

}  // namespace

// Loaded before the first input, outside its time limit (the load takes seconds under the sanitizers).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  qwen3();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const moe::tokenizer::Tokenizer& tokenizer = qwen3();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool parse_special = size > 0 && (data[0] & 1) != 0;
  const std::vector<int32_t> ids = tokenizer.encode(text, parse_special);
  for (int32_t id : ids)
    if (!tokenizer.knows(id)) std::abort();
  tokenizer.decode(ids, /*skip_special=*/!parse_special);
  std::vector<int32_t> raw_ids(size / sizeof(int32_t));
  if (!raw_ids.empty()) std::memcpy(raw_ids.data(), data, raw_ids.size() * sizeof(int32_t));
  try {
    tokenizer.decode(raw_ids);
  } catch (const moe::Error&) {
  }
  return 0;
}
