// moe-cli: offline tools (generate, tokenize, detokenize, chat-template) over the engine's core.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/command.h"
#include "common/error.h"

namespace moe::cli {

std::vector<Command>& command_registry() {
  static std::vector<Command> registry;
  return registry;
}

RegisterCommand::RegisterCommand(std::string name, std::string summary, CommandFn run) {
  command_registry().push_back({std::move(name), std::move(summary), std::move(run)});
}

std::vector<int> parse_id_list(const std::string& text) {
  std::vector<int> ids;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    if (!item.empty()) {
      size_t used = 0;
      long value = 0;
      try {
        value = std::stol(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != item.size() || value < 0 || value > 0x7fffffff) throw Error("not a token id: '" + item + "'");
      ids.push_back(static_cast<int>(value));
    }
    start = end + 1;
  }
  return ids;
}

}  // namespace moe::cli

static void print_usage() {
  std::fprintf(stderr, "usage: moe-cli <command> [options]\n\ncommands:\n");
  for (const auto& c : moe::cli::command_registry())
    std::fprintf(stderr, "  %-14s %s\n", c.name.c_str(), c.summary.c_str());
  std::fprintf(stderr, "\n'moe-cli <command> --help' describes a command's options.\n");
}

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  for (const auto& c : moe::cli::command_registry()) {
    if (c.name != argv[1]) continue;
    try {
      return c.run(argc - 1, argv + 1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "moe-cli %s: error: %s\n", argv[1], e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "moe-cli: unknown command '%s'\n\n", argv[1]);
  print_usage();
  return 2;
}
