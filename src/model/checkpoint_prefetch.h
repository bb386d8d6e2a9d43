#pragma once
// Reads a checkpoint's safetensors files once, front to back, so their pages are in memory before
// the first request (the weights are memory-mapped and would otherwise fault in during it), and
// reports progress as it goes.
#include <functional>
#include <string>

namespace moe {

// progress(done_bytes, total_bytes) is called after every chunk read.
void prefetch_checkpoint(const std::string& model_dir, const std::function<void(int64_t, int64_t)>& progress);

}  // namespace moe
