#!/usr/bin/env bash

source "$(dirname "$0")/../../benchmark_lib.sh"

check_env_vars \
    MODEL \
    TP \
    CONC \
    ISL \
    OSL \
    RANDOM_RANGE_RATIO \
    RESULT_FILENAME \
    EP_SIZE \
    DP_ATTENTION

if [[ -n "$SLURM_JOB_ID" ]]; then
  echo "JOB $SLURM_JOB_ID running on $SLURMD_NODENAME"
fi

echo "TP: $TP, CONC: $CONC, ISL: $ISL, OSL: $OSL, EP_SIZE: $EP_SIZE, DP_ATTENTION: $DP_ATTENTION"

SERVER_LOG=/workspace/server.log

PARALLEL_ARGS=(-tp "$TP") #TP
CUDAGRAPH_SIZES='[1, 2, 4, 8, 16, 32, 48, 64, 128, 256, 512]'
if [ "$DP_ATTENTION" = "true" ]; then
    if [ "$EP_SIZE" -gt 1 ]; then #DP+EP
        PARALLEL_ARGS=(-tp "$TP" --enable-expert-parallel --enable-dp-attention )
    else #DPA+TP
        #DPA+TP+TBO (opt: TBO on for dp-attn cells at conc>=64, no per-scenario gate)
        if [ "$CONC" -ge 64 ]; then
            PARALLEL_ARGS=(-tp "$TP" --enable-dp-attention --enable-tbo)
            export GPU_MAX_HW_QUEUES=5
        else
            PARALLEL_ARGS=(-tp "$TP" --enable-dp-attention )
        fi
    fi
fi 

# max_req=conc for every dp-on cell (mandatory: dp-attention keeps a full KV pool
# per rank, so the large default max_num_seqs OOMs even at low conc like c16/c32)
# and for mid/high conc (conc>=64). dp-off low conc uses the ATOM default
# (dev: default is on-par or ~4% better at very low conc, e.g. c2).
if [ "$DP_ATTENTION" = "true" ] || [ "$CONC" -ge 64 ]; then
    PARALLEL_ARGS+=(--max-num-seqs "$CONC")
fi

BENCHMARK_MAX_MODEL_LEN="$MAX_MODEL_LEN"

if [ "${EVAL_ONLY}" = "true" ]; then
    EVAL_MAX_MODEL_LEN=$(compute_eval_context_length "$MODEL" "$BENCHMARK_MAX_MODEL_LEN")
    export EVAL_MAX_MODEL_LEN
fi
# The updated ATOM image still does not ship DeepSeek-V4 model registration:
# without this, ModelRunner fails on hf_config.architectures[0] =
# DeepseekV4ForCausalLM before AITER kernels are reached. Keep this overlay to
# ROCm/ATOM#650's DSv4 skeleton only; the sparse/indexer kernel implementation
# remains provided by ROCm/aiter#2998 below.
if [ "${ATOM_DSV4_PR650:-1}" = "1" ]; then
    ATOM_PR650_REPO=${ATOM_PR650_REPO:-https://github.com/ROCm/ATOM.git}
    ATOM_PR650_REF=${ATOM_PR650_REF:-pull/650/head}
    ATOM_PR650_SHA=${ATOM_PR650_SHA:-6a0ebb9730839b08287117a17b7d13007acd2d0b}
    ATOM_PR650_DIR=${ATOM_PR650_DIR:-/tmp/atom-dsv4-pr650}

    rm -rf "$ATOM_PR650_DIR"
    git clone --filter=blob:none "$ATOM_PR650_REPO" "$ATOM_PR650_DIR"
    (
        cd "$ATOM_PR650_DIR"
        git fetch --depth=1 origin "$ATOM_PR650_REF"
        fetched_sha="$(git rev-parse FETCH_HEAD)"
        if [ "$fetched_sha" != "$ATOM_PR650_SHA" ]; then
            echo "FATAL: $ATOM_PR650_REF resolved to $fetched_sha, expected $ATOM_PR650_SHA" >&2
            exit 1
        fi
        git checkout --force FETCH_HEAD

        python3 - <<'PYEOF'
from pathlib import Path

v4_model_types = '("deepseek_v4", "deepseek_v4_pro", "deepseek_v4_flash")'

path = Path("atom/model_engine/model_runner.py")
source = path.read_text()
old = '''    def is_deepseek_v4(self) -> bool:
        if not hasattr(self.hf_text_config, "model_type"):
            return False
        return self.hf_text_config.model_type == "deepseek_v4"
'''
new = f'''    def is_deepseek_v4(self) -> bool:
        model_type = getattr(self.hf_text_config, "model_type", None)
        architectures = getattr(self.hf_text_config, "architectures", []) or []
        return model_type in {v4_model_types} or any(
            "DeepseekV4" in arch for arch in architectures
        )
'''
if old in source:
    source = source.replace(old, new, 1)
path.write_text(source)

path = Path("atom/model_engine/llm_engine.py")
source = path.read_text()
if "deepseek_v4_pro" not in source:
    source = source.replace('''                "deepseek_v4",
''', '''                "deepseek_v4",
                "deepseek_v4_pro",
                "deepseek_v4_flash",
''', 1)
path.write_text(source)
PYEOF

        python3 -m pip install --no-deps --no-build-isolation --force-reinstall -e .
    )
else
    echo "WARN: ATOM_DSV4_PR650=0; using image-provided ATOM"
fi

# Keep the runtime overlay narrow: this benchmark uses the updated ATOM image
# from amd-master.yaml and only overlays ROCm/aiter#2998 for the DSv4 sparse
# MQA sink and Indexer top-k implementations until they are included in the
# image-provided AITER package.
if [ "${AITER_DSV4_PR2998:-1}" = "1" ]; then
    AITER_PR2998_REPO=${AITER_PR2998_REPO:-https://github.com/ROCm/aiter.git}
    AITER_PR2998_REF=${AITER_PR2998_REF:-pull/2998/head}
    AITER_PR2998_SHA=${AITER_PR2998_SHA:-aa0c5b6d97ffc6d4d11b8172dc848239f229c863}
    AITER_PR2998_DIR=${AITER_PR2998_DIR:-/tmp/aiter-dsv4-pr2998}

    rm -rf "$AITER_PR2998_DIR"
    git clone --filter=blob:none "$AITER_PR2998_REPO" "$AITER_PR2998_DIR"
    (
        cd "$AITER_PR2998_DIR"
        git fetch --depth=1 origin "$AITER_PR2998_REF"
        fetched_sha="$(git rev-parse FETCH_HEAD)"
        if [ "$fetched_sha" != "$AITER_PR2998_SHA" ]; then
            echo "FATAL: $AITER_PR2998_REF resolved to $fetched_sha, expected $AITER_PR2998_SHA" >&2
            exit 1
        fi
        git checkout --force FETCH_HEAD
        PREBUILD_KERNELS=${AITER_PREBUILD_KERNELS:-0} \
        python3 -m pip install --no-deps --no-build-isolation --force-reinstall -e .
    )
else
    echo "WARN: AITER_DSV4_PR2998=0; using image-provided AITER"
fi

# Start GPU monitoring (power, temperature, clocks every second)
start_gpu_monitor

set -x
export ATOM_DISABLE_MMAP=true
export AITER_BF16_FP8_MOE_BOUND=0
export ATOM_MOE_GU_ITLV=1
MEM_FRAC_STATIC=0.9

python3 -m atom.entrypoints.openai_server \
    --model $MODEL \
    --server-port $PORT \
    "${PARALLEL_ARGS[@]}" \
    --kv_cache_dtype fp8 \
    --trust-remote-code \
    --gpu-memory-utilization $MEM_FRAC_STATIC \
    --no-enable_prefix_caching \
    --cudagraph-capture-sizes "${CUDAGRAPH_SIZES}" \
    > "$SERVER_LOG" 2>&1 &

SERVER_PID=$!

# Wait for server to be ready
wait_for_server_ready --port "$PORT" --server-log "$SERVER_LOG" --server-pid "$SERVER_PID"

run_benchmark_serving \
    --model "$MODEL" \
    --port "$PORT" \
    --backend vllm \
    --input-len "$ISL" \
    --output-len "$OSL" \
    --random-range-ratio "$RANDOM_RANGE_RATIO" \
    --num-prompts "$((CONC * 10))" \
    --max-concurrency "$CONC" \
    --result-filename "$RESULT_FILENAME" \
    --result-dir /workspace/ \
    --trust-remote-code

# After throughput, run evaluation only if RUN_EVAL is true
if [ "${RUN_EVAL}" = "true" ]; then
    run_eval --framework lm-eval --port "$PORT"
    append_lm_eval_summary
fi

# Stop GPU monitoring
stop_gpu_monitor
set +x
