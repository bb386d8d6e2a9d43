#include "moe/moe_runner.h"

#include "common/error.h"
#include "moe/moe_runner_backends.h"

namespace moe {

MoeBackend parse_moe_backend(const std::string& name) {
  if (name == "auto") return MoeBackend::Auto;
  if (name == "reference") return MoeBackend::Reference;
  if (name == "grouped") return MoeBackend::Grouped;
  throw Error("unknown MoE runner backend '" + name + "'; choose one of: auto, reference, grouped");
}

std::unique_ptr<MoeRunner> MoeRunner::create(MoeBackend backend, const ExpertPlacement& placement) {
  if (backend == MoeBackend::Reference) return make_reference_moe_runner();
  return make_grouped_moe_runner(placement);
}

}  // namespace moe
