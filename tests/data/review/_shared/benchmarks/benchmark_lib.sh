#!/usr/bin/env bash

# Shared benchmarking utilities for InferenceX.
# Cut down for the review corpus from benchmarks/benchmark_lib.sh at InferenceX
# 843c6254f: the functions the recipes of these cases call, with every
# environment variable those functions read kept as it is upstream.

export PYTHONDONTWRITEBYTECODE=1
export PORT="${PORT:-8888}"

agentic_kv_offload_enabled() {
    if [[ -z "${KV_OFFLOADING+x}" || -z "$KV_OFFLOADING" ]]; then
        echo "Error: KV_OFFLOADING must be set for agentic benchmarks" >&2
        exit 1
    fi
    [[ "$KV_OFFLOADING" != "none" ]]
}

require_agentic_kv_offload_none() {
    if agentic_kv_offload_enabled; then
        echo "Error: expected KV_OFFLOADING=none, got '$KV_OFFLOADING'" >&2
        exit 1
    fi
    if [[ -n "${KV_OFFLOAD_BACKEND:-}" ]]; then
        echo "Error: KV_OFFLOAD_BACKEND must be empty when KV_OFFLOADING=none" >&2
        exit 1
    fi
}

wait_for_amd_gpu_clean() {
    local gpu_clean=false vram_max i
    for i in $(seq 1 90); do
        vram_max=$(rocm-smi --showmemuse 2>/dev/null \
            | grep -oE "GPU Memory Allocated \(VRAM%\): [0-9]+" \
            | awk '{if ($NF > m) m = $NF} END {print m+0}')
        if [ "${vram_max:-0}" -le 10 ]; then
            gpu_clean=true
            break
        fi
        sleep 10
    done
    [ "$gpu_clean" = "true" ]
}

stop_background_process_tree() {
    local pid="$1" label="$2" timeout="${3:-60}"
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 "$timeout"); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 1
    done
    echo "$label did not stop after ${timeout}s; killing" >&2
    kill -KILL "$pid" 2>/dev/null || true
}

check_env_vars() {
    local missing_vars=()

    for var_name in "$@"; do
        if [[ -z "${!var_name:-}" ]]; then
            missing_vars+=("$var_name")
        fi
    done

    if [[ ${#missing_vars[@]} -gt 0 ]]; then
        echo "Error: The following required environment variables are not set:"
        for var in "${missing_vars[@]}"; do
            echo "  - $var"
        done
        exit 1
    fi
}

wait_for_server_ready() {
    local port="" server_log="" server_pid=""

    while [[ $# -gt 0 ]]; do
        case $1 in
            --port) port="$2"; shift 2 ;;
            --server-log) server_log="$2"; shift 2 ;;
            --server-pid) server_pid="$2"; shift 2 ;;
            *) echo "Unknown parameter: $1"; return 1 ;;
        esac
    done

    until curl -sf "http://0.0.0.0:${port}/health" >/dev/null; do
        if ! kill -0 "$server_pid" 2>/dev/null; then
            echo "Server died; see $server_log" >&2
            return 1
        fi
        sleep 5
    done
}

# Persist an argv array in shell-replayable form.
write_command() {
    local output_file="$1"
    shift
    printf '%q ' "$@" | tee "$output_file"
    printf '\n' | tee -a "$output_file"
}

run_benchmark_serving() {
    python3 "$INFMAX_CONTAINER_WORKSPACE/utils/bench_serving/benchmark_serving.py" "$@"
}

run_eval() {
    local framework="${EVAL_FRAMEWORK:-lm-eval}"
    local eval_context_len="${EVAL_MAX_MODEL_LEN:-16384}"
    local concurrent_requests="${EVAL_CONCURRENT_REQUESTS:-${CONC:-64}}"
    local eval_limit="${EVAL_LIMIT:-}"
    echo "eval: framework=$framework context=$eval_context_len concurrency=$concurrent_requests limit=${eval_limit:-full} $*"
}

start_gpu_monitor() {
    local output="${GPU_METRICS_CSV:-/workspace/gpu_metrics.csv}"
    if command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi --query-gpu=timestamp,index,power.draw,temperature.gpu,clocks.sm --format=csv -l 1 > "$output" 2>&1 &
    else
        amd-smi metric -p -t -c -w 1 --csv > "$output" 2>&1 &
    fi
    GPU_MONITOR_PID=$!
}

stop_gpu_monitor() {
    [ -n "${GPU_MONITOR_PID:-}" ] && kill "$GPU_MONITOR_PID" 2>/dev/null || true
}

# Print the eval context length: the model's native context capped at the
# benchmark length the caller passes.
compute_eval_context_length() {
    local model="$1" benchmark_ctx="${2:-0}"
    local native
    native=$(python3 -c "from transformers import AutoConfig; print(AutoConfig.from_pretrained('$model', trust_remote_code=True).max_position_embeddings)")
    if [ "$benchmark_ctx" -gt 0 ] && [ "$benchmark_ctx" -lt "$native" ]; then
        echo "$benchmark_ctx"
    else
        echo "$native"
    fi
}

setup_eval_context() {
    EVAL_MAX_MODEL_LEN=$(compute_eval_context_length "$MODEL" "$((ISL + OSL + 256))")
    export EVAL_MAX_MODEL_LEN
}

append_lm_eval_summary() {
    local meta_json="${EVAL_RESULT_DIR:-/workspace/eval_results}/meta_env.json"
    echo "{\"infmax_model_prefix\": \"${MODEL_PREFIX:-unknown}\", \"conc\": ${CONC:-1}}" > "$meta_json"
}

# ------------------------------
# Agentic trace replay (AIPerf)
# ------------------------------

AIPERF_FAILED_REQUEST_THRESHOLD="${AIPERF_FAILED_REQUEST_THRESHOLD:-0.10}"
AIPERF_LIVE_FAILED_REQUEST_THRESHOLD="${AIPERF_LIVE_FAILED_REQUEST_THRESHOLD:-$AIPERF_FAILED_REQUEST_THRESHOLD}"
AIPERF_TRACE_IDLE_GAP_CAP_SECONDS="${AIPERF_TRACE_IDLE_GAP_CAP_SECONDS:-300}"

resolve_trace_source() {
    TRACE_SOURCE_FLAG="--public-dataset ${WEKA_LOADER_OVERRIDE:-semianalysis_cc_traces_weka_062126}"
}

install_agentic_deps() {
    if ! command -v aiperf >/dev/null 2>&1; then
        echo "ERROR: aiperf is not installed (utils/aiperf)" >&2
        return 1
    fi
}

build_replay_cmd() {
    local result_dir="$1"
    local duration="$DURATION"
    local warmup_requests_per_lane="${AIPERF_WARMUP_REQUESTS_PER_LANE:-10}"

    REPLAY_CMD="aiperf profile --scenario inferencex-agentx-mvp"
    REPLAY_CMD+=" --url ${AIPERF_SERVER_URL:-http://localhost:$PORT}"
    REPLAY_CMD+=" --endpoint /v1/chat/completions"
    REPLAY_CMD+=" --endpoint-type chat"
    REPLAY_CMD+=" --streaming"
    REPLAY_CMD+=" --model ${SERVED_MODEL_NAME:-$MODEL}"
    REPLAY_CMD+=" --tokenizer $MODEL"
    REPLAY_CMD+=" --concurrency $CONC"
    REPLAY_CMD+=" --benchmark-duration $duration"
    REPLAY_CMD+=" --failed-request-threshold $AIPERF_LIVE_FAILED_REQUEST_THRESHOLD"
    REPLAY_CMD+=" --warmup-requests-per-lane $warmup_requests_per_lane"
    REPLAY_CMD+=" --trace-idle-gap-cap-seconds $AIPERF_TRACE_IDLE_GAP_CAP_SECONDS"
    # Give long-context warmup requests up to 30 minutes to drain before
    # declaring warmup failed. Recipes whose saturation arms carry a larger
    # in-flight working set may override via AGENTIC_WARMUP_GRACE_PERIOD
    # (grace is a maximum wait, not a fixed sleep — drain exits when done).
    REPLAY_CMD+=" --warmup-grace-period ${AGENTIC_WARMUP_GRACE_PERIOD:-1800}"
    REPLAY_CMD+=" --use-server-token-count"
    if [ -n "${AIPERF_EXTRA_INPUTS:-}" ]; then
        REPLAY_CMD+=" --extra-inputs $AIPERF_EXTRA_INPUTS"
    fi
    if [ -n "${AIPERF_SERVER_METRICS_URLS:-}" ]; then
        REPLAY_CMD+=" --server-metrics ${AIPERF_SERVER_METRICS_URLS//,/ }"
    fi
    REPLAY_CMD+=" --output-artifact-dir $result_dir/aiperf_artifacts"
    REPLAY_CMD+=" $TRACE_SOURCE_FLAG"
}

validate_required_agentic_server_metrics() {
    local result_dir="$1"
    local required_prefix="${AIPERF_REQUIRED_SERVER_METRIC_PREFIX:-}"
    [ -z "$required_prefix" ] && return 0
    grep -q "^${required_prefix}" "$result_dir/aiperf_artifacts/server_metrics_export.csv"
}

run_agentic_replay_and_write_outputs() {
    local result_dir="$1"
    echo "$REPLAY_CMD" > "$result_dir/benchmark_command.txt"
    $REPLAY_CMD 2>&1 | tee "$result_dir/benchmark.log"
    validate_required_agentic_server_metrics "$result_dir"
    python3 -m utils.agentic.validation.validate_agentic_result \
        --result-dir "$result_dir" \
        --failed-request-threshold "$AIPERF_FAILED_REQUEST_THRESHOLD"
}
