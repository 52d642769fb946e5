#!/usr/bin/env bash
# The main job: installs prerequisites, builds ixbench, and runs the demo benchmark repository
# (examples/demo: two models on two hardware types, fixed-length and agentic rows, one GSM8K eval
# row) end to end on the embedded engine simulator with `ixbench run`: every job's server started
# from its recipe, benchmarked over HTTP, evaluated, aggregated and stored (out/main/results.db),
# each fixed-length job also predicted by the simulator (--predict), ending with the summary table
# and the static report.
#
# GSM8K's test.jsonl comes from $IXBENCH_GSM8K_DIR, else ../shared/data/gsm8k beside the clone;
# without it the eval row is left out (--no-evals) and the script says so.
# Environment overrides: IXBENCH_MAIN_OUT (default out/main), IXBENCH_GSM8K_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
if [[ ! -f build/release/build.ninja ]]; then cmake --preset release >/dev/null; fi
cmake --build --preset release --target ixbench >/dev/null
bin=$PWD/build/release/src/cli/ixbench
out=$(realpath -m "${IXBENCH_MAIN_OUT:-out/main}")
"$bin" --version

gsm8k=${IXBENCH_GSM8K_DIR:-$(realpath -m ../shared/data/gsm8k)}
eval_flags=(--gsm8k-dir "$gsm8k" --eval-limit 200 --thresholds evals/thresholds.yaml)
if [[ ! -f $gsm8k/test.jsonl ]]; then
  echo "main: no GSM8K data at $gsm8k (set IXBENCH_GSM8K_DIR): the eval row is left out" >&2
  eval_flags=(--no-evals)
fi

mkdir -p "$out"
rm -rf "$out/runs" "$out"/results.db*
cd examples/demo
# The agentic row's duration is an hour in the matrix (InferenceX's); 30 s here.
"$bin" run --config-files configs/sim-master.yaml --runner-config configs/runners.yaml \
  --trace traces/demo_sessions.jsonl --agentic-duration 30 "${eval_flags[@]}" \
  --predict --out "$out/runs" --db "$out/results.db"
