#include "model/random_checkpoint.h"
#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_file.h"
#include "kernels/weight_tiling.h"

namespace moe {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kSlabBytes = size_t{256} << 20;
constexpr size_t kCacheLine = 64;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

DType parse_dtype(const std::string& name, const std::string& file, const std::string& tensor) {
  if (name == "BF16") return DType::BF16;
  if (name == "F16") return DType::F16;
  if (name == "F32") return DType::F32;
  if (name == "I32") return DType::I32;  // GPTQ's packed integers
  if (name == "I64") return DType::I64;    // an EAGLE-3 head's d2t
  if (name == "BOOL") return DType::Bool;  // an EAGLE-3 head's t2d
  throw Error(file + ": tensor '" + tensor + "' has dtype " + name + "; supported: BF16, F16, F32, I32, I64, BOOL");
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The bytes of a tensor of info's shape and dtype; a negative dimension, or a product that does not
// fit in 64 bits (which would wrap and pass the extent checks), is an error naming the tensor.
uint64_t tensor_bytes(const TensorInfo& info, const std::string& path, const std::string& name) {
  uint64_t bytes = dtype_size(info.dtype);
  for (int64_t d : info.shape) {
    if (d < 0) throw Error(path + ": tensor '" + name + "' has a negative dimension");
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
      throw Error(path + ": tensor '" + name + "' of shape " + shape_string(info.shape) + " is too large");
  }
  return bytes;
}

// A shard must be a file inside the model directory: an index naming an absolute path or climbing
// out with ".." is refused, whatever the file system holds. The check is on the name only, so
// shards that are symbolic links (as in the Hugging Face hub's cache) still load.
void check_shard_name(const std::string& shard, const std::string& index_path) {
  const std::filesystem::path name(shard);
  bool climbs = false;
  for (const auto& part : name) climbs = climbs || part == "..";
  if (shard.empty() || name.is_absolute() || climbs)
    throw Error(index_path + ": shard '" + shard + "' is not a file inside the model directory");
}

}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw Error("cannot stat " + path + ": " + std::strerror(err));
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw Error("cannot map " + path + ": " + std::strerror(err));
    }
    data_ = static_cast<const unsigned char*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<unsigned char*>(data_), size_);
}

void drop_mapped_pages(const void* begin, size_t bytes) {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (reinterpret_cast<uintptr_t>(begin) + page - 1) / page * page;
  const uintptr_t last = (reinterpret_cast<uintptr_t>(begin) + bytes) / page * page;
  // Only advice: a failure leaves the pages mapped, which is harmless.
  if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

uint16_t* WeightArena::allocate(int64_t elements) {
  return reinterpret_cast<uint16_t*>(allocate_bytes(elements * static_cast<int64_t>(sizeof(uint16_t))));
}

uint8_t* WeightArena::allocate_bytes(int64_t size) {
  const size_t bytes = round_up(std::max<size_t>(1, static_cast<size_t>(size)), kCacheLine);
  if (slabs_.empty() || slabs_.back().size - slabs_.back().used < bytes) {
    Slab slab;
    slab.size = round_up(std::max(bytes, kSlabBytes), kHugePage);
    slab.memory = aligned_array<char>(kHugePage, slab.size);
    // Only a hint: where transparent huge pages are off, the slab keeps 4 KiB pages.
    madvise(slab.memory.get(), slab.size, MADV_HUGEPAGE);
    slabs_.push_back(std::move(slab));
  }
  Slab& slab = slabs_.back();
  char* piece = slab.memory.get() + slab.used;
  slab.used += bytes;
  return reinterpret_cast<uint8_t*>(piece);
}

std::map<std::string, TensorInfo> parse_safetensors(const unsigned char* data, size_t size, const std::string& path) {
  if (size < 8) throw Error(path + ": truncated safetensors file (" + std::to_string(size) + " bytes)");
  uint64_t header_len = 0;
  std::memcpy(&header_len, data, 8);  // little-endian on every platform we build for
  if (header_len > size - 8)
    throw Error(path + ": truncated safetensors file: header of " + std::to_string(header_len) +
                " bytes does not fit in " + std::to_string(size) + " bytes");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(data + 8, data + 8 + header_len);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": safetensors header is not JSON: " + e.what());
  }
  if (!header.is_object()) throw Error(path + ": safetensors header is not a JSON object");
  const unsigned char* body = data + 8 + header_len;
  const uint64_t body_size = size - 8 - header_len;
  std::map<std::string, TensorInfo> tensors;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    try {
      TensorInfo info;
      info.dtype = parse_dtype(entry.at("dtype").get<std::string>(), path, name);
      info.shape = entry.at("shape").get<std::vector<int64_t>>();
      const auto offsets = entry.at("data_offsets").get<std::vector<uint64_t>>();
      const uint64_t bytes = tensor_bytes(info, path, name);
      if (offsets.size() != 2 || offsets[0] > offsets[1])
        throw Error(path + ": tensor '" + name + "' has malformed data_offsets");
      if (offsets[1] - offsets[0] != bytes)
        throw Error(path + ": tensor '" + name + "' of shape " + shape_string(info.shape) + " needs " +
                    std::to_string(bytes) + " bytes but its data_offsets span " +
                    std::to_string(offsets[1] - offsets[0]));
      if (offsets[1] > body_size)
        throw Error(path + ": truncated: tensor '" + name + "' ends at byte " + std::to_string(offsets[1]) +
                    " of a data section of " + std::to_string(body_size) + " bytes");
      info.data = body + offsets[0];
      tensors.emplace(name, std::move(info));
    } catch (const nlohmann::json::exception& e) {
      throw Error(path + ": tensor '" + name + "' has a malformed header entry: " + e.what());
    }
  }
  return tensors;
}

SafetensorsFile::SafetensorsFile(const std::string& path)
    : file_(path), tensors_(parse_safetensors(file_.data(), file_.size(), path)) {
  for (auto& [name, info] : tensors_) info.file = &file_.path();
}

Checkpoint Checkpoint::open(const std::string& model_dir, const ProjectionFormat& format) {
  Checkpoint ckpt;
  ckpt.dir_ = model_dir;
  ckpt.format_ = format;
  const std::string index_path = model_dir + "/model.safetensors.index.json";
  std::vector<std::string> shard_names;
  std::map<std::string, std::string> weight_map;
  if (file_exists(index_path)) {
    const auto index = read_json_file(index_path);
    if (!index.contains("weight_map") || !index["weight_map"].is_object())
      throw Error(index_path + ": no weight_map object");
    for (const auto& [tensor, shard] : index["weight_map"].items()) {
      if (!shard.is_string()) throw Error(index_path + ": the shard of tensor '" + tensor + "' is not a file name");
      weight_map[tensor] = shard.get<std::string>();
      check_shard_name(weight_map[tensor], index_path);
      if (std::find(shard_names.begin(), shard_names.end(), weight_map[tensor]) == shard_names.end())
        shard_names.push_back(weight_map[tensor]);
    }
  } else if (file_exists(model_dir + "/model.safetensors")) {
    shard_names.push_back("model.safetensors");
  } else {
    throw Error(model_dir + ": no model.safetensors or model.safetensors.index.json");
  }
  for (const auto& shard : shard_names) {
    auto file = std::make_shared<SafetensorsFile>(model_dir + "/" + shard);
    // The index says which shard holds each tensor: a tensor it maps to another shard is that one's
    // (a checkpoint overlay's links repeat the tensors it replaces).
    for (const auto& [name, info] : file->tensors()) {
      const auto mapped = weight_map.find(name);
      if (mapped == weight_map.end() || mapped->second == shard) ckpt.tensors_[name] = info;
    }
    ckpt.files_.push_back(std::move(file));
  }
  for (const auto& [tensor, shard] : weight_map)
    if (!ckpt.tensors_.count(tensor))
      throw Error(model_dir + "/" + shard + ": tensor '" + tensor + "' is listed in the index but missing");
  return ckpt;
}

struct Checkpoint::DummyWeights {
  std::string name;  // what errors call it, in place of a shard's path
  std::vector<TensorToWrite> tensors;
};

Checkpoint Checkpoint::dummy(const ModelConfig& config, uint64_t seed, const ProjectionFormat& format) {
  Checkpoint ckpt;
  ckpt.dir_ = "dummy weights (seed " + std::to_string(seed) + ")";
  ckpt.format_ = format;
  RandomCheckpointOptions options;
  options.seed = seed;
  ckpt.dummy_ = std::make_shared<DummyWeights>(DummyWeights{ckpt.dir_, random_tensors(config, options)});
  for (const TensorToWrite& t : ckpt.dummy_->tensors)
    ckpt.tensors_[t.name] = TensorInfo{t.dtype, t.shape, t.bytes.data(), &ckpt.dummy_->name};
  return ckpt;
}

const TensorInfo& Checkpoint::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(dir_ + ": missing tensor '" + name + "'");
  return it->second;
}

const TensorInfo& Checkpoint::tensor_of_shape(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorInfo& t = tensor(name);
  if (t.shape != shape)
    throw Error(*t.file + ": tensor '" + name + "' has shape " + shape_string(t.shape) + ", expected " +
                shape_string(shape));
  return t;
}

const TensorInfo& Checkpoint::float_tensor(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorInfo& t = tensor_of_shape(name, shape);
  if (t.dtype == DType::I32 || t.dtype == DType::I64 || t.dtype == DType::Bool)
    throw Error(*t.file + ": tensor '" + name + "' has dtype " + dtype_name(t.dtype) + "; expected BF16, F16 or F32");
  return t;
}

WeightView Checkpoint::matrix(const std::string& name, int64_t rows, int64_t cols) const {
  const TensorInfo& t = float_tensor(name, {rows, cols});
  check_kernel_dtype(name, t);
  const WeightView row_major{t.data, t.dtype, rows, cols};
  if (t.dtype == DType::F32) return row_major;
  return tiled_copy(name, row_major, [&] {
    // The kernels read the copy; the file's pages need not stay in this process's resident set.
    drop_mapped_pages(t.data, static_cast<size_t>(rows * cols) * dtype_size(t.dtype));
  });
}

void Checkpoint::check_kernel_dtype(const std::string& name, const TensorInfo& t) const {
  if (format_.kernel_dtype == KernelDType::BF16 && t.dtype != DType::BF16)
    throw Error(*t.file + ": tensor '" + name + "' is " + dtype_name(t.dtype) +
                "; --kernel-dtype bf16 multiplies bf16 checkpoints only (use --kernel-dtype float32)");
}

WeightView Checkpoint::tiled_copy(const std::string& key, const WeightView& row_major,
                                  const std::function<void()>& on_copied) const {
  std::lock_guard lock(tiled_->mutex);
  auto [it, added] = tiled_->views.try_emplace(key);
  if (added) {
    const int64_t rows = row_major.rows, cols = row_major.cols;
    if (row_major.dtype == DType::F32) {
      // A float32 block (a tensor-parallel rank's share) is copied as it is, row-major.
      auto* copy = tiled_->arena.allocate_bytes(rows * cols * static_cast<int64_t>(sizeof(float)));
      std::memcpy(copy, row_major.data, static_cast<size_t>(rows * cols) * sizeof(float));
      it->second = WeightView{copy, DType::F32, rows, cols};
    } else {
      it->second = weight_tiling::tile_into(row_major, tiled_->arena.allocate(weight_tiling::tiled_elements(rows, cols)));
    }
    on_copied();
  }
  WeightView tiled = it->second;
  // Integer products are for the quantized projections; these weights keep float32 products.
  tiled.kernel_dtype = format_.kernel_dtype == KernelDType::Int8 ? KernelDType::F32 : format_.kernel_dtype;
  return tiled;
}

VectorParam Checkpoint::vector(const std::string& name, int64_t n) const { return floats(name, {n}); }

std::vector<int64_t> Checkpoint::int64s(const std::string& name, int64_t count) const {
  const TensorInfo& t = tensor_of_shape(name, {count});
  if (t.dtype != DType::I64)
    throw Error(*t.file + ": tensor '" + name + "' has dtype " + dtype_name(t.dtype) + "; expected I64");
  std::vector<int64_t> out(static_cast<size_t>(count));
  std::memcpy(out.data(), t.data, out.size() * sizeof(int64_t));  // safetensors are little-endian, as the host
  return out;
}

std::vector<float> Checkpoint::floats(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorInfo& t = float_tensor(name, shape);
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  // The whole tensor read as one row-major row: row_to_float widens any dtype.
  const WeightView as_row{t.data, t.dtype, 1, count};
  std::vector<float> out(static_cast<size_t>(count));
  as_row.row_to_float(0, out.data());
  return out;
}

void prefetch_checkpoint(const std::string& model_dir, const std::function<void(int64_t, int64_t)>& progress) {
  namespace fs = std::filesystem;
  // Loading the model names what is wrong with a directory that is not one.
  if (!fs::is_directory(model_dir)) return;
  std::vector<fs::path> files;
  int64_t total = 0;
  for (const auto& entry : fs::directory_iterator(model_dir)) {
    if (entry.path().extension() != ".safetensors") continue;
    files.push_back(entry.path());
    total += static_cast<int64_t>(entry.file_size());
  }
  std::sort(files.begin(), files.end());
  std::vector<char> chunk(8 << 20);
  int64_t done = 0;
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error("cannot read " + file.string());
    while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
      done += in.gcount();
      progress(done, total);
    }
  }
}

}  // namespace moe
