#pragma once
// The ranks of a deployment that one moe-serve starts on its own host (--ep-size or --tp-size N on the CPU, as
// SGLang and vLLM start theirs): each a process of the same program with its flags. They stop with
// this object (SIGTERM, then waited for), and the kernel kills them should this process die first.
#include <string>
#include <sys/types.h>
#include <vector>

namespace moe::actors {

class RankProcesses {
 public:
  // Starts `command` (the program's path first) + --role worker `rank_flag` R --dist-init-addr `endpoint`
  // for every R in [1, ranks); `rank_flag` is --ep-rank or --tp-rank.
  RankProcesses(const std::vector<std::string>& command, const std::string& rank_flag, int ranks,
                const std::string& endpoint);
  ~RankProcesses();
  RankProcesses(const RankProcesses&) = delete;
  RankProcesses& operator=(const RankProcesses&) = delete;

 private:
  std::vector<pid_t> pids_;
};

}  // namespace moe::actors
