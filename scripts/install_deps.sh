#!/usr/bin/env bash
# Installs every Debian package the build, the tests, the examples and CI need (libxxhash-dev: the
# header of the checkpoint fingerprint's hash, inlined, so nothing links it): clang and
# libclang-rt-dev (libFuzzer and clang's sanitizer runtimes) are for scripts/fuzz.sh.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  ca-certificates cmake ninja-build g++ pkg-config \
  libeigen3-dev libboost-dev libboost-program-options-dev \
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev nlohmann-json3-dev \
  libpcre2-dev libutf8proc-dev libspdlog-dev libfmt-dev \
  libgtest-dev libgmock-dev libbenchmark-dev \
  python3 python3-zmq python3-msgpack python3-numpy python3-requests curl \
  clang libclang-rt-dev ccache libxxhash-dev >/dev/null
# node and npm run the official openai package in tests/e2e_http; a nodejs from nodesource bundles npm and
# conflicts with Debian's npm package, so Debian's pair is installed only where npm is missing.
if ! command -v npm >/dev/null; then
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
