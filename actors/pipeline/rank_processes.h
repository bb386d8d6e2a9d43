#pragma once
// The ranks of a deployment that one moe-serve starts on its own host (--ep-size or --tp-size N, as SGLang
// and vLLM start theirs): each a process of the same program with its flags, a GPU rank with its GPU. They stop with
// this object (SIGTERM, then waited for), and the kernel kills them should this process die first.
#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace moe::actors {

class RankProcesses {
 public:
  // Starts `command` (the program's path first) + --role worker `rank_flags(R)` --dist-init-addr
  // `endpoint` for every R in [1, ranks); rank_flags names rank R (--ep-rank E --tp-rank T), and
  // rank_environment gives its variables besides this process's ("CUDA_VISIBLE_DEVICES=3").
  RankProcesses(const std::vector<std::string>& command, int ranks, const std::string& endpoint,
                const std::function<std::vector<std::string>(int rank)>& rank_flags,
                const std::function<std::vector<std::string>(int rank)>& rank_environment);
  ~RankProcesses();
  RankProcesses(const RankProcesses&) = delete;
  RankProcesses& operator=(const RankProcesses&) = delete;

 private:
  std::vector<pid_t> pids_;
};

}  // namespace moe::actors
