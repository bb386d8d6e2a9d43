#include "jinja/parser.h"

#include <algorithm>
#include <initializer_list>

#include "jinja/template.h"

namespace moe::jinja {

namespace {

// Tags that only continue or close a block; meeting one outside its block is a syntax error.
bool is_block_continuation(std::string_view name) {
  static constexpr std::string_view kNames[] = {"elif",   "else",     "endif",         "endfor",
                                                "endset", "endmacro", "endgeneration"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

bool is_reserved_name(std::string_view name) {
  static constexpr std::string_view kNames[] = {"true", "false", "none", "True", "False", "None"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

class StatementParser {
 public:
  explicit StatementParser(std::string_view source) : stream_(tokenize(source)), expressions_(stream_) {}

  Body parse_all() {
    std::string unused;
    return parse_body({}, unused, 1);
  }

 private:
  // Statements up to one of `end_tags` (or the end of the template when empty; the last end tag is
  // the one named when it is missing). On return the stream is just past the end tag's name and
  // `end_tag` holds it.
  Body parse_body(std::initializer_list<std::string_view> end_tags, std::string& end_tag, int opening_line) {
    Body body;
    while (true) {
      const Token& token = stream_.current();
      switch (token.type) {
        case TokenType::End:
          if (end_tags.size() != 0)
            fail_at(opening_line, "unexpected end of template: the block opened here needs '" +
                                      std::string(*std::prev(end_tags.end())) + "'");
          return body;
        case TokenType::Text:
          body.push_back({token.line, ast::Text{stream_.next().value}});
          break;
        case TokenType::VariableBegin: {
          const int line = stream_.next().line;
          ExprPtr expression = expressions_.parse_tuple();
          stream_.expect(TokenType::VariableEnd, {}, "'}}'");
          body.push_back({line, ast::Output{std::move(expression)}});
          break;
        }
        case TokenType::BlockBegin: {
          const int line = stream_.next().line;
          const std::string name = stream_.expect(TokenType::Name, {}, "a tag name").value;
          if (std::find(end_tags.begin(), end_tags.end(), name) != end_tags.end()) {
            end_tag = name;
            return body;
          }
          parse_tag(name, line, body);
          break;
        }
        default:
          stream_.fail("unexpected " + stream_.describe_current());
      }
    }
  }

  // One tag after its name; appends what it produces to `body`.
  void parse_tag(const std::string& name, int line, Body& body) {
    if (name == "if") return body.push_back({line, parse_if(line)});
    if (name == "for") return body.push_back({line, parse_for(line)});
    if (name == "set") return body.push_back(parse_set(line));
    if (name == "macro") return body.push_back({line, parse_macro(line)});
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) fail_at(line, "'" + name + "' outside of a loop");
      end_tag();
      return body.push_back({line, ast::LoopControl{name == "break"}});
    }
    if (name == "generation") {
      // transformers' {% generation %} only marks assistant tokens for masks; its text renders as is.
      end_tag();
      std::string closing;
      for (Stmt& statement : parse_body({"endgeneration"}, closing, line)) body.push_back(std::move(statement));
      end_tag();
      return;
    }
    if (is_block_continuation(name)) fail_at(line, "unexpected '{% " + name + " %}'");
    fail_at(line, "unsupported tag '" + name + "'");
  }

  void end_tag() { stream_.expect(TokenType::BlockEnd, {}, "'%}'"); }

  ast::If parse_if(int line) {
    ast::If node;
    ExprPtr condition = expressions_.parse_tuple(false);
    while (true) {
      end_tag();
      std::string closing;
      Body body = parse_body({"elif", "else", "endif"}, closing, line);
      node.branches.push_back({std::move(condition), std::move(body)});
      if (closing == "elif") {
        condition = expressions_.parse_tuple(false);
        continue;
      }
      if (closing == "else") {
        end_tag();
        node.otherwise = parse_body({"endif"}, closing, line);
      }
      end_tag();
      return node;
    }
  }

  ast::For parse_for(int line) {
    ast::For node;
    node.target = parse_target(false);
    stream_.expect(TokenType::Name, "in", "'in'");
    node.iterable = expressions_.parse_tuple(false, "recursive");
    if (stream_.at_name("recursive")) stream_.fail("unsupported recursive for loop");
    if (stream_.skip_if(TokenType::Name, "if")) node.filter = expressions_.parse_expression();
    end_tag();
    std::string closing;
    ++loop_depth_;
    node.body = parse_body({"else", "endfor"}, closing, line);
    --loop_depth_;
    if (closing == "else") {
      end_tag();
      node.otherwise = parse_body({"endfor"}, closing, line);
    }
    end_tag();
    return node;
  }

  Stmt parse_set(int line) {
    AssignTarget target = parse_target(true);
    if (stream_.skip_if(TokenType::Operator, "=")) {
      ExprPtr value = expressions_.parse_tuple();
      end_tag();
      return {line, ast::Set{std::move(target), std::move(value)}};
    }
    if (target.unpack || !target.namespace_attribute.empty())
      stream_.fail("a block set assigns to a single name");
    if (stream_.at_operator("|")) stream_.fail("unsupported filter on a block set");
    end_tag();
    std::string closing;
    Body body = parse_body({"endset"}, closing, line);
    end_tag();
    return {line, ast::SetBlock{target.names.front(), std::move(body)}};
  }

  ast::Macro parse_macro(int line) {
    ast::Macro node;
    node.name = assignable_name();
    stream_.expect(TokenType::Operator, "(", "'('");
    while (!stream_.at_operator(")")) {
      if (!node.parameters.empty()) stream_.expect(TokenType::Operator, ",", "','");
      if (stream_.at_operator(")")) break;
      node.parameters.push_back(assignable_name());
      if (stream_.skip_if(TokenType::Operator, "="))
        node.defaults.push_back(expressions_.parse_expression());
      else if (!node.defaults.empty())
        stream_.fail("non-default argument follows default argument");
    }
    stream_.next();
    end_tag();
    const int outer_loop_depth = loop_depth_;
    loop_depth_ = 0;
    std::string closing;
    node.body = parse_body({"endmacro"}, closing, line);
    loop_depth_ = outer_loop_depth;
    end_tag();
    return node;
  }

  // A name, `a, b` or `(a, b)`, or with `allow_namespace` also `ns.attr`.
  AssignTarget parse_target(bool allow_namespace) {
    AssignTarget target;
    if (allow_namespace && stream_.at(TokenType::Name) && stream_.look().type == TokenType::Operator &&
        stream_.look().value == ".") {
      target.names.push_back(stream_.next().value);
      stream_.next();
      target.namespace_attribute = stream_.expect(TokenType::Name, {}, "an attribute name").value;
      return target;
    }
    const bool parenthesized = stream_.skip_if(TokenType::Operator, "(");
    target.names.push_back(assignable_name());
    while (stream_.skip_if(TokenType::Operator, ",")) {
      target.unpack = true;
      if (!stream_.at(TokenType::Name)) break;
      target.names.push_back(assignable_name());
    }
    if (parenthesized) stream_.expect(TokenType::Operator, ")", "')'");
    return target;
  }

  std::string assignable_name() {
    const Token& token = stream_.expect(TokenType::Name, {}, "a name");
    if (is_reserved_name(token.value)) fail_at(token.line, "cannot assign to '" + token.value + "'");
    return token.value;
  }

  TokenStream stream_;
  ExpressionParser expressions_;
  int loop_depth_ = 0;
};

}  // namespace

Body parse_template(std::string_view source) { return StatementParser(source).parse_all(); }

}  // namespace moe::jinja
