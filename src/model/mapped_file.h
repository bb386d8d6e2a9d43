#pragma once
// A read-only memory mapping of a whole file, unmapped on destruction.
#include <cstddef>
#include <string>

namespace moe {

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

}  // namespace moe
