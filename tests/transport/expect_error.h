#pragma once
// Checks that a call fails the way a user would be told: a moe::Error whose message names the problem.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"

namespace moe::test {

// Expects `call()` to throw a moe::Error whose message contains `needle`.
template <class Call>
void expect_error_containing(Call&& call, const std::string& needle) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one containing \"" << needle << "\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message was: " << e.what();
  }
}

}  // namespace moe::test
