# Shared by the bench/*.sh scripts (sourced): reading result fields and starting `sim serve`.

# field FILE KEY: the first number under "KEY" in a result file.
field() { grep -o "\"$2\": [-0-9.eE]*" "$1" | head -1 | sed 's/.*: //'; }

# start_sim IXBENCH CPUS PORT LOG [sim serve flags...]: starts DeepSeek-R1 on 8x H200 (simulated,
# packaged DeepSeek tokenizer) pinned to CPUS with $SIM_THREADS event-loop threads (default 12),
# waits until it listens, sets $server to its pid.
start_sim() {
  local bin=$1 cpus=$2 port=$3 log=$4
  shift 4
  taskset -c "$cpus" "$bin" sim serve --model deepseek-ai/DeepSeek-R1-0528 --hardware h200 --tp 8 \
    --tokenizer deepseek_v3 --port "$port" --threads "${SIM_THREADS:-12}" "$@" > "$log" 2>&1 &
  server=$!
  for _ in $(seq 100); do grep -q listening "$log" && return; sleep 0.1; done
  echo "server did not start" >&2
  cat "$log" >&2
  exit 1
}
