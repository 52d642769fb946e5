#!/usr/bin/env bash
# Fails (listing the files) when any tracked C++ file differs from .clang-format.
# Fix with: scripts/check-format.sh --fix
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.h' '*.cc' | while read -r f; do [[ -f $f ]] && echo "$f"; done)
if [[ ${#files[@]} -eq 0 ]]; then echo "format: no C++ files"; exit 0; fi
if [[ "${1:-}" == "--fix" ]]; then
  clang-format -i "${files[@]}"
  echo "format: reformatted ${#files[@]} files"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if [[ ${#bad[@]} -gt 0 ]]; then
  echo "format: ${#bad[@]} file(s) not clang-formatted: ${bad[*]}" >&2
  echo "format: run scripts/check-format.sh --fix" >&2
  exit 1
fi
echo "format: ${#files[@]} files clean"
