#!/usr/bin/env bash
# /health and small streams while `sim serve` tokenizes big prompts: starts sim serve (DeepSeek-R1
# on 8x H200, packaged DeepSeek tokenizer, bench/lib.sh), sends one and then two 4 MB prompts with
# no spaces (the tokenizer's slowest input: one pre-tokenized word of 4 million letters) and,
# meanwhile, polls /health every 20 ms on fresh connections and runs small streaming completions
# (16 tokens) one after another. Prints, per phase, how long the big requests took and the /health
# and small-stream latencies (p50, max), and the server's RSS after.
#
# Usage: bench/health_under_big_prompt.sh [IXBENCH [CPUS [THREADS]]]
#   e.g. bench/health_under_big_prompt.sh /work/main/build/release/src/cli/ixbench 0-1 2
set -euo pipefail
bin=${1:-build/release/src/cli/ixbench}
cpus=${2:-0-1}
threads=${3:-2}
port=18241
log=$(mktemp)
source "$(dirname "$0")/lib.sh"
SIM_THREADS=$threads start_sim "$bin" "$cpus" "$port" "$log"
trap 'kill "$server" 2>/dev/null || true; rm -f "$log"' EXIT
python3 - "$port" "$server" <<'PY'
import http.client, json, statistics, sys, threading, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
big = json.dumps({"prompt": "a" * 4_000_000, "max_tokens": 1})
small = json.dumps({"prompt": "Hello there, how are you?", "max_tokens": 16, "ignore_eos": True, "stream": True})

def call(method, path, body=None):
    start = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request(method, path, body, {"Content-Type": "application/json"} if body else {})
    response = conn.getresponse()
    response.read()
    conn.close()
    return time.monotonic() - start, response.status

def rss_mb():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"): return int(line.split()[1]) / 1024
    return 0.0

def phase(name, big_requests):
    health, streams, bigs, done = [], [], [], threading.Event()
    def poll():
        while not done.is_set():
            health.append(call("GET", "/health")[0]); time.sleep(0.02)
    def stream():
        while not done.is_set(): streams.append(call("POST", "/v1/completions", small)[0])
    def send_big(): bigs.append(call("POST", "/v1/completions", big))
    pollers = [threading.Thread(target=poll), threading.Thread(target=stream)]
    for t in pollers: t.start()
    time.sleep(0.3)
    senders = [threading.Thread(target=send_big) for _ in range(big_requests)]
    for t in senders: t.start()
    for t in senders: t.join()
    if not big_requests: time.sleep(2)
    done.set()
    for t in pollers: t.join()
    ms = lambda xs, f: f(xs) * 1000 if xs else float("nan")
    big_text = " ".join(f"{s:.2f} s (HTTP {status})" for s, status in bigs) or "-"
    print(f"{name:<14} big: {big_text:<34} /health p50 {ms(health, statistics.median):7.1f} ms max "
          f"{ms(health, max):7.1f} ms (n={len(health)})  16-token stream p50 {ms(streams, statistics.median):7.1f} ms "
          f"max {ms(streams, max):7.1f} ms (n={len(streams)})  RSS after {rss_mb():.0f} MB")

phase("idle", 0)
phase("one 4 MB", 1)
phase("two 4 MB", 2)
PY
