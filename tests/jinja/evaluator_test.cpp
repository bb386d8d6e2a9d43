// Statements and expressions: loops and their `loop` object, scoping, namespaces, macros, slicing,
// operators with Python semantics, and Jinja's Undefined. Expected outputs were checked against
// Jinja 3.1 in transformers' sandboxed environment.
#include <gtest/gtest.h>

#include "jinja_test_helpers.h"

namespace moe::jinja::testing {
namespace {

TEST(JinjaLoops, LoopObject) {
  EXPECT_EQ(render("{% for i in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                   "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}"),
            "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;");
  EXPECT_EQ(render("{% for i in [1, 2, 3] %}{{ loop.previtem }}-{{ loop.nextitem }}-{{ loop.cycle('a', 'b') }};"
                   "{% endfor %}"),
            "-2-a;1-3-b;2--a;");
}

TEST(JinjaLoops, ElseRunsOnlyWhenNothingIterated) {
  EXPECT_EQ(render("{% for i in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for i in [1] %}x{% else %}empty{% endfor %}"), "x");
  EXPECT_EQ(render("{% for i in [1, 3] if i is even %}x{% else %}none even{% endfor %}"), "none even");
}

TEST(JinjaLoops, FilterCountsOnlyKeptItems) {
  EXPECT_EQ(render("{% for i in range(6) if i is odd %}{{ i }}@{{ loop.index }}/{{ loop.length }} {% endfor %}"),
            "1@1/3 3@2/3 5@3/3 ");
}

TEST(JinjaLoops, UnpackingAndIterationOrder) {
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}",
                   R"({"d": {"b": 1, "a": 2}})"),
            "b=1;a=2;ba");
  EXPECT_EQ(render("{% for a, b in [[1, 2], (3, 4)] %}{{ a + b }}{% endfor %}"), "37");
  EXPECT_NE(render_error("{% for a, b in [[1, 2, 3]] %}{% endfor %}").find("too many values to unpack"),
            std::string::npos);
}

TEST(JinjaLoops, BreakAndContinue) {
  EXPECT_EQ(render("{% for i in range(6) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}"
                   "{% endif %}{{ i }}{% endfor %}"),
            "023");
}

TEST(JinjaLoops, NestedLoopsEachHaveTheirOwnLoopObject) {
  EXPECT_EQ(render("{% for i in [1, 2] %}{% for j in 'ab' %}{{ loop.index }}{% endfor %}{{ loop.index }} {% endfor %}"),
            "121 122 ");
}

// transformers' {% generation %} only marks assistant tokens for masks; its body renders in place.
TEST(JinjaStatements, GenerationBlockRendersItsBody) {
  EXPECT_EQ(render("a{% generation %}{{ 1 + 1 }}{% endgeneration %}b"), "a2b");
}

TEST(JinjaScoping, SetInsideALoopStaysInItsIteration) {
  // Each iteration starts from the outer value; nothing leaks out of the loop.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}"), "12121");
  EXPECT_EQ(render("{% for i in [1] %}{% endfor %}[{{ i }}]"), "[]");
  EXPECT_EQ(render("{% set i = 'outer' %}{% for i in [1] %}{{ i }}{% endfor %}{{ i }}"), "1outer");
}

TEST(JinjaScoping, IfDoesNotOpenAScope) {
  EXPECT_EQ(render("{% if true %}{% set z = 5 %}{% endif %}{{ z }}"), "5");
}

TEST(JinjaScoping, NamespaceCarriesStateOutOfLoops) {
  EXPECT_EQ(render("{% set ns = namespace(total=0, seen=false) %}{% for i in [1, 2, 3] %}"
                   "{% set ns.total = ns.total + i %}{% endfor %}{% set ns.seen = true %}{{ ns.total }}{{ ns.seen }}"),
            "6True");
  EXPECT_NE(render_error("{% set x = 5 %}{% set x.a = 1 %}").find("cannot assign attribute on non-namespace"),
            std::string::npos);
}

TEST(JinjaScoping, SetForms) {
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}"), "12(1, 2)");
  EXPECT_EQ(render("{% set block %}x{{ 1 + 1 }}{% endset %}[{{ block }}]"), "[x2]");
}

TEST(JinjaMacros, ArgumentsDefaultsAndScope) {
  const std::string macro = "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}";
  EXPECT_EQ(render(macro + "{{ greet('a') }} {{ greet('b', '?') }} {{ greet(punct='.', name='c') }} [{{ greet() }}]"),
            "Hi a! Hi b? Hi c. [Hi !]");
  // Defaults are evaluated at call time and may use earlier parameters; locals stay inside.
  EXPECT_EQ(render("{% macro f(a, b=a ~ '!') %}{% set local = 1 %}{{ a }}{{ b }}{% endmacro %}{{ f('x') }}{{ local }}"),
            "xx!");
  // A macro sees the variables of the scope it was defined in, as they are when it is called.
  EXPECT_EQ(render("{% set x = 1 %}{% macro f() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ f() }}"), "2");
  EXPECT_NE(render_error(macro + "{{ greet(1, 2, 3) }}").find("macro 'greet' takes not more than 2 argument(s)"),
            std::string::npos);
  EXPECT_NE(render_error(macro + "{{ greet(nam=1) }}").find("macro 'greet' takes no keyword argument 'nam'"),
            std::string::npos);
}

TEST(JinjaMacros, RunawayRecursionFails) {
  EXPECT_NE(render_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").find("recursed too deeply"),
            std::string::npos);
}

TEST(JinjaExpressions, Slicing) {
  EXPECT_EQ(render("{{ 'abcdef'[::-1] }}|{{ 'abcdef'[1:3] }}|{{ 'abcdef'[-2:] }}|{{ 'abc'[::2] }}|{{ 'abc'[5:] }}"),
            "fedcba|bc|ef|ac|");
  EXPECT_EQ(render("{{ [1, 2, 3][::-1] }}|{{ [1, 2, 3, 4, 5][4:1:-2] }}|{{ [1, 2][:-1] }}|{{ 'h\xC3\xA9llo'[1] }}"),
            "[3, 2, 1]|[5, 3]|[1]|\xC3\xA9");
  EXPECT_EQ(render("{{ messages[-1].content }}|{{ messages[5] is defined }}",
                   R"({"messages": [{"content": "a"}, {"content": "b"}]})"),
            "b|False");
}

TEST(JinjaExpressions, ArithmeticFollowsPython) {
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 4 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} "
                   "{{ 'ab' * 3 }} {{ 1 + 1.5 }} {{ true + 1 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ [1] + [2] }}"),
            "3 -4 2 3.5 2.0 1024 0.5 ababab 2.5 2 3.0 0.5 [1, 2]");
  // Unlike Python, Jinja's ** is left-associative and applies to an already negated operand.
  EXPECT_EQ(render("{{ 2 ** 3 ** 2 }} {{ -2 ** 2 }}"), "64 4");
  EXPECT_NE(render_error("{{ 1 + 'a' }}").find("unsupported operand type(s) for +: 'int' and 'str'"),
            std::string::npos);
  EXPECT_NE(render_error("{{ 1 // 0 }}").find("division or modulo by zero"), std::string::npos);
}

TEST(JinjaExpressions, ComparisonsAndLogic) {
  EXPECT_EQ(render("{{ 1 < 2 <= 2 }}{{ 3 > 2 > 2 }}{{ 'abc' < 'abd' }}{{ [1, 2] < [1, 3] }}{{ 1 == 1.0 }}"
                   "{{ (1, 2) == [1, 2] }}{{ {'a': 1} == {'a': 1} }}"),
            "TrueFalseTrueTrueTrueFalseTrue");
  // and/or yield an operand, as in Python.
  EXPECT_EQ(render("{{ 1 and 2 }}|{{ 0 or 'x' }}|{{ '' and 'y' }}|{{ not 1 }}"), "2|x||False");
  EXPECT_EQ(render("{{ 1 in [1, 2] }}{{ 3 not in [1, 2] }}{{ 'a' in 'cat' }}{{ 'k' in d }}{{ 'v' in d }}",
                   R"({"d": {"k": "v"}})"),
            "TrueTrueTrueTrueFalse");
  EXPECT_EQ(render("{{ 'y' if x else 'n' }}|{{ 'y' if 0 }}|{{ 'a' if false else 'b' if true else 'c' }}"), "n||b");
}

TEST(JinjaExpressions, TestsBindTighterThanArithmeticAndNot) {
  // 1 + (2 is odd) is 1 + False.
  EXPECT_EQ(render("{{ not x is defined }}{{ 1 + 2 is odd }}"), "True1");
}

TEST(JinjaExpressions, StringsConcatenate) {
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none ~ x ~ 1.0 ~ true }}|{{ 'a' 'b' \"c\" }}|{{ 'x' + 'y' }}"), "a1None1.0True|abc|xy");
}

TEST(JinjaExpressions, LiteralsPrintAsPython) {
  EXPECT_EQ(render(R"({{ [1, 'a', none, true, 1.5, {'k': "it's"}] }}|{{ (1,) }}|{{ () }})"),
            R"([1, 'a', None, True, 1.5, {'k': "it's"}]|(1,)|())");
}

TEST(JinjaUndefined, BehavesLikeJinjasDefaultUndefined) {
  EXPECT_EQ(render("[{{ x }}]{{ x is defined }}{{ x is undefined }}{{ x | length }}{{ x == y }}"
                   "{% for i in x %}no{% endfor %}{% if not x %}falsy{% endif %}"),
            "[]FalseTrue0Truefalsy");
  // A missing dict key or attribute is undefined; using an undefined value's attributes fails.
  EXPECT_EQ(render("[{{ m.missing }}][{{ m['missing'] }}]{{ m.missing is defined }}", R"({"m": {"role": "user"}})"),
            "[][]False");
  EXPECT_EQ(render_error("{{ x.y }}"), "chat template line 1: 'x' is undefined");
  EXPECT_EQ(render_error("\n{{ m.content + 'a' }}", R"({"m": {}})"),
            "chat template line 2: 'dict object' has no attribute 'content'");
}

TEST(JinjaUndefined, NoneHasNoAttributesButIsNotAnError) {
  EXPECT_EQ(render("[{{ n.foo }}]{{ n.foo is defined }}{{ n is none }}", R"({"n": null})"), "[]FalseTrue");
}

TEST(JinjaAttributes, MethodsShadowDictKeysButSubscriptsDoNot) {
  EXPECT_EQ(render("{{ d['items'] }}|{{ d.items() | list }}", R"({"d": {"items": 5}})"), "5|[('items', 5)]");
  EXPECT_EQ(render("{{ d.content }}|{{ d['content'] }}", R"({"d": {"content": "same"}})"), "same|same");
}

}  // namespace
}  // namespace moe::jinja::testing
