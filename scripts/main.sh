#!/usr/bin/env bash
# The main job, until the orchestrator (`ixbench run`) lands: installs prerequisites, builds
# ixbench, starts the embedded engine simulator as an OpenAI-compatible server, drives a short
# fixed-length concurrency sweep against it with the benchmark client, shows the results table
# (measured through HTTP) next to the simulator's own virtual-time prediction, and ends with both
# in a results store and the static HTML report over it.
#
# Environment overrides: IXBENCH_MAIN_CONCS (default "1 4 16 64"), IXBENCH_MAIN_ISL (1024),
# IXBENCH_MAIN_OSL (128), IXBENCH_MAIN_OUT (out/main).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
if [[ ! -f build/release/build.ninja ]]; then cmake --preset release >/dev/null; fi
cmake --build --preset release --target ixbench >/dev/null
bin=$PWD/build/release/src/cli/ixbench

concs=${IXBENCH_MAIN_CONCS:-"1 4 16 64"}
isl=${IXBENCH_MAIN_ISL:-1024}
osl=${IXBENCH_MAIN_OSL:-128}
out=${IXBENCH_MAIN_OUT:-out/main}
engine=(--model deepseek-ai/DeepSeek-R1-0528 --hardware h200 --precision fp8 --framework sglang --tp 8)
# DeepSeek-R1's own tokenizer is not packaged (a benchmark machine has it in the Hugging Face cache);
# the packaged DeepSeek-V3 file differs from it only in two added tokens (<think>, </think>) that
# random prompts never hold. Set IXBENCH_MAIN_TOKENIZER to R1's tokenizer.json or folder to use it.
tokenizer=(--tokenizer "${IXBENCH_MAIN_TOKENIZER:-deepseek_v3}")
gpus=8

mkdir -p "$out"
rm -rf "$out"/measured "$out"/predicted "$out"/report "$out"/results.db* "$out"/aggregate.log
"$bin" --version

# The server prints "listening on http://127.0.0.1:<port>" once it accepts connections.
server_log="$out/server.log"
coproc SERVER { exec "$bin" sim serve "${engine[@]}" "${tokenizer[@]}" --port 0 2>"$server_log"; }
server_pid=$SERVER_PID
trap 'kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true' EXIT
if ! read -r -t 30 line <&"${SERVER[0]}"; then
  echo "main: the simulator did not start; its log:" >&2
  cat "$server_log" >&2
  exit 1
fi
url=${line#listening on }
echo "main: simulator (${engine[*]}) at $url"

for conc in $concs; do
  echo "main: concurrency $conc: $((5 * conc)) requests of ${isl}/${osl} tokens"
  "$bin" bench serve --base-url "$url" --backend vllm --model deepseek-ai/DeepSeek-R1-0528 "${tokenizer[@]}" \
    --random-input-len "$isl" --random-output-len "$osl" --max-concurrency "$conc" \
    --num-prompts $((5 * conc)) --num-warmups "$conc" --server-pid "$server_pid" --no-progress \
    --save-result --result-dir "$out/measured" --result-filename "measured_conc${conc}.json" >"$out/bench_conc${conc}.log" ||
    echo "main: concurrency $conc did not pass its checks (result kept, see the table and $out/bench_conc${conc}.log)"
done

"$bin" sim predict "${engine[@]}" --isl "$isl" --osl "$osl" --conc ${concs// /,} \
  --result-dir "$out/predicted" >/dev/null

echo
echo "Measured through HTTP (ixbench bench serve -> ixbench sim serve), ${isl}/${osl} tokens, DeepSeek-R1 FP8 on 8x H200 (simulated):"
"$bin" report table "$out"/measured/measured_conc*.json --gpus "$gpus"
echo
echo "Predicted in virtual time (ixbench sim predict, same engine):"
"$bin" report table "$out"/predicted/*.json --gpus "$gpus"

# Each result as InferenceX aggregates it (process_result.py's environment), then the results
# store (measured and predicted) and the static report over it. A simulated GPU draws no power:
# each record says so (power_valid 0), and the power step's notes go to aggregate.log.
aggregate() {  # raw-file agg-file
  RUNNER_TYPE=h200 FRAMEWORK=sglang PRECISION=fp8 SPEC_DECODING=none DISAGG=false MODEL_PREFIX=dsr1 \
    IMAGE=ixbench-sim TP=8 EP_SIZE=1 DP_ATTENTION=false ISL=$isl OSL=$osl \
    RESULT_FILENAME=$(basename "$1" .json) "$bin" aggregate --raw "$1" --out "$2" --quiet >/dev/null 2>>"$out/aggregate.log"
}
for raw in "$out"/measured/measured_conc*.json; do aggregate "$raw" "$out/measured/agg_$(basename "$raw")"; done
for raw in "$out"/predicted/*.json; do
  [[ $(basename "$raw") == agg_* ]] || aggregate "$raw" "$out/predicted/agg_$(basename "$raw")"
done
db="$out/results.db"
rm -f "$db" "$db"-wal "$db"-shm
"$bin" ingest "$out/measured" --db "$db" --run-id main-measured >/dev/null
"$bin" ingest "$out/predicted" --db "$db" --run-id main-predicted --kind predicted >/dev/null
echo
"$bin" report --db "$db" --out "$out/report" --title "ixbench main: DeepSeek-R1 FP8 on 8x H200 (simulated)"
echo "main: raw and agg results in $out/, the results store $db, the report $out/report/index.html"
