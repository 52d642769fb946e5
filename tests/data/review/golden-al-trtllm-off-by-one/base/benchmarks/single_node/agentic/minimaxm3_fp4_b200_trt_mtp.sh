#!/usr/bin/env bash
set -euo pipefail
set -x

# MiniMax-M3 NVFP4 B200 AgentX with EAGLE3-GQA. Throughput uses forced
# synthetic acceptance while EVAL_ONLY respects the verifier's actual result.
# DRAM KV offload uses TRT-LLM's native secondary-memory pool, with the fixed
# kv_cache_config.host_cache_size below.

source "$(dirname "$0")/../../benchmark_lib.sh"

export EVAL_FRAMEWORK="lm-eval"

check_env_vars MODEL TP CONC KV_OFFLOADING TOTAL_CPU_DRAM_GB RESULT_DIR DURATION EVAL_ONLY

DRAFT_MODEL="Inferact/MiniMax-M3-EAGLE3-GQA"
NUM_SPEC_TOKENS=3
# Golden AL for the GQA draft head: golden_al_distribution/minimaxm3_eagle3_gqa.yaml
# minimax-m3.thinking_on[3].

if [[ -n "${MODEL_PATH:-}" ]]; then
    if [[ ! -d "$MODEL_PATH" || -z "$(ls -A "$MODEL_PATH" 2>/dev/null)" ]]; then
        hf download "$MODEL" --local-dir "$MODEL_PATH"
    fi
    DRAFT_MODEL_PATH="/lustre/fsw/gharunners/models/${DRAFT_MODEL##*/}"
    if [[ ! -d "$DRAFT_MODEL_PATH" || -z "$(ls -A "$DRAFT_MODEL_PATH" 2>/dev/null)" ]]; then
        mkdir -p "$DRAFT_MODEL_PATH"
        hf download "$DRAFT_MODEL" --local-dir "$DRAFT_MODEL_PATH"
    fi
else
    hf download "$MODEL"
    export MODEL_PATH="$MODEL"
    hf download "$DRAFT_MODEL"
    DRAFT_MODEL_PATH="$DRAFT_MODEL"
fi

nvidia-smi
resolve_trace_source
install_agentic_deps

SERVER_LOG="$RESULT_DIR/server.log"
mkdir -p "$RESULT_DIR"

SERVER_PID=""
cleanup_agentic_services() {
    local exit_code=$?
    trap - EXIT INT TERM
    set +e
    stop_background_process_tree "$SERVER_PID" "TRTLLM server" 60
    exit "$exit_code"
}
trap cleanup_agentic_services EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

MAX_BATCH=$CONC
CAPTURE_BATCH_LIST=( $(seq 1 "$MAX_BATCH") )
CAPTURE_BATCH_LIST=$(printf "%s, " "${CAPTURE_BATCH_LIST[@]}")

if [[ $TP == 8 ]]; then
    mem_off=214748364800
else
    mem_off=268435456000
fi

cat << EOF > ser.yaml
max_seq_len: 1048576
max_num_tokens: 16384
max_batch_size: $MAX_BATCH
cuda_graph_config:
    enable_padding: true
    batch_sizes: [${CAPTURE_BATCH_LIST%, }]
moe_config:
    backend: TRTLLM
kv_cache_config:
    free_gpu_memory_fraction: 0.94
    enable_block_reuse: true
    tokens_per_block: 128
    dtype: fp8
    host_cache_size: $mem_off
speculative_config:
    decoding_type: Eagle3
    max_draft_len: 3
    speculative_model: $DRAFT_MODEL_PATH
enable_chunked_prefill: true
trust_remote_code: true
reasoning_parser: minimax_m3
stream_interval: 20
enable_attention_dp: false
EOF

export TLLM_LOG_LEVEL=INFO
export TRTLLM_SERVER_DISABLE_GC=1
export TRTLLM_WORKER_DISABLE_GC=1
export PYTHONNOUSERSITE=1
export TRTLLM_ENABLE_PDL=1
# Throughput pins the committed MiniMax-M3 EAGLE3-GQA golden AL to 2.78.
# The force knob overwrites the verifier's accepted-token count, so accuracy
# evals must leave it disabled.
if [ "$EVAL_ONLY" = "true" ]; then
    unset TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS
else
    export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.78
fi

TRTLLM_CMD=(
    mpirun -n 1 --oversubscribe --allow-run-as-root
    trtllm-serve "$MODEL_PATH"
    --tp_size "$TP"
    --host 0.0.0.0
    --port "$PORT"
    --chat_template "$MODEL_PATH/chat_template.jinja"
    --config ser.yaml
)
write_command "$RESULT_DIR/trtllm_command.txt" "${TRTLLM_CMD[@]}"
"${TRTLLM_CMD[@]}" > "$SERVER_LOG" 2>&1 &
SERVER_PID=$!
echo "Server PID: $SERVER_PID"

wait_for_server_ready --port "$PORT" --server-log "$SERVER_LOG" --server-pid "$SERVER_PID"
if [ "${EVAL_ONLY}" = "true" ]; then
    run_eval --port "$PORT"
else
    build_replay_cmd "$RESULT_DIR"
    run_agentic_replay_and_write_outputs "$RESULT_DIR"
fi
