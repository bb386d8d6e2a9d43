// A tokenizer.json (shipped with a model, read at start): Tokenizer::load gives a tokenizer that
// encodes and decodes, or a moe::Error naming the file.
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "fuzz_support.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = moe::fuzz::write_input("tokenizer.json", data, size);
  try {
    const moe::tokenizer::Tokenizer tokenizer = moe::tokenizer::Tokenizer::load(path);
    tokenizer.decode(tokenizer.encode("Hello, world! <|im_end|> 123 ünïcode\n\n  x"));
  } catch (const moe::Error&) {
  }
  return 0;
}
