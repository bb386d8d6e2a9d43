#pragma once
// moe-cli subcommands register themselves here; main() dispatches on argv[1].
#include <functional>
#include <string>
#include <vector>

namespace moe::cli {

using CommandFn = std::function<int(int argc, char** argv)>;

struct Command {
  std::string name;
  std::string summary;
  CommandFn run;
};

std::vector<Command>& command_registry();

// A static instance of this in a subcommand's .cpp adds it to the registry.
struct RegisterCommand {
  RegisterCommand(std::string name, std::string summary, CommandFn run);
};

// Parses "1,2,3" into ids; throws moe::Error naming the bad element.
std::vector<int> parse_id_list(const std::string& text);

}  // namespace moe::cli
