#!/usr/bin/env bash
# Installs prerequisites, builds, and runs every test (unit + integration + format check).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/build.sh release
ctest --preset release -j "$(nproc)" --output-on-failure
