#pragma once
// Reader of Hugging Face safetensors checkpoints: one file, or shards listed in
// model.safetensors.index.json. Tensors are memory-mapped; half-precision matrices are copied once,
// tiled for the GEMM (kernels/weight_tiling.h), when first asked for, into a weight arena. And the
// prefetch that reads a checkpoint's files into the page cache before the model loads.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/aligned_memory.h"
#include "kernels/weight.h"
#include "model/gptq_matrix.h"
#include "model/quantization.h"
#include "model/tensor_shard.h"

namespace moe {

struct ModelConfig;

// A read-only memory mapping of a whole file, unmapped on destruction.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

// Unmaps from this process the whole pages inside [begin, begin + bytes) of a MappedFile's mapping,
// for a range copied elsewhere (a tiled weight): the process stops holding them in its resident
// set, and a later read faults them in again from the page cache or the file.
void drop_mapped_pages(const void* begin, size_t bytes);

// Memory for the weights a checkpoint tiles at load (kernels/weight_tiling.h): large slabs, aligned
// to and advised for 2 MiB pages, handed out in cache-line-aligned pieces. Thousands of 1 MiB
// expert matrices then share huge pages, which cuts the TLB misses of streaming gigabytes of
// weights every decode step.
class WeightArena {
 public:
  // elements uint16_t values, 64-byte aligned, valid for the arena's lifetime.
  uint16_t* allocate(int64_t elements);
  // bytes, 64-byte aligned, valid for the arena's lifetime.
  uint8_t* allocate_bytes(int64_t bytes);

 private:
  struct Slab {
    AlignedArray<char> memory;
    size_t size = 0, used = 0;
  };
  std::vector<Slab> slabs_;
};

struct TensorInfo {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  const std::string* file = nullptr;  // the shard holding it, for error messages
};

// The tensors of a safetensors file's bytes: the header is checked and every tensor's extent lies
// inside `size`; `path` names the file in errors (TensorInfo::file is left for the caller to set).
std::map<std::string, TensorInfo> parse_safetensors(const unsigned char* data, size_t size, const std::string& path);

// One .safetensors file: validates the header and every tensor's extent when opened.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::string& path() const { return file_.path(); }

 private:
  MappedFile file_;
  std::map<std::string, TensorInfo> tensors_;
};

class Checkpoint {
 public:
  // DIR/model.safetensors.index.json when present, else DIR/model.safetensors. `format` says what
  // projection() does.
  static Checkpoint open(const std::string& model_dir, const ProjectionFormat& format = {});
  // No files: random bf16 weights made in memory from `config` alone with `seed` (random_checkpoint.h's
  // random_tensors, the bytes of moe-make-checkpoint's checkpoint of that seed), for --load-format dummy.
  static Checkpoint dummy(const ModelConfig& config, uint64_t seed, const ProjectionFormat& format = {});

  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // Every tensor of every shard, by name.
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo& tensor(const std::string& name) const;
  // A 2-D weight of exactly [rows, cols]; anything else is an error naming file and tensor. F32
  // matrices are viewed where they lie; BF16 and F16 ones are tiled on the first call (the same
  // tiled copy serves every later call, e.g. a tied embedding and lm_head).
  WeightView matrix(const std::string& name, int64_t rows, int64_t cols) const;
  // A projection matrix `name` ("<module>.weight") of exactly [rows, cols]: from a GPTQ checkpoint
  // the module's qweight/qzeros/scales/g_idx as a Q4 or Q8 view (or the float tensor where the
  // module is not quantized, as GPTQ leaves lm_head); else quantized at load when the format asks
  // for it, or what matrix() gives. Every malformed GPTQ tensor is an error naming it.
  WeightView projection(const std::string& name, int64_t rows, int64_t cols) const;
  // projection()'s matrix of the block `rows` × `cols` of the [full_rows, full_cols] tensor `name`: a
  // tensor-parallel rank's share (model/tensor_shard.h), copied out, then tiled or quantized as the
  // whole would be. The whole tensor is projection(); GPTQ tensors are not split (a moe::Error).
  WeightView projection_block(const std::string& name, int64_t full_rows, int64_t full_cols, IndexRange rows,
                              IndexRange cols) const;
  // A 1-D parameter of exactly n elements, widened to float32.
  VectorParam vector(const std::string& name, int64_t n) const;
  // Its elements [part.begin, part.begin + part.count).
  VectorParam vector_part(const std::string& name, int64_t n, IndexRange part) const;
  // Any tensor of exactly `shape`, widened to float32 in its row-major order (what a device
  // upload copies: no tiling).
  std::vector<float> floats(const std::string& name, const std::vector<int64_t>& shape) const;
  // A one-dimensional I64 tensor of `count` elements (an EAGLE-3 head's d2t); another dtype or shape is
  // a moe::Error naming the tensor.
  std::vector<int64_t> int64s(const std::string& name, int64_t count) const;
  // The tensor `name`, which must have exactly `shape`; anything else is an error naming file and tensor.
  const TensorInfo& tensor_of_shape(const std::string& name, const std::vector<int64_t>& shape) const;
  // Same, and its elements must be floats (BF16, F16, F32), not GPTQ's packed I32.
  const TensorInfo& float_tensor(const std::string& name, const std::vector<int64_t>& shape) const;

 private:
  // --kernel-dtype bf16 multiplies bf16 tensors only: a moe::Error naming `name` otherwise.
  void check_kernel_dtype(const std::string& name, const TensorInfo& t) const;
  // The copy of `row_major` kept under `key`, tiled (half precision) or as it is (float32), made on the
  // first call (then `on_copied` runs).
  WeightView tiled_copy(const std::string& key, const WeightView& row_major, const std::function<void()>& on_copied) const;
  // The quantized [rows, cols] matrix kept under `key`, made by `make` on the first call.
  WeightView quantized_copy(const std::string& key, int64_t rows, int64_t cols,
                            const std::function<GptqMatrix()>& make) const;
  // `source` quantized as --quantization asks (int8 or int4 at load).
  GptqMatrix quantize_at_load(const std::string& name, const WeightView& source) const;

  std::string dir_;
  ProjectionFormat format_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  struct DummyWeights;
  std::shared_ptr<DummyWeights> dummy_;  // the tensors of Checkpoint::dummy
  std::map<std::string, TensorInfo> tensors_;
  // The tiled (and quantized) copies, shared by copies of this checkpoint; layers may load on
  // several threads.
  struct TiledMatrices {
    std::mutex mutex;
    WeightArena arena;
    std::map<std::string, WeightView> views;
  };
  std::shared_ptr<TiledMatrices> tiled_ = std::make_shared<TiledMatrices>();
};

// Reads a checkpoint's safetensors files once, front to back, so their pages are in memory before
// the model is loaded (the load reads every weight, and would otherwise fault the mapped files in
// page by page), and reports progress(done_bytes, total_bytes) after every chunk read. Does nothing
// where model_dir is not a directory (loading the model then says what is wrong).
void prefetch_checkpoint(const std::string& model_dir, const std::function<void(int64_t, int64_t)>& progress);

}  // namespace moe
