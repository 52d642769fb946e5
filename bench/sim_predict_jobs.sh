#!/usr/bin/env bash
# `sim predict --jobs-from` over the shipped master files' whole fixed-length matrix (every row at
# all its concurrencies): wall time, CPU time and peak RSS of the whole set on all cores, and the
# speed-up of two workers over one on its first SUBSET points, both runs side by side.
#
# Usage: bench/sim_predict_jobs.sh IXBENCH OUT_DIR [SUBSET]
#   e.g. bench/sim_predict_jobs.sh build/release/src/cli/ixbench /tmp/jobs 200
# Needs ../shared/data/inferencex (the master files) and python3 (row selection).
set -euo pipefail
ixbench=$(realpath "$1")
out=$2
subset=${3:-200}
cd "$(dirname "$0")/.."
shared=../shared/data/inferencex
mkdir -p "$out"

"$ixbench" sweep full-sweep --config-files "$shared/nvidia-master.yaml" "$shared/amd-master.yaml" \
  --runner-config "$shared/runners.yaml" > "$out/master-rows.json"
python3 - "$out" "$subset" <<'PY'
import json, sys
out, subset = sys.argv[1], int(sys.argv[2])
rows = [r for r in json.load(open(f"{out}/master-rows.json")) if r.get("scenario-type") != "agentic-coding"]
json.dump(rows, open(f"{out}/fixed.json", "w"))
concs = lambda r: r["conc"] if isinstance(r["conc"], list) else [r["conc"]]
picked, n = [], 0
for r in rows:
    if n >= subset: break
    picked.append(r); n += len(concs(r))
json.dump(picked, open(f"{out}/subset.json", "w"))
print(f"fixed-length matrix: {len(rows)} rows, {sum(len(concs(r)) for r in rows)} points; "
      f"subset: {len(picked)} rows, {n} points")
PY

# run NAME MATRIX JOBS: one --jobs-from run under /usr/bin/time; prints its line.
run() {
  local name=$1 matrix=$2 jobs=$3
  rm -rf "$out/$name"
  /usr/bin/time -f "%e %U %M" -o "$out/$name.time" "$ixbench" sim predict --jobs-from "$matrix" \
    --out "$out/$name" --jobs "$jobs" > "$out/$name.table" 2> "$out/$name.err" || true
  read -r wall user rss_kb < <(tail -1 "$out/$name.time")
  printf '%-10s jobs %s  wall_s %7.1f  cpu_s %7.1f  peak_rss_mb %6.0f  %s\n' "$name" "$jobs" "$wall" "$user" \
    "$((rss_kb / 1024))" "$(tail -1 "$out/$name.table")"
  echo "$wall" > "$out/$name.wall"
}

run subset-1 "$out/subset.json" 1
run subset-2 "$out/subset.json" 2
awk -v one="$(cat "$out/subset-1.wall")" -v two="$(cat "$out/subset-2.wall")" \
  'BEGIN { printf "subset: two workers %.2fx the speed of one\n", one / two }'
run all "$out/fixed.json" 0
