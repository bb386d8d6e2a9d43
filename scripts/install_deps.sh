#!/usr/bin/env bash
# Installs the Debian packages the build and the demo need and, unless --build-only is given, those of
# the tests, the examples and CI as well (libxxhash-dev: the header of the checkpoint fingerprint's hash,
# inlined, so nothing links it): clang and libclang-rt-dev (libFuzzer and clang's sanitizer runtimes) are
# for scripts/fuzz.sh; Python's zmq, msgpack and requests and node's npm drive the e2e tests.
# Usage: install_deps.sh [--build-only]
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# Google Test and Benchmark are small and keep the configure step the same for every script.
$SUDO apt-get install -y -qq --no-install-recommends \
  ca-certificates cmake ninja-build g++ pkg-config \
  libeigen3-dev libboost-dev libboost-program-options-dev \
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev nlohmann-json3-dev \
  libpcre2-dev libutf8proc-dev libspdlog-dev libfmt-dev \
  libgtest-dev libgmock-dev libbenchmark-dev \
  python3 python3-numpy curl ccache libxxhash-dev >/dev/null
if [ "${1:-}" = --build-only ]; then exit 0; fi
$SUDO apt-get install -y -qq --no-install-recommends \
  python3-zmq python3-msgpack python3-requests clang libclang-rt-dev >/dev/null
# node and npm run the official openai package in tests/e2e_http; a nodejs from nodesource bundles npm and
# conflicts with Debian's npm package, so Debian's pair is installed only where npm is missing.
if ! command -v npm >/dev/null; then
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
