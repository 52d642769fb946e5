#!/usr/bin/env bash
# Two ixbench builds' `bench serve` side by side, alternating A B B A on one server, so a change to
# the client is judged by a ratio measured in one run: output tokens/s against `sim serve
# --no-delay` (the client is the bottleneck) at the same --threads, and TTFT / ITL medians against
# a fixed schedule (50 ms / 10 ms: the error is the median minus that).
#
# Usage: [ROUNDS=N] bench/client_ab.sh IXBENCH_A IXBENCH_B OUT_DIR [CLIENT_CPUS SERVER_CPUS]
# ROUNDS (default 1) repeats the A B B A block at each concurrency; the last lines give the mean
# tokens/s of A and B and their ratio per concurrency.
set -euo pipefail
a=$1
b=$2
out=$3
client_cpus=${4:-0-3}
server_cpus=${5:-4-15}
mkdir -p "$out"
: > "$out/no_delay.txt"
source "$(dirname "$0")/lib.sh"
ulimit -n 65536 2>/dev/null || true
serve() { start_sim "$b" "$server_cpus" 18232 "$out/server.log" "$@"; }
run() {  # label binary conc threads output_len prompts
  taskset -c "$client_cpus" "$2" --log-level warn bench serve --base-url http://127.0.0.1:18232 \
    --model deepseek-ai/DeepSeek-R1-0528 --tokenizer deepseek_v3 --random-input-len 128 --random-output-len "$5" \
    --num-prompts "$6" --max-concurrency "$3" --num-warmups 0 --threads "$4" --no-progress --no-server-metrics \
    --save-result --result-dir "$out" --result-filename "$1.json" > /dev/null || true
  local f="$out/$1.json"
  printf '%-16s conc %5s threads %s out_tok/s %10.0f ttft_p50_ms %8.3f itl_p50_ms %7.3f\n' "$1" "$3" "$4" \
    "$(field "$f" output_throughput)" "$(field "$f" median_ttft_ms)" "$(field "$f" median_itl_ms)"
}
serve --no-delay
for conc in 1024 4096; do
  for _ in $(seq "${ROUNDS:-1}"); do
    for label in A B B A; do
      bin=$a; [[ $label == B ]] && bin=$b
      run "${label}_c${conc}_$RANDOM" "$bin" "$conc" 4 1000 $((2 * conc)) | tee -a "$out/no_delay.txt"
    done
  done
done
kill "$server"; wait "$server" 2>/dev/null || true
serve --fixed-ttft-ms 50 --fixed-itl-ms 10
for label in A B B A; do
  bin=$a; [[ $label == B ]] && bin=$b
  run "${label}_fixed_$RANDOM" "$bin" 1024 4 100 2048
done
kill "$server"; wait "$server" 2>/dev/null || true
awk '{split($1, id, "_"); sum[id[2] " " id[1]] += $7; n[id[2] " " id[1]]++}
  END {for (c in n) if (c ~ / A$/) {k = substr(c, 1, length(c) - 2);
    printf "%s mean out_tok/s A %.0f B %.0f B/A %.3f\n", k, sum[k " A"] / n[k " A"], sum[k " B"] / n[k " B"],
      (sum[k " B"] / n[k " B"]) / (sum[k " A"] / n[k " A"])}}' "$out/no_delay.txt"
