#include "api/response_builder.h"

#include "api/generate_response.h"
#include "api/openai_response.h"

namespace moe::api {

std::unique_ptr<ResponseBuilder> make_response_builder(const GenerationCall& call, const std::string& response_id,
                                                       int64_t created) {
  if (call.api == ApiKind::Generate) return make_generate_builder(call);
  return make_openai_builder(call, response_id, created);
}

}  // namespace moe::api
