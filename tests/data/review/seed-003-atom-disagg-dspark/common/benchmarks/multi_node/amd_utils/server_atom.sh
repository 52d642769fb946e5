#!/bin/bash
# ATOM disaggregated server launcher (cut down from InferenceX
# benchmarks/multi_node/amd_utils/server_atom.sh: the models_atom.yaml lookup).

MODEL_NAME="${MODEL_NAME:-}"

# =============================================================================
# Model-Specific Configuration from YAML
# =============================================================================
# Load model-specific config from YAML (single parse for all fields)
_yaml_tmp=$(mktemp)
python3 << PYEOF > "$_yaml_tmp"
import yaml
with open('${ATOM_WS_PATH}/models_atom.yaml') as f:
    m = yaml.safe_load(f).get('${MODEL_NAME}', {})
def sh(v): return v.replace("'", "'\\''")
print(f"MODEL_ENVS='{sh(m.get('env', ''))}'")
_tp_dp = m.get('tp_dp_flags', '')
print(f"PREFILL_MODEL_TP_DP_FLAGS='{sh(m.get('prefill_tp_dp_flags', _tp_dp))}'")
print(f"DECODE_MODEL_TP_DP_FLAGS='{sh(m.get('decode_tp_dp_flags', _tp_dp))}'")
print(f"MODEL_MTP_FLAGS='{sh(m.get('mtp_flags', ''))}'")
print(f"MODEL_KV_ARG='{sh(m.get('kv_cache_flags', ''))}'")
print(f"_YAML_BLOCK_SIZE='{sh(m.get('block_size', ''))}'")
PYEOF
# shellcheck source=/dev/null
source "$_yaml_tmp"

for kv in $MODEL_ENVS; do
    export "${kv?}"
done
