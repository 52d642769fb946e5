#!/usr/bin/env bash
# `sim predict` at the scale of real sweeps: wall time, CPU time and peak RSS of the largest
# fixed-length rows, one point at a time (target: each under 10 s and 1 GB on the 2-core machine),
# and with --all every fixed-length row of the shipped master files at all its concurrencies, two
# points at a time (one per core).
#
# Usage: bench/sim_predict_scale.sh IXBENCH OUT_DIR [--all]
#   e.g. bench/sim_predict_scale.sh build/release/src/cli/ixbench /tmp/scale --all
# Needs ../shared/data/inferencex (the master files) and python3 (row selection). Prints one line
# per point: name, conc, output tokens, wall s, user s, peak RSS MB; with --all then the whole
# set's wall time, its slowest point and its largest RSS (every point in OUT_DIR/all.tsv).
set -euo pipefail
ixbench=$(realpath "$1")
out=$2
all=${3:-}
cd "$(dirname "$0")/.."
shared=../shared/data/inferencex
mkdir -p "$out/rows"

"$ixbench" sweep full-sweep --config-files "$shared/nvidia-master.yaml" "$shared/amd-master.yaml" \
  --runner-config "$shared/runners.yaml" > "$out/master-rows.json"

# Rows: the GB200 Dynamo-TRT FP4 1k/8k row (an older master's, kept in data/calibration/) at conc
# 4096, the shipped GB300 row at conc 8192 and the shipped row with the most output tokens; with
# --all, every fixed-length (row, conc) of the shipped master files.
python3 - "$out" "$all" <<'EOF'
import json, sys
out, everything = sys.argv[1], sys.argv[2] == "--all"
def concs(row): return row["conc"] if isinstance(row["conc"], list) else [row["conc"]]
def write(name, row, conc):
    with open(f"{out}/rows/{name}.json", "w") as f: json.dump(row, f)
    return f"{name}\t{conc}"
history = json.load(open("data/calibration/dsr1-disagg-trt-history-rows.json"))
gb200 = next(r for r in history if r["runner"] == "gb200" and (r["isl"], r["osl"]) == (1024, 8192)
             and r.get("spec-decoding") == "none")
rows = [r for r in json.load(open(f"{out}/master-rows.json")) if r.get("isl") and r.get("osl")]
gb300 = next(r for r in rows if r["runner"] == "gb300" and 8192 in concs(r))
largest = max(rows, key=lambda r: max(concs(r)) * r["osl"])
points = [write("gb200-dynamo-trt-fp4-1k8k", gb200, 4096), write("gb300-8k1k", gb300, 8192),
          write("largest-master-row", largest, max(concs(largest)))]
with open(f"{out}/points.tsv", "w") as f: f.write("\n".join(points) + "\n")
if everything:
    with open(f"{out}/all-points.tsv", "w") as f:
        for i, row in enumerate(rows):
            for conc in concs(row): f.write(write(f"master-{i:04d}", row, conc) + "\n")
EOF

# point NAME CONC: one prediction under /usr/bin/time; prints its line.
point() {
  local name=$1 conc=$2 result="$out/$1_c$2.json" timing="$out/$1_c$2.time"
  if ! /usr/bin/time -f "%e %U %M" -o "$timing" "$ixbench" sim predict --row-file "$out/rows/$name.json" \
    --conc "$conc" > "$result" 2> "$result.err"; then
    printf '%-28s conc %6s refused: %s\n' "$name" "$conc" "$(head -c 160 "$result.err" | tr '\n' ' ')"
    return
  fi
  read -r wall user rss_kb < <(tail -1 "$timing")
  printf '%-28s conc %6s tokens %11s wall_s %7.1f user_s %7.1f rss_mb %6.0f\n' "$name" "$conc" \
    "$(grep -o '"total_output_tokens": [0-9]*' "$result" | head -1 | sed 's/.*: //')" "$wall" "$user" \
    "$((rss_kb / 1024))"
}
export -f point
export ixbench out

while read -r name conc; do point "$name" "$conc"; done < "$out/points.tsv"
[[ $all == --all ]] || exit 0

SECONDS=0
xargs -P 2 -L 1 bash -c 'point "$0" "$1"' < "$out/all-points.tsv" > "$out/all.tsv"
awk -v wall="$SECONDS" '
  / refused: / { refused++; next }
  { n++; user += $9; if ($7 > slow) { slow = $7; slow_line = $0 } if ($11 > rss) { rss = $11; rss_line = $0 } }
  END {
    printf "whole set: %d points predicted (%d refused) in %.0f s wall, %.0f s CPU, two at a time\n", n, refused, wall, user
    printf "slowest:  %s\nlargest:  %s\n", slow_line, rss_line
  }' "$out/all.tsv"
