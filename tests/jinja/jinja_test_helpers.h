#pragma once
// Helpers for the Jinja renderer tests: render a template source with variables written as JSON,
// and capture the error a template raises.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/error.h"
#include "jinja/template.h"
#include "jinja/value.h"

namespace moe::jinja::testing {

// Renders `source` with the variables of a JSON object (key order kept, as in Python).
inline std::string render(std::string_view source, std::string_view variables_json = "{}") {
  const nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(variables_json);
  Dict variables;
  for (const auto& [name, value] : parsed.items()) variables.set(name, value_from_json(value));
  return Template::compile(source).render(variables);
}

// The message of the moe::Error that compiling or rendering `source` throws; fails the test when
// it renders instead.
inline std::string render_error(std::string_view source, std::string_view variables_json = "{}") {
  try {
    const std::string rendered = render(source, variables_json);
    ADD_FAILURE() << "expected an error, rendered: " << rendered;
  } catch (const moe::Error& error) {
    return error.what();
  }
  return "";
}

}  // namespace moe::jinja::testing
