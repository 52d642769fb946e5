// render_server: a matrix row + a recipe -> the server's argv, environment and readiness URL.
#include <fmt/format.h>

#include <boost/json.hpp>
#include <cmath>

#include "common/strings.h"
#include "config/golden_al.h"
#include "run/recipe.h"
#include "run/recipe_internal.h"
#include "sweep/row_env.h"

namespace ix::run {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;

std::unexpected<Error> invalid(std::string message) {
  return fail(ErrorCode::kInvalidArgument, std::move(message));
}

bj::object worker_json(const config::Worker& worker) {
  bj::object settings;
  for (const auto& setting : worker.additional_settings) {
    const size_t eq = setting.find('=');
    if (eq != std::string::npos) settings[setting.substr(0, eq)] = setting.substr(eq + 1);
  }
  bj::array additional;
  for (const auto& setting : worker.additional_settings) additional.emplace_back(setting);
  return bj::object{{"num_worker", worker.num_worker},
                    {"tp", worker.tp},
                    {"pp", worker.pp},
                    {"dcp_size", worker.dcp_size},
                    {"pcp_size", worker.pcp_size},
                    {"ep", worker.ep},
                    {"dp_attn", worker.dp_attn},
                    {"hardware", worker.hardware.value_or("")},
                    {"additional_settings", std::move(additional)},
                    {"settings", std::move(settings)}};
}

// The variables every template sees (docs/recipes.md lists them).
bj::object base_context(const RecipeInputs& in) {
  const sweep::SweepRow& row = *in.row;
  return bj::object{
      {"row", sweep::to_json(row)},
      {"model", row.model},
      {"model_prefix", row.model_prefix},
      {"precision", row.precision},
      {"framework", row.framework},
      {"image", row.image},
      {"runner_label", row.runner},
      {"runner", in.runner.empty() ? row.runner : in.runner},
      {"hardware", ascii_lower(in.hardware)},
      {"port", in.port},
      {"conc", in.conc},
      {"scenario", scenario_name(row)},
      {"agentic", row.is_agentic()},
      {"multinode", row.is_multinode()},
      {"disagg", row.disagg},
      {"isl", row.isl},
      {"osl", row.osl},
      {"max_model_len", row.is_agentic() ? 0 : row.max_model_len()},
      {"tp", row.tp},
      {"pp", row.pp},
      {"dcp_size", row.dcp_size},
      {"pcp_size", row.pcp_size},
      {"ep", row.ep},
      {"dp_attn", row.dp_attn},
      {"prefill", worker_json(row.prefill)},
      {"decode", worker_json(row.decode)},
      {"spec_decoding", config::spec_decoding_name(row.spec_decoding)},
      {"spec", row.spec_decoding != config::SpecDecoding::kNone},
      {"kv_offloading", config::kv_offloading_name(row.kv_offloading)},
      {"kv_offload_backend", row.kv_offload_backend ? row.kv_offload_backend->name : ""},
      {"total_cpu_dram_gb", row.total_cpu_dram_gb},
      {"total_cpu_dram_gib",
       decimal(std::round(static_cast<double>(row.total_cpu_dram_gb) * 1e9 / 1073741824.0 * 100) / 100)},
      {"duration", row.duration_s},
      {"exp_name", row.exp_name},
      {"eval_run", in.eval_run},
      {"evaluates", in.evaluates},
      {"gsm8k_dir", in.gsm8k_dir.string()},
      {"eval_only", row.eval_only},
      {"ixbench", in.ixbench.string()},
      {"job_dir", in.job_dir.string()},
      {"result_filename", sweep::result_file_stem(row, in.conc, in.runner.empty() ? row.runner : in.runner)}};
}

Result<const Recipe*> pick_recipe(const RecipeBook::State& state, const RecipeInputs& in) {
  const bool named = !in.recipe.empty();
  const auto& index = named ? state.by_name : state.by_framework;
  const std::string& key = named ? in.recipe : in.row->framework;
  if (auto it = index.find(key); it != index.end()) return &state.recipes[it->second];
  std::string known;
  for (const auto& [name, unused] : index) known += (known.empty() ? "" : ", ") + name;
  return fail(ErrorCode::kNotFound,
              fmt::format("{} {}: no recipe in {} {} (known: {}); add recipes/<name>.yaml listing it under "
                          "'frameworks:' (docs/recipes.md)",
                          named ? "recipe" : "framework", key, state.dir.string(),
                          named ? "has that name" : "serves it", known));
}

Result<void> check_inputs(const RecipeInputs& in) {
  if (in.row == nullptr) return fail(ErrorCode::kInternal, "render_server: RecipeInputs::row is null");
  if (in.port < 1 || in.port > 65535)
    return invalid(fmt::format("render_server: port {} is not in [1, 65535]", in.port));
  if (in.conc < 1) return invalid(fmt::format("render_server: concurrency {} must be >= 1", in.conc));
  if (in.hardware.empty())
    return invalid(
        fmt::format("render_server: no hardware given for runner '{}' (the runner label's hardware type, "
                    "e.g. h200)",
                    in.row->runner));
  return {};
}

// Renders one template to text; errors say which recipe file and where the template starts.
Result<std::string> render_text(const fs::path& path, const CompiledTemplate& templ, const jinja::Value& context) {
  auto text = templ.templ.render(context);
  if (!text)
    return invalid(fmt::format("{}: {} (fix the template in {}, starting at line {})", path.filename().string(),
                               text.error().message(), path.string(), templ.mark.line));
  return text;
}

Result<jinja::Value> to_value(const bj::object& context) {
  auto value = jinja::Value::from_json(bj::serialize(context), "the recipe context");
  if (!value) return fail(ErrorCode::kInternal, value.error().message());
  return value;
}

void add_env(std::vector<std::pair<std::string, std::string>>& env, std::string name, std::string value) {
  for (auto& [existing, old] : env) {
    if (existing == name) {
      old = std::move(value);
      return;
    }
  }
  env.emplace_back(std::move(name), std::move(value));
}

Result<void> render_env(const fs::path& path, const std::vector<CompiledEnv>& entries, const jinja::Value& context,
                        std::vector<std::pair<std::string, std::string>>& env) {
  for (const auto& entry : entries) {
    auto value = render_text(path, entry.value, context);
    if (!value) return std::unexpected(value.error());
    if (!value->empty()) add_env(env, entry.name, std::move(*value));
  }
  return {};
}

Result<ServerLaunch> render_yaml(const Recipe& recipe, const RecipeInputs& in) {
  const YamlRecipe& yaml = *recipe.yaml;
  bj::object context = base_context(in);
  auto resolved = entry_context(recipe, in);
  if (!resolved) return std::unexpected(resolved.error());
  for (auto& [key, value] : resolved->variables) context[key] = std::move(value);
  const CompiledModelEntry* entry = resolved->entry;
  ServerLaunch launch;
  launch.forced_acceptance_length = resolved->forced_al;
  std::string model_args;
  if (entry != nullptr && entry->args) {
    auto partial = to_value(context);
    if (!partial) return std::unexpected(partial.error());
    auto args = render_text(recipe.path, *entry->args, *partial);
    if (!args) return std::unexpected(args.error());
    model_args = std::move(*args);
  }
  context["model_args"] = model_args;
  auto value = to_value(context);
  if (!value) return std::unexpected(value.error());
  auto command = render_text(recipe.path, yaml.command, *value);
  if (!command) return std::unexpected(command.error());
  auto words = split_shell_words(*command);
  if (!words) return fail(words.error().with_context(recipe.path.string() + ": command"));
  if (words->empty())
    return invalid(fmt::format("{}: the command renders to nothing for this row", recipe.path.string()));
  launch.argv = std::move(*words);
  if (auto ok = render_env(recipe.path, yaml.env, *value, launch.env); !ok) return std::unexpected(ok.error());
  if (entry != nullptr) {
    if (auto ok = render_env(recipe.path, entry->env, *value, launch.env); !ok) return std::unexpected(ok.error());
  }
  if (!yaml.files.empty() && in.job_dir.empty())
    return invalid(fmt::format("{}: this recipe writes files into the job folder, and no job folder was given",
                               recipe.path.string()));
  for (const auto& file : yaml.files) {
    auto content = render_text(recipe.path, file.value, *value);
    if (!content) return std::unexpected(content.error());
    launch.files.emplace_back(in.job_dir / file.name, std::move(*content));
  }
  auto served = render_text(recipe.path, yaml.served_model, *value);
  if (!served) return std::unexpected(served.error());
  auto tokenizer = render_text(recipe.path, yaml.tokenizer, *value);
  if (!tokenizer) return std::unexpected(tokenizer.error());
  launch.served_model = std::string(strip(*served));
  launch.tokenizer = std::string(strip(*tokenizer));
  launch.bench_backend = yaml.file.bench_backend;
  launch.base_url = fmt::format("http://127.0.0.1:{}", in.port);
  launch.health_url = launch.base_url + yaml.file.health_path;
  return launch;
}

// The forced AL must reach the engine: a recipe that renders a spec-decoding row without it would
// measure the draft model's own acceptance instead of the golden one.
Result<void> check_forced(const Recipe& recipe, const ServerLaunch& launch) {
  if (!launch.forced_acceptance_length) return {};
  const std::string line = launch.command_line();
  const double al = *launch.forced_acceptance_length;
  if (line.find(decimal(al)) != std::string::npos || line.find(decimal(al - 1.0)) != std::string::npos) return {};
  return invalid(
      fmt::format("{}: the golden acceptance length {} is forced for this row but the rendered command and "
                  "environment never carry it; inject {{{{ golden_al }}}} (or {{{{ golden_al_minus_one }}}} "
                  "for TensorRT-LLM) the way this engine takes it (docs/recipes.md)",
                  recipe.path.string(), decimal(al)));
}

// A shell-script recipe: bash runs it with InferenceX's environment contract.
Result<ServerLaunch> render_script(const Recipe& recipe, const RecipeInputs& in) {
  auto vars = sweep::row_environment(sweep::to_json(*in.row));
  if (!vars) return fail(vars.error().with_context(recipe.path.string()));
  ServerLaunch launch;
  launch.argv = {"bash", recipe.path.string()};
  launch.env = std::move(vars->variables);
  const std::string runner = in.runner.empty() ? in.row->runner : in.runner;
  add_env(launch.env, "CONC", std::to_string(in.conc));
  add_env(launch.env, "PORT", std::to_string(in.port));
  add_env(launch.env, "RUNNER_NAME", runner);
  add_env(launch.env, "RANDOM_RANGE_RATIO", "0.8");
  if (!in.job_dir.empty()) add_env(launch.env, "RESULT_DIR", in.job_dir.string());
  if (in.eval_run) add_env(launch.env, "EVAL_ONLY", "true");
  auto get = [&](const char* name) -> std::optional<std::string> {
    for (const auto& [key, value] : launch.env) {
      if (key == name) return value;
    }
    return std::nullopt;
  };
  const std::string stem = sweep::result_file_stem(*in.row, in.conc, runner);
  add_env(launch.env, "RESULT_FILENAME", sweep::row_result_filename(vars->kind, get).value_or(stem));
  launch.bench_backend = "vllm";
  launch.served_model = in.row->model;
  launch.base_url = fmt::format("http://127.0.0.1:{}", in.port);
  launch.health_url = launch.base_url + "/health";
  return launch;
}

}  // namespace

std::string ServerLaunch::command_line() const {
  std::string out;
  for (const auto& [name, value] : env) out += name + "=" + shell_quote(value) + " ";
  for (const auto& word : argv) out += shell_quote(word) + " ";
  if (!out.empty()) out.pop_back();
  return out;
}

Result<ServerLaunch> render_server(const RecipeBook& book, const RecipeInputs& inputs) {
  if (book.names().empty())
    return fail(ErrorCode::kInvalidArgument, "render_server: the recipe book is empty (load it first)");
  if (auto ok = check_inputs(inputs); !ok) return std::unexpected(ok.error());
  auto recipe = pick_recipe(book.state(), inputs);
  if (!recipe) return std::unexpected(recipe.error());
  if (!(*recipe)->yaml) return render_script(**recipe, inputs);
  auto launch = render_yaml(**recipe, inputs);
  if (!launch) return std::unexpected(launch.error());
  if (auto ok = check_forced(**recipe, *launch); !ok) return std::unexpected(ok.error());
  return launch;
}

}  // namespace ix::run
