#include "tokenizer/jinja/template.h"

#include "tokenizer/jinja/parser.h"
#include "tokenizer/jinja/renderer.h"

namespace moe::tokenizer::jinja {

Template Template::compile(std::string_view source) {
  return Template(std::make_shared<const Body>(parse_template(source)));
}

std::string Template::render(const Dict& variables) const { return Renderer(variables).render(*body_); }

}  // namespace moe::tokenizer::jinja
