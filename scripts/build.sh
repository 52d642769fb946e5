#!/usr/bin/env bash
# Configures and builds a CMake preset (default: release); further arguments go to the build
# (e.g. --target ixbench). Usage: scripts/build.sh [preset [cmake --build args...]]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
if [[ ! -f build/$preset/build.ninja ]]; then
  cmake --preset "$preset" >/dev/null
fi
cmake --build --preset "$preset" "${@:2}"
