#!/usr/bin/env bash
# Side by side in one run: the client's throughput by event-loop thread count (--threads 1, the
# auto default, 2, 4) at several concurrencies against `sim serve --no-delay` (the client is the
# bottleneck), and the self-check's invalid mark over identical repeats against a fixed schedule.
#
# Usage: bench/client_threads.sh IXBENCH OUT_DIR [CLIENT_CPUS SERVER_CPUS]
#   e.g. bench/client_threads.sh build/static/src/cli/ixbench out 0-3 4-15
# Writes OUT_DIR/c<conc>_t<threads>.json and OUT_DIR/repeat<N>.json and prints one line per run:
# concurrency, --threads, output tok/s, client threads used, busiest thread, lag p99, invalid.
set -euo pipefail
ixbench=$1
out=$2
client_cpus=${3:-0-3}
server_cpus=${4:-4-15}
mkdir -p "$out"
source "$(dirname "$0")/lib.sh"
ulimit -n 65536 2>/dev/null || true
bool_field() { grep -o "\"$2\": [a-z]*" "$1" | head -1 | sed 's/.*: //'; }
serve() { start_sim "$ixbench" "$server_cpus" 18231 "$out/server.log" "$@"; }
run() {  # name conc threads output_len prompts
  taskset -c "$client_cpus" "$ixbench" --log-level warn bench serve --base-url http://127.0.0.1:18231 \
    --model deepseek-ai/DeepSeek-R1-0528 --tokenizer deepseek_v3 --random-input-len 128 --random-output-len "$4" --num-prompts "$5" \
    --max-concurrency "$2" --num-warmups 0 --threads "$3" --no-progress --no-server-metrics --save-result \
    --result-dir "$out" --result-filename "$1.json" > /dev/null
  local f="$out/$1.json"
  printf '%-10s conc %5s threads %-4s out_tok/s %10.0f used %s busy %.2f lag_p99_ms %.3f send_p90_ms %.3f valid %s %s\n' \
    "$1" "$2" "$3" "$(field "$f" output_throughput)" "$(field "$f" worker_threads)" "$(field "$f" cpu_utilization)" \
    "$(field "$f" event_loop_lag_p99_ms)" "$(field "$f" send_delay_p90_ms)" "$(bool_field "$f" run_valid)" \
    "$(grep -o '"warning": "[^"]*"' "$f" | head -1)"
}
serve --no-delay
for conc in 256 1024 4096; do
  for threads in 1 0 2 4; do run "c${conc}_t${threads}" "$conc" "$threads" 1000 $((2 * conc)); done
done
kill "$server"; wait "$server" 2>/dev/null || true
serve --fixed-ttft-ms 50 --fixed-itl-ms 10
for n in 1 2 3 4 5; do run "repeat$n" 8192 1 200 8192; done
kill "$server"; wait "$server" 2>/dev/null || true
