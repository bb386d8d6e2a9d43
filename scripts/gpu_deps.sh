#!/usr/bin/env bash
# The Debian packages a GPU machine without network access lacks, carried there as .deb files.
#
#   scripts/gpu_deps.sh             here (Debian 12, with apt): download them into .deps/debs/
#   scripts/gpu_deps.sh --install   there: unpack them into .deps/prefix/ (no root, no dpkg database)
#                                   and print the shell lines that point pkg-config and CMake at them:
#
#   eval "$(scripts/gpu_deps.sh --install)"
#   cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOE_CUDA=ON $MOE_DEPS_CMAKE_FLAGS
#
# The GPU machine (Ubuntu 24.04) has a compiler, CMake, CUDA, Eigen, nlohmann-json, fmt, spdlog,
# GoogleTest, Google Benchmark and Boost's headers, but not ZeroMQ, msgpack, PCRE2 or utf8proc, and no
# compiled Boost library: Debian's Boost 1.74 (headers and Boost.program_options) travels with the
# others, so moe-serve and the other programs build there too. Without it the build leaves out the
# programs (-DMOE_BUILD_TOOLS=OFF) and still builds every library, test suite and Google Benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
DEBS=.deps/debs
PREFIX="$PWD/.deps/prefix"

# The development packages, then every shared library libzmq5 and libkrb5-3 load beyond glibc and
# libstdc++ (apt-cache depends, followed down): linking a program against libzmq resolves them.
PACKAGES=(
  libzmq3-dev libzmq5 cppzmq-dev libmsgpack-cxx-dev
  libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3
  libutf8proc-dev libutf8proc2 libxxhash-dev
  libsodium23 libpgm-5.3-0 libnorm1 libbsd0 libmd0
  libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libcom-err2 libkeyutils1 libssl3
  libboost1.74-dev libboost-program-options1.74-dev libboost-program-options1.74.0
)

download() {
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  $sudo apt-get update -qq
  rm -rf "$DEBS"
  mkdir -p "$DEBS"
  (cd "$DEBS" && apt-get download -qq "${PACKAGES[@]}")
  echo "downloaded $(ls "$DEBS" | wc -l) packages ($(du -sh "$DEBS" | cut -f1)) into $DEBS" >&2
}

install() {
  if ! ls "$DEBS"/*.deb >/dev/null 2>&1; then
    echo "no .deb files in $DEBS: run scripts/gpu_deps.sh on a machine with apt first" >&2
    exit 1
  fi
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  for deb in "$DEBS"/*.deb; do dpkg -x "$deb" "$PREFIX"; done
  local lib="$PREFIX/usr/lib/x86_64-linux-gnu"
  # The .pc files name prefix=/usr (cppzmq's in quotes); every other path in them is relative to it.
  sed -i -E "s|^prefix=\"?/usr\"?\$|prefix=$PREFIX/usr|" "$lib"/pkgconfig/*.pc
  echo "unpacked $(ls "$DEBS"/*.deb | wc -l) packages into $PREFIX" >&2

  # Programs find the unpacked libraries, and libzmq its own dependencies, through an RPATH (not
  # RUNPATH: it also serves the libraries' dependencies), so nothing needs LD_LIBRARY_PATH and no
  # other program on the machine loads these copies.
  local flags="-DCMAKE_PREFIX_PATH=$PREFIX/usr -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags,-rpath,$lib"
  # What find_package(Boost COMPONENTS program_options) reads: the library's CMake package, the
  # carried 1.74 one first (the machine's own Boost, where it has one, is headers only).
  local boost_dir
  boost_dir=$(compgen -G "$lib/cmake/Boost-*" | head -1 || true)
  if [ -n "$boost_dir" ]; then
    flags="$flags -DBoost_DIR=$boost_dir"
  elif ! compgen -G "/usr/lib/x86_64-linux-gnu/cmake/boost_program_options-*" >/dev/null &&
     ! compgen -G "/usr/local/lib/cmake/boost_program_options-*" >/dev/null; then
    flags="$flags -DMOE_BUILD_TOOLS=OFF"
    echo "no Boost.program_options library: building without the programs (-DMOE_BUILD_TOOLS=OFF)" >&2
  fi
  echo "export PKG_CONFIG_PATH=\"$lib/pkgconfig\${PKG_CONFIG_PATH:+:\$PKG_CONFIG_PATH}\""
  echo "export MOE_DEPS_CMAKE_FLAGS=\"$flags\""
}

case "${1:-}" in
  "") download ;;
  --install) install ;;
  *)
    echo "usage: scripts/gpu_deps.sh [--install]" >&2
    exit 2
    ;;
esac
