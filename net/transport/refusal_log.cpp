#include "transport/refusal_log.h"

#include <spdlog/spdlog.h>

namespace moe::transport {

void RefusalLog::refused(const std::string& what) {
  constexpr auto kInterval = std::chrono::seconds(5);
  const auto now = std::chrono::steady_clock::now();
  if (logged_any_ && now - last_logged_ < kInterval) {
    ++unlogged_;
    return;
  }
  if (unlogged_ > 0)
    spdlog::warn("{} ({} more refused in the last {} s)", what, unlogged_,
                 std::chrono::duration_cast<std::chrono::seconds>(now - last_logged_).count());
  else
    spdlog::warn("{}", what);
  logged_any_ = true;
  last_logged_ = now;
  unlogged_ = 0;
}

}  // namespace moe::transport
