#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the examples need.
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
  python3 python3-zmq python3-msgpack python3-numpy python3-requests curl >/dev/null
