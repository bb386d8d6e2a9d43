// Whatever the renderer cannot do exactly fails with a moe::Error naming the construct and the
// template line, at compile time where possible, instead of rendering something wrong.
#include <gtest/gtest.h>

#include "jinja_test_helpers.h"

namespace moe::jinja::testing {
namespace {

// The message of the error compiling `source` throws.
std::string compile_error(std::string_view source) {
  try {
    Template::compile(source);
  } catch (const moe::Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a compile error for: " << source;
  return "";
}

TEST(JinjaErrors, UnsupportedConstructsFailAtCompileTimeNamingThemAndTheLine) {
  EXPECT_EQ(compile_error("a\n{% include 'other.jinja' %}"), "chat template line 2: unsupported tag 'include'");
  EXPECT_EQ(compile_error("{% raw %}x{% endraw %}"), "chat template line 1: unsupported tag 'raw'");
  EXPECT_EQ(compile_error("\n\n{{ x | wordwrap(5) }}"), "chat template line 3: unsupported filter 'wordwrap'");
  EXPECT_EQ(compile_error("{% if x is\n escaped %}{% endif %}"), "chat template line 1: unsupported test 'escaped'");
  EXPECT_EQ(compile_error("{% for x in y recursive %}{% endfor %}"), "chat template line 1: unsupported recursive for loop");
  EXPECT_EQ(compile_error("{{ f(*args) }}"), "chat template line 1: unsupported *args / **kwargs in a call");
}

TEST(JinjaErrors, UnsupportedMethodsAndGlobalsFailWhenReached) {
  EXPECT_EQ(render_error("line one\n{{ 'abc'.title() }}"), "chat template line 2: unsupported method 'str.title'");
  EXPECT_EQ(render_error("{{ d.update({}) }}", R"({"d": {}})"), "chat template line 1: unsupported method 'dict.update'");
  EXPECT_EQ(render_error("{{ [1].append(2) }}"), "chat template line 1: unsupported method 'list.append'");
  EXPECT_EQ(render_error("{% set j = joiner(',') %}"), "chat template line 1: unsupported global 'joiner'");
  EXPECT_EQ(render_error("{{ '%s' % 1 }}"),
            "chat template line 1: printf-style string formatting ('...' % args) is not supported");
  EXPECT_EQ(render_error("{{ d.items }}", R"({"d": {}})"), "chat template line 1: cannot print the callable 'items' as text");
}

TEST(JinjaErrors, SyntaxErrorsNameTheLine) {
  EXPECT_EQ(compile_error("{% if x %}\n{% endfor %}"), "chat template line 2: unexpected '{% endfor %}'");
  EXPECT_EQ(compile_error("{% for x in y %}\n\nno end"),
            "chat template line 1: unexpected end of template: the block opened here needs 'endfor'");
  EXPECT_EQ(compile_error("{{ 1 + }}"), "chat template line 1: unexpected end of print statement '}}'");
  // Inside an open bracket '%}' is not a delimiter, as in Jinja.
  EXPECT_EQ(compile_error("{% set x = [1, 2 %}"), "chat template line 1: unexpected '}'");
  EXPECT_EQ(compile_error("{% if x"), "chat template line 1: unexpected end of template, expected '%}'");
  EXPECT_EQ(compile_error("{% break %}"), "chat template line 1: 'break' outside of a loop");
  EXPECT_EQ(compile_error("{% macro f(a=1, b) %}{% endmacro %}"),
            "chat template line 1: non-default argument follows default argument");
  EXPECT_EQ(compile_error("{% set true = 1 %}"), "chat template line 1: cannot assign to 'true'");
  EXPECT_EQ(compile_error("{{ a b }}"), "chat template line 1: expected '}}', got 'b'");
}

// Found by fuzz_jinja: numbers beyond 64 bits after '.' threw std::out_of_range past every handler.
TEST(JinjaErrors, IntegersBeyond64BitsAreErrorsWherever) {
  EXPECT_EQ(compile_error("{{ 99999999999999999999 }}"), "chat template line 1: integer literal 99999999999999999999 is too large");
  EXPECT_EQ(compile_error("{{ x.99999999999999999999 }}"),
            "chat template line 1: integer literal 99999999999999999999 is too large");
  EXPECT_EQ(render_error("{{ [{'a': 1}] | map(attribute='a.99999999999999999999') | list }}"),
            "chat template line 1: filter 'map': integer '99999999999999999999' is too large");
}

TEST(JinjaErrors, RuntimeTypeErrorsNameTheLine) {
  EXPECT_EQ(render_error("ok\n\n{{ 'a' + 1 }}"),
            "chat template line 3: unsupported operand type(s) for +: 'str' and 'int'");
  EXPECT_EQ(render_error("{% for x in 5 %}{% endfor %}"), "chat template line 1: 'int' object is not iterable");
  EXPECT_EQ(render_error("{{ 5() }}"), "chat template line 1: 'int' object is not callable");
  EXPECT_EQ(render_error("{{ 5 | length }}"), "chat template line 1: filter 'length': object of type 'int' has no len()");
  EXPECT_EQ(render_error("{{ 'a' < 1 }}"), "chat template line 1: '<' not supported between instances of 'str' and 'int'");
  EXPECT_EQ(render_error("{{ 'abc'.split('') }}"), "chat template line 1: split(): empty separator");
}

TEST(JinjaErrors, RaiseExceptionCarriesTheTemplatesMessageUnchanged) {
  EXPECT_EQ(render_error("{{ raise_exception('Only user and assistant roles are supported!') }}"),
            "Only user and assistant roles are supported!");
}

}  // namespace
}  // namespace moe::jinja::testing
