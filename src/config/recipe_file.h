// A data recipe (recipes/<name>.yaml) as a typed struct: how one engine's server is started for a
// matrix row. The templates are kept as text with their positions; src/run/ compiles and renders
// them (docs/recipes.md has the format and the variables templates see).
//
//   frameworks: [vllm, dynamo-vllm]   # the rows' `framework` values this recipe serves
//   bench-backend: vllm               # `bench serve --backend` for these servers
//   served-model: "{{ model }}"       # template: the name the benchmark sends (default the row's model)
//   tokenizer: ""                     # template: --tokenizer for bench/eval (default: the model's own)
//   health-path: /health              # readiness path on http://127.0.0.1:<port>
//   model-entry: required             # required | optional: must every row resolve a `models:` entry
//   command: |                        # template; its output is read as shell words (no expansion)
//     vllm serve {{ model }} --port {{ port }} {{ model_args }}
//   env:                              # NAME: template; an entry that renders empty is left out
//     VLLM_ENGINE_READY_TIMEOUT_S: "3600"
//   files:                            # path (relative to the job folder): content template
//     extra_llm_api_options.yaml: |   # written before the server starts (TensorRT-LLM's options)
//       enable_attention_dp: {{ dp_attn | lower }}
//   models:                           # per-model variants (run/recipe.h: the lookup rule)
//     dsv4-agentic:
//       args: "--kv-cache-dtype fp8"  # template: `model_args` in the command
//       env: {NAME: template}
//       vars: {key: scalar}           # `model_vars.key` in templates
//       num-spec-tokens: 3            # draft length for spec-decoding rows
//       golden-al: {file: dsv4_mtp.yaml, model: deepseek-v4-pro}
//       thinking: on                  # golden AL curve: on | off (default on; a row THINKING_MODE setting wins)
//
// Unknown keys, wrong types, duplicate keys and empty required fields are refused with
// "<file>:<line>:<column>: ..." naming the key and what is expected.
//
// Thread-safety: plain values and functions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "config/yaml_tree.h"

namespace ix::config {

// A template with where it starts in the recipe file (for "<file>:<line>: ..." render errors).
struct RecipeTemplate {
  std::string text;
  Mark mark;
};

struct RecipeEnvEntry {
  std::string name;
  RecipeTemplate value;
};

// A value of `vars:` (a YAML scalar resolved as PyYAML would).
struct RecipeFileEntry {
  std::string path;  // relative, no '..'
  RecipeTemplate content;
};

struct RecipeVar {
  enum class Kind { kString, kInt, kFloat, kBool } kind = Kind::kString;
  std::string name;
  std::string text;  // kString: the text; otherwise the value as written
  int64_t int_value = 0;
  double float_value = 0.0;
  bool bool_value = false;
};

struct GoldenAlSource {
  std::string file;   // a file name in golden_al_distribution/
  std::string model;  // the top-level key in that file
  Mark mark;
};

struct RecipeModelEntry {
  std::string key;
  Mark mark;
  std::optional<RecipeTemplate> args;
  std::vector<RecipeEnvEntry> env;
  std::vector<RecipeVar> vars;
  int64_t num_spec_tokens = 0;  // 0: not given
  std::optional<GoldenAlSource> golden_al;
  std::optional<bool> thinking;  // unset: on
};

struct RecipeFile {
  std::filesystem::path path;
  std::vector<std::string> frameworks;
  Mark frameworks_mark;
  std::string bench_backend;
  RecipeTemplate served_model{"{{ model }}", {}};
  RecipeTemplate tokenizer;
  std::string health_path = "/health";
  bool model_entry_required = false;
  RecipeTemplate command;
  std::vector<RecipeEnvEntry> env;
  std::vector<RecipeFileEntry> files;
  std::vector<RecipeModelEntry> models;
};

// Parses a recipe's YAML text; `source` names it in errors.
Result<RecipeFile> parse_recipe_file(std::string_view text, const std::filesystem::path& source);
Result<RecipeFile> load_recipe_file(const std::filesystem::path& path);

}  // namespace ix::config
