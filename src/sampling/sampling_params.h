#pragma once
// The range checks of a token draw's settings (msg::DrawSettings), shared by the front door's
// request validation and the sampler.
#include "moe/messages.h"

namespace moe {

// Throws a moe::Error naming the first field outside its range (a bad request, not an engine fault).
void validate(const msg::DrawSettings& draw);

}  // namespace moe
