#include "pipeline/rank_processes.h"

#include <algorithm>
#include <csignal>
#include <string_view>
#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"

namespace moe::actors {

RankProcesses::RankProcesses(const std::vector<std::string>& command, int ranks, const std::string& endpoint,
                             const std::function<std::vector<std::string>(int rank)>& rank_flags,
                             const std::function<std::vector<std::string>(int rank)>& rank_environment) {
  if (command.empty()) throw Error("no command to start the ranks with");
  const pid_t parent = getpid();
  for (int rank = 1; rank < ranks; ++rank) {
    // Built before fork: the child may only exec (this process has threads).
    std::vector<std::string> args = command;
    const std::vector<std::string> names = rank_flags(rank);
    for (const std::string& flag : {std::string("--role"), std::string("worker")}) args.push_back(flag);
    args.insert(args.end(), names.begin(), names.end());
    args.emplace_back("--dist-init-addr");
    args.push_back(endpoint);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // This process's variables, those of rank_environment replacing any of the same name.
    std::vector<std::string> variables = rank_environment(rank);
    std::vector<char*> envp;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view entry(*e);
      const bool replaced = std::any_of(variables.begin(), variables.end(), [&](const std::string& v) {
        return entry.substr(0, entry.find('=') + 1) == std::string_view(v).substr(0, v.find('=') + 1);
      });
      if (!replaced) envp.push_back(*e);
    }
    for (std::string& v : variables) envp.push_back(v.data());
    envp.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) throw Error("could not start rank " + std::to_string(rank) + ": fork failed");
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);  // the parent died before the line above
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    spdlog::info("started rank {} ({}, pid {})", rank, fmt::join(names, " "), pid);
    pids_.push_back(pid);
  }
}

RankProcesses::~RankProcesses() {
  for (pid_t pid : pids_) kill(pid, SIGTERM);
  for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
}

}  // namespace moe::actors
