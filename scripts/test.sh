#!/usr/bin/env bash
# Installs prerequisites, builds, and runs every test (unit + integration + format check), then
# runs every option of every command once more against an AddressSanitizer + UBSan build of
# ixbench (tests/integration/cli_options_test.cc; cost in docs/performance.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/build.sh release
# The results-store tests run on SQLite and on a real PostgreSQL server: a throwaway local cluster.
eval "$(scripts/start-postgres.sh)"
# The Slurm client tests run on a real one-node cluster (as root or through sudo; it installs
# slurm-wlm and munge when missing).
# Without one they skip, saying so.
if slurm_env=$(scripts/start-slurm.sh); then
  eval "$slurm_env"
else
  echo "test: no local Slurm cluster (the reason is above); the Slurm tests skip" >&2
fi
ctest --preset release -j "$(nproc)" --output-on-failure
scripts/build.sh asan --target ixbench
asan_ixbench="$PWD/build/asan/src/cli/ixbench"
# The release-built tests drive the sanitized binary. Leaks are checked where LeakSanitizer works
# (it stops the process with ptrace, which some containers refuse).
detect_leaks=1
if ! ASAN_OPTIONS=detect_leaks=1 "$asan_ixbench" --version >/dev/null 2>&1; then
  echo "test: LeakSanitizer does not work here; the asan run goes on without leak checks" >&2
  detect_leaks=0
fi
ASAN_OPTIONS=detect_leaks=$detect_leaks:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  IXBENCH_BINARY_UNDER_TEST="$asan_ixbench" \
  ctest --preset release -R '^Cli(Options|Help|Listing)\.' --output-on-failure
