#pragma once
// The scheduler's knobs, named after SGLang's server flags.
#include <cstdint>

namespace moe {

struct SchedulerConfig {
  int64_t max_total_tokens = 0;         // KV slot pool capacity in tokens (--max-total-tokens)
  int max_running_requests = 256;       // --max-running-requests
  int64_t chunked_prefill_size = 8192;  // tokens per step, decodes included; <= 0 = no limit
  bool enable_radix_cache = true;       // --disable-radix-cache clears it
  int64_t context_length = 0;           // the model's max positions; 0 = only the KV pool limits
};

}  // namespace moe
