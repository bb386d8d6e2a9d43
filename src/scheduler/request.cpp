#include "scheduler/request.h"

namespace moe {

std::vector<int32_t> Request::tokens(int64_t begin, int64_t end) const {
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(end - begin));
  for (int64_t pos = begin; pos < end; ++pos)
    out.push_back(pos < prompt_len() ? prompt_ids[pos] : output_ids[pos - prompt_len()]);
  return out;
}

}  // namespace moe
