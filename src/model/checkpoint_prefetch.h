#pragma once
// Reads a checkpoint's safetensors files once, front to back, so their pages are in memory before
// the model is loaded (the load reads every weight, and would otherwise fault the mapped files in
// page by page), and reports progress as it goes.
#include <functional>
#include <string>

namespace moe {

// progress(done_bytes, total_bytes) is called after every chunk read. Does nothing where model_dir
// is not a directory (loading the model then says what is wrong).
void prefetch_checkpoint(const std::string& model_dir, const std::function<void(int64_t, int64_t)>& progress);

}  // namespace moe
