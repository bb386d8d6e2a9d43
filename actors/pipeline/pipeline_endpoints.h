#pragma once
// Where each actor's inbox is bound. The same actors run as threads of one process (inproc://) or
// as processes (ipc://, tcp://); only these addresses change.
#include <string>

namespace moe::actors {

struct PipelineEndpoints {
  std::string tokenizer;    // TextOutputBatch, ErrorReply in
  std::string scheduler;    // TokenizedRequest, Abort, WorkerResult, heartbeats in
  std::string worker;       // WorkerBatch in
  std::string detokenizer;  // DetokenizeBatch in
  std::string launcher;     // Ready reports in

  // inproc:// names for actors that are threads of one process (unique per process and `tag`).
  static PipelineEndpoints in_process(const std::string& tag);
};

}  // namespace moe::actors
