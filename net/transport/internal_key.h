#pragma once
// The key the processes of one deployment share to authenticate their internal sockets (the
// scheduler's and the model workers' inboxes) over tcp:// and ipc://: a ZeroMQ CURVE key pair,
// kept in a file as its secret half (40 Z85 characters; the public half is derived from it). Every
// process given the same file speaks CURVE with that one pair, and a bound inbox accepts a
// connection only from a peer that proves, in CURVE's handshake, that it holds the secret half
// (zap_handler.h). A peer without it never gets a frame through, and what flows is encrypted.
#include <string>

namespace moe::transport {

struct InternalKey {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters

  // A new random pair (libzmq's CURVE, from the system's randomness).
  static InternalKey generate();
  // The pair whose secret half `path` holds (surrounding whitespace ignored). Throws moe::Error
  // naming the file when it cannot be read, is not 40 Z85 characters, or can be read by other
  // users than its owner (the key proves membership of the deployment: chmod 600).
  static InternalKey read_file(const std::string& path);
  // Writes the secret half to a new file `path` readable by its owner only; throws moe::Error when
  // the file exists (a deployment's key is never overwritten by accident) or cannot be written.
  void write_file(const std::string& path) const;
  // The public half as CURVE's 32 raw bytes (what a ZAP request carries).
  std::string public_key_bytes() const;
};

}  // namespace moe::transport
