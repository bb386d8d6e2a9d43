// moe-cli tokenize / detokenize: text → ids as a JSON array, ids → text, with a tokenizer directory.
#include <boost/program_options.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "command_line/command_line.h"
#include "common/error.h"
#include "common/json_file.h"
#include "common/local_paths.h"
#include "tokenizer/tokenizer.h"

namespace moe::cli {
namespace {

namespace po = boost::program_options;

// --tokenizer-path: a directory holding tokenizer.json, or the file itself.
tokenizer::Tokenizer load_tokenizer_flag(const std::string& path) {
  if (!file_exists(path)) require_local_directory("--tokenizer-path", path);
  return tokenizer::Tokenizer::load(path);
}

int run_tokenize(int argc, char** argv) {
  std::string tokenizer_path, text, file;
  bool split_special = false;
  po::options_description options("moe-cli tokenize options");
  options.add_options()("help,h", "show this help")
      ("tokenizer-path", po::value(&tokenizer_path)->required(), "tokenizer (or model) directory, or a tokenizer.json")
      ("text", po::value(&text), "text to encode")
      ("file", po::value(&file), "file whose contents to encode")
      ("split-special-tokens", po::bool_switch(&split_special), "treat special tokens written in the text as plain text");
  po::variables_map values;
  if (!parse_command_line(argc, argv, options, "", &values)) return 0;
  if (values.count("text") == values.count("file")) throw Error("give exactly one of --text and --file");
  if (!file.empty()) text = read_text_file(file);
  const auto tokenizer = load_tokenizer_flag(tokenizer_path);
  std::cout << nlohmann::json(tokenizer.encode(text, !split_special)).dump() << "\n";
  return 0;
}

int run_detokenize(int argc, char** argv) {
  std::string tokenizer_path, ids;
  bool skip_special = false;
  po::options_description options("moe-cli detokenize options");
  options.add_options()("help,h", "show this help")
      ("tokenizer-path", po::value(&tokenizer_path)->required(), "tokenizer (or model) directory, or a tokenizer.json")
      ("ids", po::value(&ids)->required(), "token ids, comma-separated")
      ("skip-special-tokens", po::bool_switch(&skip_special), "leave special tokens out of the text");
  if (!parse_command_line(argc, argv, options)) return 0;
  const std::vector<int> parsed = parse_id_list(ids);
  const auto tokenizer = load_tokenizer_flag(tokenizer_path);
  std::cout << tokenizer.decode(std::vector<int32_t>(parsed.begin(), parsed.end()), skip_special) << "\n";
  return 0;
}

const RegisterCommand tokenize_command("tokenize", "print the token ids of a text as a JSON array", run_tokenize);
const RegisterCommand detokenize_command("detokenize", "print the text of comma-separated token ids", run_detokenize);

}  // namespace
}  // namespace moe::cli
