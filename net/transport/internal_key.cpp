#include "transport/internal_key.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "common/error.h"

namespace moe::transport {
namespace {

constexpr size_t kZ85KeyChars = 40;

std::string trimmed(const std::string& text) {
  const char* space = " \t\r\n";
  const size_t begin = text.find_first_not_of(space);
  if (begin == std::string::npos) return {};
  return text.substr(begin, text.find_last_not_of(space) - begin + 1);
}

}  // namespace

InternalKey InternalKey::generate() {
  char public_key[kZ85KeyChars + 1], secret_key[kZ85KeyChars + 1];
  if (zmq_curve_keypair(public_key, secret_key) != 0)
    throw Error(std::string("cannot make a CURVE key pair (libzmq built without CURVE?): ") + zmq_strerror(zmq_errno()));
  return {public_key, secret_key};
}

InternalKey InternalKey::read_file(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    throw Error("cannot read the internal key file " + path + ": " + std::strerror(errno));
  if (info.st_mode & (S_IRWXG | S_IRWXO))
    throw Error("the internal key file " + path + " can be read by other users: chmod 600 " + path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw Error("cannot read the internal key file " + path);
  const std::string secret = trimmed(text.str());
  char public_key[kZ85KeyChars + 1];
  if (secret.size() != kZ85KeyChars || zmq_curve_public(public_key, secret.c_str()) != 0)
    throw Error("the internal key file " + path + " does not hold a key: it should hold the 40 characters "
                "moe-serve --make-internal-key writes");
  return {public_key, secret};
}

void InternalKey::write_file(const std::string& path) const {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) throw Error("cannot create the internal key file " + path + ": " + std::strerror(errno));
  const std::string line = secret_key + "\n";
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  if (!written) throw Error("cannot write the internal key file " + path);
}

std::string InternalKey::public_key_bytes() const {
  std::string bytes(32, '\0');
  zmq_z85_decode(reinterpret_cast<uint8_t*>(bytes.data()), public_key.c_str());
  return bytes;
}

}  // namespace moe::transport
