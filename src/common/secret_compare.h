#pragma once
// Compares a key a client sent with the server's without leaking, through the time it takes, how
// many leading bytes were right (a plain == stops at the first difference).
#include <string_view>

namespace moe {

// Whether `given` equals `expected`; the time depends only on the lengths.
bool same_secret(std::string_view given, std::string_view expected);

}  // namespace moe
