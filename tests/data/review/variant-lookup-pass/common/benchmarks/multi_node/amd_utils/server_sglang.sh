#!/bin/bash
# SGLang disaggregated server launcher (cut down from InferenceX
# benchmarks/multi_node/amd_utils/server_sglang.sh: the models.yaml lookup).

MODEL_NAME="${MODEL_NAME:-}"
MODELS_YAML="${SGLANG_WS_PATH:-$(dirname "${BASH_SOURCE[0]}")}/models.yaml"

# Load model config via inline Python (PyYAML is available in SGLang containers)
eval "$(python3 -c "
import yaml, sys, os

config_path = '${MODELS_YAML}'
model_name = '${MODEL_NAME}'

# Select the models.yaml recipe variant by run type: agentic runs (IS_AGENTIC)
# use the '<model>-AgentX' entry, non-agentic disaggregated runs use '<model>-DI'.
# Fall back to the bare model name if the variant-specific key is absent.
is_agentic = '${IS_AGENTIC:-0}'.strip().lower() in ('1', 'true')
model_key = f'{model_name}-AgentX' if is_agentic else f'{model_name}-DI'

with open(config_path) as f:
    models = yaml.safe_load(f)

if model_key not in models:
    if model_name in models:
        model_key = model_name
    else:
        print(f'echo \"ERROR: Model {model_key} not in models.yaml\"; exit 1')
        sys.exit(0)

m = models[model_key]
print(f'echo \"Selected models.yaml entry: {model_key} (IS_AGENTIC={is_agentic})\"')
print(f'MODEL_BASE_FLAGS=\"{m.get(\"base_flags\", \"\")}\"')
print(f'MODEL_MTP_FLAGS=\"{m.get(\"mtp_flags\", \"\")}\"')
print(f'MODEL_DP_FLAGS=\"{m.get(\"dp_flags\", \"\")}\"')
")"

echo "Loaded model configuration for: $MODEL_NAME"
