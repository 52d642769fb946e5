#!/usr/bin/env bash
# GSM8K eval throughput: all 1319 test problems at concurrency 64 against `sim serve --no-delay
# --gsm8k-answers` (DeepSeek-R1 on 8x H200, simulated, packaged DeepSeek tokenizer; bench/lib.sh),
# timed end to end for `ixbench eval gsm8k` (prompts, requests, scoring, files) and, side by side
# on the same server, for a minimal Python client (64 threads + http.client, the same prompts and
# stops, streamed like ixbench's, the content collected, no scoring or files) — a floor for what
# a Python eval harness spends on the client side, not lm-eval itself. Prints both wall times,
# ixbench's peak RSS and the ratio. The server gets SERVER_CPUS (default 0) and SIM_THREADS event
# loops (default 1); with few cores it is the bottleneck of both runs.
#
# Usage: bench/eval_gsm8k.sh [IXBENCH [GSM8K_DIR [CPUS_SERVER [CPUS_CLIENT]]]]
#   e.g. bench/eval_gsm8k.sh build/release/src/cli/ixbench ../shared/data/gsm8k 0 1
set -euo pipefail
bin=${1:-build/release/src/cli/ixbench}
data=${2:-../shared/data/gsm8k}
server_cpus=${3:-0}
client_cpus=${4:-1}
port=18251
log=$(mktemp)
out=$(mktemp -d)
source "$(dirname "$0")/lib.sh"
SIM_THREADS=${SIM_THREADS:-1} start_sim "$bin" "$server_cpus" "$port" "$log" --no-delay --gsm8k-answers "$data"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$log" "$out"' EXIT

start=$(date +%s.%N)
/usr/bin/time -f "%M" -o "$out/rss" taskset -c "$client_cpus" "$bin" eval gsm8k --base-url "http://127.0.0.1:$port" \
  --model deepseek-ai/DeepSeek-R1-0528 --dataset-dir "$data" --concurrency 64 --no-progress \
  --output "$out/results.json" > "$out/summary"
ixbench_s=$(echo "$(date +%s.%N) - $start" | bc)
cat "$out/summary"

python3 - "$port" "$out/samples_gsm8k_conc64.jsonl" "$client_cpus" > "$out/python" <<'PY'
import http.client, json, os, sys, time
from concurrent.futures import ThreadPoolExecutor
port, samples, cpus = int(sys.argv[1]), sys.argv[2], sys.argv[3]
os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})
prompts = [json.loads(line)["prompt"] for line in open(samples)]
stops = ["</s>", "<|im_end|>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>"]
local = __import__("threading").local()
def ask(prompt):
    if not hasattr(local, "conn"):
        local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    body = json.dumps({"model": "deepseek-ai/DeepSeek-R1-0528", "messages": [{"role": "user", "content": prompt}],
                       "max_tokens": 12288, "temperature": 0, "stop": stops, "seed": 1234, "stream": True,
                       "stream_options": {"include_usage": True}})
    local.conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    text = []
    for line in local.conn.getresponse().read().decode().split("\n"):
        if line.startswith("data: ") and line != "data: [DONE]":
            for choice in json.loads(line[6:]).get("choices", []):
                text.append(choice.get("delta", {}).get("content") or "")
    return "".join(text)
start = time.monotonic()
with ThreadPoolExecutor(64) as pool:
    answers = list(pool.map(ask, prompts))
print(f"{time.monotonic() - start:.3f} {len(answers)}")
PY
read -r python_s python_n < "$out/python"
echo "ixbench eval gsm8k: ${ixbench_s} s for 1319 problems (peak RSS $(( $(cat "$out/rss") / 1024 )) MiB)"
echo "python client (${python_n} requests, no scoring): ${python_s} s"
echo "ratio python/ixbench: $(echo "scale=2; $python_s / $ixbench_s" | bc)"
