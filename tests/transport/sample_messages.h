#pragma once
// One message of every kind with every field away from its default, for codec round trips.
#include <vector>

#include "moe/messages.h"

namespace moe::test {

std::vector<msg::Message> sample_messages();

}  // namespace moe::test
