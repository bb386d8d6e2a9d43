// The Jinja lexer: whitespace control (`-`, `+`), transformers' trim_blocks / lstrip_blocks,
// newline normalisation, literals, operators and the lines tokens are reported on. Expected texts
// were checked against Jinja 3.1 with trim_blocks=True, lstrip_blocks=True.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "jinja/lexer.h"

namespace moe::jinja {
namespace {

// The literal text tokens of a template, in order.
std::vector<std::string> texts(std::string_view source) {
  std::vector<std::string> out;
  for (const Token& token : tokenize(source))
    if (token.type == TokenType::Text) out.push_back(token.value);
  return out;
}

using Texts = std::vector<std::string>;

TEST(JinjaLexer, TrimBlocksDropsTheNewlineAfterABlockTagOnly) {
  EXPECT_EQ(texts("{% if x %}\na{% endif %}\nb"), (Texts{"a", "b"}));
  // Variable tags keep the newline after them.
  EXPECT_EQ(texts("{{ x }}\nb"), (Texts{"\nb"}));
  // Only one newline goes.
  EXPECT_EQ(texts("{% if x %}\n\na{% endif %}"), (Texts{"\na"}));
}

TEST(JinjaLexer, LstripBlocksRemovesIndentBeforeBlockAndCommentTags) {
  EXPECT_EQ(texts("a\n    {% if x %}\n    b\n\t {% endif %}\nc"), (Texts{"a\n", "    b\n", "c"}));
  EXPECT_EQ(texts("a\n  {# note #}\nb"), (Texts{"a\n", "b"}));
  // Not before a variable tag, and not when text precedes the tag on its line.
  EXPECT_EQ(texts("a\n  {{ x }}"), (Texts{"a\n  "}));
  EXPECT_EQ(texts("a\n  x {% if y %}{% endif %}"), (Texts{"a\n  x "}));
  // The start of the template counts as the start of a line.
  EXPECT_EQ(texts("   {% if x %}y{% endif %}"), (Texts{"y"}));
}

TEST(JinjaLexer, LstripAppliesAfterATrimmedBlockButNotAfterAVariable) {
  // After "%}\n" the next text starts a line; after "}}" it does not.
  EXPECT_EQ(texts("{% if a %}\n  {% if b %}x{% endif %}{% endif %}"), (Texts{"x"}));
  EXPECT_EQ(texts("{{ a }}  {% if b %}x{% endif %}"), (Texts{"  ", "x"}));
}

TEST(JinjaLexer, MinusStripsAllWhitespaceOnItsSide) {
  EXPECT_EQ(texts("a \n\t {{- x -}} \n b"), (Texts{"a", "b"}));
  EXPECT_EQ(texts("a\n\n  {%- if x -%}\n\n  b  {%- endif %}"), (Texts{"a", "b"}));
  EXPECT_EQ(texts("a  {#- c -#}  b"), (Texts{"a", "b"}));
}

TEST(JinjaLexer, PlusDisablesLstripAndTrim) {
  EXPECT_EQ(texts("a\n  {%+ if x %}b{% endif %}"), (Texts{"a\n  ", "b"}));
  EXPECT_EQ(texts("{% if x +%}\nb{% endif %}"), (Texts{"\nb"}));
}

TEST(JinjaLexer, NewlinesAreNormalisedAndOneTrailingNewlineDropped) {
  EXPECT_EQ(texts("a\r\nb\rc\n"), (Texts{"a\nb\nc"}));
  EXPECT_EQ(texts("a\n\n"), (Texts{"a\n"}));
}

TEST(JinjaLexer, ExpressionTokens) {
  const std::vector<Token> tokens = tokenize("{{ a.b[0] // 2 ** -1.5e3 ~ 'x' != none }}");
  std::vector<std::pair<TokenType, std::string>> got;
  for (const Token& t : tokens) got.emplace_back(t.type, t.value);
  const std::vector<std::pair<TokenType, std::string>> expected = {
      {TokenType::VariableBegin, ""}, {TokenType::Name, "a"},      {TokenType::Operator, "."},
      {TokenType::Name, "b"},         {TokenType::Operator, "["},  {TokenType::Integer, "0"},
      {TokenType::Operator, "]"},     {TokenType::Operator, "//"}, {TokenType::Integer, "2"},
      {TokenType::Operator, "**"},    {TokenType::Operator, "-"},  {TokenType::Float, "1.5e3"},
      {TokenType::Operator, "~"},     {TokenType::String, "x"},    {TokenType::Operator, "!="},
      {TokenType::Name, "none"},      {TokenType::VariableEnd, ""}, {TokenType::End, ""}};
  EXPECT_EQ(got, expected);
}

TEST(JinjaLexer, NumbersFollowJinjaRules) {
  const auto values = [](std::string_view source) {
    std::vector<std::string> out;
    for (const Token& t : tokenize(source))
      if (t.type == TokenType::Integer || t.type == TokenType::Float) out.push_back(t.value);
    return out;
  };
  EXPECT_EQ(values("{{ 1_000 + 2.5 + 3e2 }}"), (Texts{"1000", "2.5", "3e2"}));
  // After a dot only an integer is read, so x.0.1 is two subscripts.
  EXPECT_EQ(values("{{ x.0.1 }}"), (Texts{"0", "1"}));
}

TEST(JinjaLexer, StringLiteralsDecodePythonEscapes) {
  const std::vector<Token> tokens = tokenize(R"({{ 'a\n\t\\\'\x41\u00e9\101\q' "it's" }})");
  EXPECT_EQ(tokens[1].value, "a\n\t\\'A\xC3\xA9" "A\\q");
  EXPECT_EQ(tokens[2].value, "it's");
}

TEST(JinjaLexer, DelimitersInsideStringsAndBracketsDoNotEndATag) {
  const std::vector<Token> tokens = tokenize("{% set x = '%}' %}{{ {'a': {'b': 1}} }}");
  EXPECT_EQ(tokens[4].type, TokenType::String);
  EXPECT_EQ(tokens[4].value, "%}");
  EXPECT_EQ(tokens.back().type, TokenType::End);
  EXPECT_EQ(tokens[tokens.size() - 2].type, TokenType::VariableEnd);
}

TEST(JinjaLexer, TokensCarryTheirLine) {
  const std::vector<Token> tokens = tokenize("a\n{# two\nlines #}\n{{\n  x }}");
  // Text "a\n" on line 1; the comment spans lines 2-3 and its trailing newline is trimmed.
  ASSERT_EQ(tokens[0].type, TokenType::Text);
  EXPECT_EQ(tokens[0].line, 1);
  EXPECT_EQ(tokens[1].type, TokenType::VariableBegin);
  EXPECT_EQ(tokens[1].line, 4);
  EXPECT_EQ(tokens[2].value, "x");
  EXPECT_EQ(tokens[2].line, 5);
}

TEST(JinjaLexer, MalformedInputFailsNamingTheLine) {
  const auto error_of = [](std::string_view source) -> std::string {
    try {
      tokenize(source);
    } catch (const moe::Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of("a\n{{ x"), "chat template line 2: unexpected end of template, expected '}}'");
  EXPECT_EQ(error_of("\n\n{# open"), "chat template line 3: unterminated comment");
  EXPECT_EQ(error_of("{% if x %}\n{{ 'abc }}"), "chat template line 2: unterminated string literal");
  EXPECT_EQ(error_of("{{ a $ b }}"), "chat template line 1: unexpected character '$' in an expression");
  EXPECT_EQ(error_of("{{ (a ] }}"), "chat template line 1: unexpected ']'");
  EXPECT_EQ(error_of("ok\xFF"), "chat template line 1: the template is not valid UTF-8");
}

}  // namespace
}  // namespace moe::jinja
