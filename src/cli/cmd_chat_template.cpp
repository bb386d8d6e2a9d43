// moe-cli chat-template: renders a tokenizer's chat template for a conversation read from a JSON file.
#include <boost/program_options.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/command.h"
#include "command_line/command_line.h"
#include "common/error.h"
#include "common/json_file.h"
#include "common/local_paths.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer_config.h"

namespace moe::cli {
namespace {

namespace po = boost::program_options;

std::optional<bool> parse_enable_thinking(const std::string& text) {
  if (text.empty()) return std::nullopt;
  if (text == "true") return true;
  if (text == "false") return false;
  throw Error("--enable-thinking takes true or false, not '" + text + "'");
}

int run_chat_template(int argc, char** argv) {
  std::string tokenizer_path, messages_path, tools_path, enable_thinking;
  bool add_generation_prompt = false;
  po::options_description options("moe-cli chat-template options");
  options.add_options()("help,h", "show this help")
      ("tokenizer-path", po::value(&tokenizer_path)->required(), "tokenizer (or model) directory holding tokenizer_config.json")
      ("messages", po::value(&messages_path)->required(), "JSON file with the conversation: an array of {role, content}")
      ("add-generation-prompt", po::bool_switch(&add_generation_prompt), "end with the opening of an assistant turn")
      ("enable-thinking", po::value(&enable_thinking), "true or false; when absent the template sees it undefined")
      ("tools", po::value(&tools_path), "JSON file with an array of tool schemas");
  if (!parse_command_line(argc, argv, options)) return 0;

  require_local_directory("--tokenizer-path", tokenizer_path);
  const tokenizer::TokenizerConfig config = tokenizer::load_tokenizer_config(tokenizer_path);
  if (config.chat_template.empty()) throw Error(tokenizer_path + " has no chat_template");
  tokenizer::ChatTemplateInputs inputs;
  inputs.messages = read_ordered_json_file(messages_path);
  if (!tools_path.empty()) inputs.tools = read_ordered_json_file(tools_path);
  inputs.add_generation_prompt = add_generation_prompt;
  inputs.enable_thinking = parse_enable_thinking(enable_thinking);
  // transformers passes the special tokens that are set (special_tokens_map) to the template.
  if (!config.bos_token.empty()) inputs.bos_token = config.bos_token;
  if (!config.eos_token.empty()) inputs.eos_token = config.eos_token;
  if (!config.pad_token.empty()) inputs.extra_variables["pad_token"] = config.pad_token;
  std::cout << tokenizer::ChatTemplate::compile(config.chat_template).render(inputs);
  return 0;
}

const RegisterCommand chat_template_command("chat-template", "print a conversation rendered with the chat template",
                                            run_chat_template);

}  // namespace
}  // namespace moe::cli
