// Template values: Python's text forms (str, repr, float repr), json.dumps as transformers' tojson
// calls it, equality, and JSON input keeping key order. Expected texts are Python 3's output.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/bounded_json.h"
#include "jinja/value.h"
#include "jinja_test_helpers.h"

namespace moe::jinja::testing {
namespace {

Value from_json(const char* text) { return value_from_json(nlohmann::ordered_json::parse(text)); }

TEST(JinjaValues, FloatReprMatchesPython) {
  EXPECT_EQ(format_float(1.0), "1.0");
  EXPECT_EQ(format_float(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(format_float(1e16), "1e+16");
  EXPECT_EQ(format_float(1e15), "1000000000000000.0");
  EXPECT_EQ(format_float(0.0001), "0.0001");
  EXPECT_EQ(format_float(0.00001), "1e-05");
  EXPECT_EQ(format_float(-0.0), "-0.0");
  EXPECT_EQ(format_float(123456789.123), "123456789.123");
  EXPECT_EQ(format_float(2.5e-300), "2.5e-300");
  EXPECT_EQ(format_float(-1.5e100), "-1.5e+100");
  EXPECT_EQ(format_float(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(format_float(std::nan("")), "nan");
}

TEST(JinjaValues, ReprQuotesAndEscapesLikePython) {
  EXPECT_EQ(to_repr(Value::string("plain")), "'plain'");
  EXPECT_EQ(to_repr(Value::string("it's")), "\"it's\"");
  EXPECT_EQ(to_repr(Value::string("both ' and \"")), "'both \\' and \"'");
  EXPECT_EQ(to_repr(Value::string("tab\tnl\nbs\\bell\x07")), "'tab\\tnl\\nbs\\\\bell\\x07'");
  // Non-printable code points are escaped, printable non-ASCII text is kept.
  EXPECT_EQ(to_repr(Value::string("\xC2\xA0\xE2\x80\xA8\xC3\xA9")), "'\\xa0\\u2028\xC3\xA9'");
  EXPECT_EQ(to_str(from_json(R"({"a": [1, 2.0, null, true, "x"], "b": {}})")),
            "{'a': [1, 2.0, None, True, 'x'], 'b': {}}");
}

TEST(JinjaValues, TojsonMatchesJsonDumps) {
  const Value tool = from_json(
      R"({"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
          "required": ["city"]}, "strict": false, "weight": 1.0, "none": null, "empty": [], "emptyd": {}})");
  EXPECT_EQ(dump_json(tool, {}),
            R"({"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, )"
            R"("required": ["city"]}, "strict": false, "weight": 1.0, "none": null, "empty": [], "emptyd": {}})");
  JsonDumpOptions indented;
  indented.indent = "  ";
  EXPECT_EQ(dump_json(from_json(R"({"a": [1, {"b": []}], "c": {}})"), indented),
            "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ],\n  \"c\": {}\n}");
}

TEST(JinjaValues, TojsonEscapesLikeJsonDumps) {
  // ensure_ascii=False (transformers' default) keeps non-ASCII text and escapes only controls.
  EXPECT_EQ(dump_json(Value::string("\"\\\n\t\b\f\r\x01\x7f\xC3\xA9\xF0\x9F\x98\x80"), {}),
            "\"\\\"\\\\\\n\\t\\b\\f\\r\\u0001\x7f\xC3\xA9\xF0\x9F\x98\x80\"");
  JsonDumpOptions ascii;
  ascii.ensure_ascii = true;
  EXPECT_EQ(dump_json(Value::string("\x7f\xC3\xA9\xF0\x9F\x98\x80"), ascii), "\"\\u007f\\u00e9\\ud83d\\ude00\"");
}

TEST(JinjaValues, TojsonFilterOptions) {
  EXPECT_EQ(render("{{ d | tojson(indent=2) }}", R"({"d": {"k": [1]}})"), "{\n  \"k\": [\n    1\n  ]\n}");
  EXPECT_EQ(render("{{ d | tojson(indent='\\t') }}", R"({"d": [1]})"), "[\n\t1\n]");
  EXPECT_EQ(render("{{ d | tojson(sort_keys=true, separators=(',', ':')) }}", R"({"d": {"z": 1, "a": [1, 2]}})"),
            R"({"a":[1,2],"z":1})");
  EXPECT_EQ(render("{{ [1] | tojson(indent=0) }}"), "[\n1\n]");
  EXPECT_NE(render_error("{{ x | tojson }}").find("Object of type Undefined is not JSON serializable"),
            std::string::npos);
}

TEST(JinjaValues, EqualityFollowsPython) {
  EXPECT_TRUE(values_equal(Value::integer(1), Value::number(1.0)));
  EXPECT_TRUE(values_equal(Value::boolean(true), Value::integer(1)));
  EXPECT_FALSE(values_equal(Value::string("1"), Value::integer(1)));
  EXPECT_TRUE(values_equal(from_json(R"({"a": 1, "b": 2})"), from_json(R"({"b": 2, "a": 1})")));
  EXPECT_FALSE(values_equal(Value::list({Value::integer(1)}), Value::tuple({Value::integer(1)})));
  EXPECT_FALSE(values_equal(Value::none(), Value()));
}

TEST(JinjaValues, JsonInputKeepsKeyOrderAndTypes) {
  const Value value = from_json(R"({"z": 1, "a": 2.5, "m": [true, null, "s"]})");
  ASSERT_EQ(value.kind(), Value::Kind::Dict);
  ASSERT_EQ(value.as_dict().size(), 3u);
  EXPECT_EQ(value.as_dict().entries()[0].first, "z");
  EXPECT_EQ(value.as_dict().entries()[1].first, "a");
  EXPECT_EQ(value.as_dict().find("z")->kind(), Value::Kind::Int);
  EXPECT_EQ(value.as_dict().find("a")->kind(), Value::Kind::Float);
  EXPECT_EQ(to_repr(*value.as_dict().find("m")), "[True, None, 's']");
}

// Converting recurses once per level: a document deeper than the limit is a RenderFailure, not the end
// of the stack (the parse leaves the value flat in memory, and its destructor does not recurse).
TEST(JinjaValues, JsonDeeperThanTheLimitIsRefused) {
  const auto nested_arrays = [](size_t levels) {
    return nlohmann::ordered_json::parse(std::string(levels, '[') + std::string(levels, ']'));
  };
  EXPECT_EQ(value_from_json(nested_arrays(kMaxJsonDepth)).kind(), Value::Kind::List);
  try {
    value_from_json(nested_arrays(kMaxJsonDepth + 1));
    ADD_FAILURE() << "accepted";
  } catch (const RenderFailure& failure) {
    EXPECT_NE(std::string(failure.what()).find("deeper than 128 levels"), std::string::npos) << failure.what();
  }
  EXPECT_THROW(value_from_json(nested_arrays(500000)), RenderFailure);
}

}  // namespace
}  // namespace moe::jinja::testing
