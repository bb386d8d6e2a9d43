#pragma once
// Included first by every translation unit that uses Asio: Boost 1.74's awaitable.hpp uses
// std::exchange without including <utility>, and with GCC 12 nothing else brings it in first.
#include <utility>
