// Hands --device cuda to this backend when a program links it. Whatever links moe_cuda (or the
// package's moe::engine_cuda) asks the linker for moe_cuda_backend_linked, so this object, and
// with it the registration, is never left out of the archive.
#include "cuda/cuda_model.h"
#include "worker/load_model_on_device.h"

extern "C" const int moe_cuda_backend_linked = 1;

namespace {

const bool registered = (moe::register_cuda_model_loader(&moe::cuda::load_cuda_model), true);

}  // namespace
