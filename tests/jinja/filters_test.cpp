// Filters, `is` tests, str/dict methods and global functions, with the results Jinja 3.1 and
// Python produce for the same calls.
#include <gtest/gtest.h>

#include "jinja/python_text.h"
#include "jinja_test_helpers.h"

namespace moe::jinja::testing {
namespace {

const char* kMessages = R"({"msgs": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                                     {"role": "user", "content": "c", "meta": {"n": 1}}]})";

TEST(JinjaFilters, TextFilters) {
  EXPECT_EQ(render("{{ '  x \n' | trim }}|{{ 'xxaxx' | trim('x') }}|{{ 'AbC' | lower }}|{{ 'AbC' | upper }}|"
                   "{{ 'hELLO wORLD' | capitalize }}|{{ 'aXbX' | replace('X', 'y') }}|{{ 'aXbX' | replace('X', 'y', 1) }}|"
                   "{{ 1.5 | string }}|{{ none | string }}|{{ x | string }}|"),
            "x|a|abc|ABC|Hello world|ayby|aybX|1.5|None||");
}

TEST(JinjaFilters, DefaultFilter) {
  EXPECT_EQ(render("{{ x | default('d') }}|{{ none | default('d') }}|{{ '' | default('d') }}|{{ '' | d('d', true) }}|"
                   "{{ x | default }}|"),
            "d|None||d||");
}

TEST(JinjaFilters, NumberFilters) {
  EXPECT_EQ(render("{{ '42' | int + 1 }} {{ '  -12 ' | int }} {{ '1_000' | int }} {{ '4.7' | int }} {{ '1e3' | int }} "
                   "{{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ none | int }} {{ true | int }} "
                   "{{ '2.5' | float }} {{ 'x' | float }} {{ 3 | float }} {{ -3 | abs }} {{ -2.5 | abs }}"),
            "43 -12 1000 4 1000 0 7 3 0 1 2.5 0.0 3.0 3 2.5");
}

TEST(JinjaFilters, SequenceFilters) {
  EXPECT_EQ(render("{{ 'h\xC3\xA9llo' | length }} {{ [1, 2] | count }} {{ {'a': 1} | length }} {{ [1, 2] | first }} "
                   "{{ [1, 2] | last }} {{ 'ab' | list }} {{ [1, 2] | join(', ') }} {{ [1, 'a'] | join }} "
                   "[{{ [] | first }}] {{ [3, 1, 2] | reverse | list }} {{ 'abc' | reverse }} {{ d | items | list }}",
                   R"({"d": {"x": 1}})"),
            "5 2 1 1 2 ['a', 'b'] 1, 2 1a [] [2, 1, 3] cba [('x', 1)]");
}

TEST(JinjaFilters, AttributeFilters) {
  EXPECT_EQ(render("{{ msgs | selectattr('role', 'equalto', 'user') | list | length }}|"
                   "{{ msgs | rejectattr('role', 'eq', 'user') | map(attribute='content') | list }}|"
                   "{{ msgs | map(attribute='role') | join(',') }}|{{ msgs | join('', attribute='content') }}|"
                   "{{ msgs | selectattr('meta') | map(attribute='meta.n') | list }}|"
                   "{{ msgs | map(attribute='missing', default='z') | join }}",
                   kMessages),
            "2|['b']|user,assistant,user|abc|[1]|zzz");
  EXPECT_EQ(render("{{ [1, 2, 3] | select('odd') | list }}{{ [1, 2, 3] | reject('odd') | list }}"
                   "{{ ['a', '', 'b'] | select | list }}{{ ['A', 'b'] | map('lower') | join }}"),
            "[1, 3][2]['a', 'b']ab");
}

TEST(JinjaTests, IsTests) {
  EXPECT_EQ(render("{{ x is defined }}{{ x is undefined }}{{ none is none }}{{ 'a' is string }}{{ {} is mapping }}"
                   "{{ [] is iterable }}{{ 'a' is sequence }}{{ 1 is number }}{{ true is number }}{{ 1.5 is float }}"
                   "{{ 1 is integer }}{{ true is integer }}{{ true is true }}{{ 1 is true }}{{ false is false }}"
                   "{{ 0 is false }}{{ x is not defined }}"),
            "FalseTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueFalseTrueFalseTrueFalseTrue");
  EXPECT_EQ(render("{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 10 is divisibleby(3) }}{{ 2 is in [1, 2] }}"
                   "{{ 2 is eq 2 }}{{ 3 is gt 2 }}"),
            "TrueTrueTrueFalseTrueTrueTrue");
}

TEST(JinjaMethods, StringMethods) {
  EXPECT_EQ(render("{{ ' a b '.strip() }}|{{ 'xxaxx'.lstrip('x') }}|{{ 'xxaxx'.rstrip('x') }}|{{ 'a,b,,c'.split(',') }}|"
                   "{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'a b c'.rsplit(' ', 1) }}|"
                   "{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}{{ 'abc'.startswith('b') }}|"
                   "{{ 'AbC'.lower() }}{{ 'AbC'.upper() }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ '-'.join(['a', 'b']) }}"),
            "a b|axx|xxa|['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']|['a b', 'c']|TrueTrueFalse|abcABC|bba|a-b");
}

TEST(JinjaMethods, Qwen3ThinkSplitting) {
  // The expression Qwen3's template uses to separate reasoning from the answer.
  const std::string content = R"({"c": "<think>\nreasoning\n</think>\n\nanswer"})";
  EXPECT_EQ(render("{{ c.split('</think>')[-1].lstrip('\\n') }}", content), "answer");
  EXPECT_EQ(render("{{ c.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}", content),
            "reasoning");
}

TEST(JinjaMethods, DictMethods) {
  EXPECT_EQ(render("{{ d.keys() | list }}{{ d.values() | list }}{{ d.items() | list }}{{ d.get('b') }}"
                   "{{ d.get('z') }}{{ d.get('z', 0) }}",
                   R"({"d": {"b": 1, "a": 2}})"),
            "['b', 'a'][1, 2][('b', 1), ('a', 2)]1None0");
}

TEST(JinjaGlobals, RangeDictNamespace) {
  EXPECT_EQ(render("{{ range(3) | list }}{{ range(1, 7, 2) | list }}{{ range(5, 0, -2) | list }}"
                   "{{ dict(a=1, b='x') }}{{ namespace(a=1).a }}"),
            "[0, 1, 2][1, 3, 5][5, 3, 1]{'a': 1, 'b': 'x'}1");
  EXPECT_NE(render_error("{{ range(200000) | length }}").find("Range too big"), std::string::npos);
}

TEST(JinjaGlobals, StrftimeNowFormatsTheCurrentTime) {
  const std::string year = render("{{ strftime_now('%Y') }}");
  ASSERT_EQ(year.size(), 4u);
  EXPECT_GE(std::stoi(year), 2024);
}

TEST(JinjaPythonText, SplitStripReplaceFollowPython) {
  using namespace python_text;
  using Texts = std::vector<std::string>;
  EXPECT_EQ(strip("\xE3\x80\x80 x\t\n", std::nullopt, true, true), "x");
  EXPECT_EQ(split("  a  b  c ", std::nullopt, 1, false), (Texts{"a", "b  c "}));
  EXPECT_EQ(split("  a  b  c ", std::nullopt, 1, true), (Texts{"  a  b", "c"}));
  EXPECT_EQ(split("a,b,c", std::string(","), 1, true), (Texts{"a,b", "c"}));
  EXPECT_EQ(replace("abc", "", "-", -1), "-a-b-c-");
}

TEST(JinjaPythonText, CaseMappingIsUnicodesFullMapping) {
  using namespace python_text;
  EXPECT_EQ(upper("stra\xC3\x9F" "e \xC3\xA9"), "STRASSE \xC3\x89");  // ß -> SS
  EXPECT_EQ(length(lower("\xC4\xB0")), 2u);                          // İ -> i + combining dot
  EXPECT_EQ(capitalize("\xC3\x9F" "X"), "Ssx");
  // Capital sigma lowercases to final ς at the end of a word, else to σ: "ΟΔΟΣ ΣΑ" -> "οδος σα".
  EXPECT_EQ(lower("\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3 \xCE\xA3\xCE\x91"),
            "\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x82 \xCF\x83\xCE\xB1");
}

}  // namespace
}  // namespace moe::jinja::testing
