#include "pipeline/pipeline_endpoints.h"

#include <unistd.h>

namespace moe::actors {

PipelineEndpoints PipelineEndpoints::in_process(const std::string& tag) {
  const std::string base = "inproc://moe-" + std::to_string(::getpid()) + "-" + tag + "-";
  return {base + "tokenizer", base + "scheduler", base + "worker", base + "detokenizer", base + "launcher"};
}

}  // namespace moe::actors
