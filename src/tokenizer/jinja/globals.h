#pragma once
// The global functions every chat template sees: Jinja's range, dict and namespace, and the
// raise_exception and strftime_now that transformers adds.
#include <string_view>

#include "tokenizer/jinja/value.h"

namespace moe::tokenizer::jinja {

// Global functions by name; render variables of the same name take precedence over them.
const Dict& builtin_globals();
// True for Jinja globals this renderer does not implement (lipsum, cycler, joiner), which must
// fail loudly rather than look undefined.
bool is_unsupported_global(std::string_view name);

}  // namespace moe::tokenizer::jinja
