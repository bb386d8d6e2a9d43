#pragma once
// The directories a program is given (--model-path, --tokenizer-path, ...), checked before anything
// reads them, so that a wrong one is reported as what it is, naming the flag and its value.
#include <string>

namespace moe {

// Throws moe::Error naming `flag` and `path` unless `path` is an existing directory: "does not exist",
// with how to download a model when `path` reads as a Hugging Face hub id (org/name), or "is a file".
void require_local_directory(const std::string& flag, const std::string& path);

// Where a model's tokenizer.json is: the --tokenizer-path directory when given, else the model's
// directory. Throws moe::Error naming the flag and directory at fault when that directory is
// missing or has no tokenizer.json.
std::string tokenizer_directory(const std::string& tokenizer_path, const std::string& model_path);

}  // namespace moe
