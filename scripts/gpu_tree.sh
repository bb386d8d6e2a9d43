#!/usr/bin/env bash
# A slimmer working tree for a GPU machine that takes a bounded copy of the checkout: tests/data (most
# of the tree's bytes) travels as one xz archive beside the .deb files of scripts/gpu_deps.sh.
#
#   scripts/gpu_tree.sh pack      here: tests/data into .deps/testdata.tar.xz, the folder moved aside
#                                 into .deps/testdata-aside (both git-ignored) with a link in its place, so
#                                 local builds and tests still find it; send the tree with .deps/debs and
#                                 .deps/testdata.tar.xz
#   scripts/gpu_tree.sh restore   here, after the copy was made: tests/data back in place
#   scripts/gpu_tree.sh unpack    there: tests/data from the archive, where the folder is missing
set -euo pipefail
cd "$(dirname "$0")/.."
ARCHIVE=.deps/testdata.tar.xz
ASIDE=.deps/testdata-aside

case "${1:-}" in
  pack)
    if [ -d "$ASIDE" ]; then
      echo "$ASIDE exists: run scripts/gpu_tree.sh restore first" >&2
      exit 1
    fi
    mkdir -p .deps
    # Rebuilt only when a fixture is newer than the archive (xz of 50 MB takes minutes on two cores).
    if [ ! -f "$ARCHIVE" ] || [ -n "$(find tests/data -newer "$ARCHIVE" -print -quit)" ]; then
      tar -cf - tests/data | xz -T0 -6 >"$ARCHIVE.tmp"
      mv "$ARCHIVE.tmp" "$ARCHIVE"
    fi
    mv tests/data "$ASIDE"
    ln -s ../"$ASIDE" tests/data
    echo "tests/data packed into $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1)) and moved aside" >&2
    ;;
  restore)
    if [ -d "$ASIDE" ] && [ -L tests/data ]; then rm tests/data && mv "$ASIDE" tests/data; fi
    git status --short tests/data | head -5
    ;;
  unpack)
    # The link the copy brought points at a folder that did not travel; files already there are kept.
    if [ -L tests/data ] && [ ! -e tests/data ]; then rm tests/data; fi
    tar -xJf "$ARCHIVE" --skip-old-files
    ;;
  *)
    echo "usage: scripts/gpu_tree.sh pack|restore|unpack" >&2
    exit 2
    ;;
esac
