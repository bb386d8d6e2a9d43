#pragma once
// Included first by every translation unit that uses Asio: Boost 1.74's awaitable.hpp uses
// std::exchange without including <utility> (DESIGN §6).
#include <utility>
