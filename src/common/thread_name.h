#pragma once
// Names the calling thread (as `top -H`, `perf report --sort comm` and debuggers show it).
#include <string>

namespace moe {

// Linux keeps the first 15 characters.
void name_this_thread(const std::string& name);

}  // namespace moe
