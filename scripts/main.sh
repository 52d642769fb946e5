#!/usr/bin/env bash
# The main job. Installs prerequisites, builds ixbench, and runs what exists of the pipeline.
# (Grows into: a sweep on the embedded simulator ending in a report, as the simulator and the
# benchmark client land.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/build.sh release >/dev/null
bin=build/release/src/cli/ixbench
"$bin" --version
"$bin" --help
