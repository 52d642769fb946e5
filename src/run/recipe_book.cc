#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "run/recipe.h"
#include "run/recipe_internal.h"

namespace ix::run {
namespace {

namespace fs = std::filesystem;

std::string at(const fs::path& path, const config::Mark& mark) {
  return fmt::format("{}:{}:{}", path.string(), mark.line, mark.column);
}

Result<CompiledTemplate> compile(const fs::path& path, const config::RecipeTemplate& source, std::string_view what) {
  auto templ = jinja::Template::parse(
      source.text, fmt::format("{} ({} at {})", path.filename().string(), what, at(path, source.mark)));
  if (!templ) return std::unexpected(templ.error());
  return CompiledTemplate{std::move(*templ), source.mark};
}

Result<std::vector<CompiledEnv>> compile_env(const fs::path& path, const std::vector<config::RecipeEnvEntry>& env) {
  std::vector<CompiledEnv> out;
  for (const auto& entry : env) {
    auto value = compile(path, entry.value, "env " + entry.name);
    if (!value) return std::unexpected(value.error());
    out.push_back(CompiledEnv{entry.name, std::move(*value)});
  }
  return out;
}

Result<CompiledModelEntry> compile_entry(const fs::path& path, const config::RecipeModelEntry& entry, size_t index) {
  CompiledModelEntry out;
  out.index = index;
  if (entry.args) {
    auto args = compile(path, *entry.args, fmt::format("models: {} args", entry.key));
    if (!args) return std::unexpected(args.error());
    out.args = std::move(*args);
  }
  auto env = compile_env(path, entry.env);
  if (!env) return std::unexpected(env.error());
  out.env = std::move(*env);
  return out;
}

Result<YamlRecipe> compile_recipe(config::RecipeFile file) {
  const fs::path path = file.path;
  auto command = compile(path, file.command, "command");
  if (!command) return std::unexpected(command.error());
  auto served = compile(path, file.served_model, "served-model");
  if (!served) return std::unexpected(served.error());
  auto tokenizer = compile(path, file.tokenizer, "tokenizer");
  if (!tokenizer) return std::unexpected(tokenizer.error());
  auto env = compile_env(path, file.env);
  if (!env) return std::unexpected(env.error());
  std::vector<config::RecipeEnvEntry> file_templates;
  for (const auto& entry : file.files) file_templates.push_back({entry.path, entry.content});
  auto files = compile_env(path, file_templates);
  if (!files) return std::unexpected(files.error());
  YamlRecipe recipe{.file = {},
                    .command = std::move(*command),
                    .served_model = std::move(*served),
                    .tokenizer = std::move(*tokenizer),
                    .env = std::move(*env),
                    .files = std::move(*files),
                    .models = {}};
  for (size_t index = 0; index < file.models.size(); ++index) {
    auto entry = compile_entry(path, file.models[index], index);
    if (!entry) return std::unexpected(entry.error());
    recipe.models.push_back(std::move(*entry));
  }
  recipe.file = std::move(file);
  return recipe;
}

Result<Recipe> load_recipe(const fs::path& path) {
  Recipe recipe{.name = path.stem().string(), .path = path, .yaml = std::nullopt};
  if (path.extension() == ".sh") return recipe;
  auto file = config::load_recipe_file(path);
  if (!file) return std::unexpected(file.error());
  auto compiled = compile_recipe(std::move(*file));
  if (!compiled) return std::unexpected(compiled.error());
  recipe.yaml = std::move(*compiled);
  return recipe;
}

// Where a recipe claims a framework, for "claimed twice" errors.
std::string claim_site(const Recipe& recipe) {
  return recipe.yaml ? at(recipe.path, recipe.yaml->file.frameworks_mark)
                     : recipe.path.string() + " (a script: its name)";
}

Result<void> index_recipe(RecipeBook::State& state, size_t index) {
  const Recipe& recipe = state.recipes[index];
  if (auto [it, fresh] = state.by_name.emplace(recipe.name, index); !fresh)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("{} and {} are both recipe '{}': rename or remove one",
                            state.recipes[it->second].path.string(), recipe.path.string(), recipe.name));
  const std::vector<std::string> frameworks =
      recipe.yaml ? recipe.yaml->file.frameworks : std::vector<std::string>{recipe.name};
  for (const auto& framework : frameworks) {
    if (auto [it, fresh] = state.by_framework.emplace(framework, index); !fresh)
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("framework '{}' is claimed by {} and by {}: each framework has one recipe", framework,
                              claim_site(state.recipes[it->second]), claim_site(recipe)));
  }
  return {};
}

std::vector<fs::path> recipe_files(const fs::path& dir, std::error_code& ec) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const auto ext = entry.path().extension();
    if ((ext == ".yaml" || ext == ".sh") && entry.is_regular_file()) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

const std::filesystem::path& RecipeBook::dir() const {
  static const std::filesystem::path kNone;
  return state_ ? state_->dir : kNone;
}

std::vector<std::string> RecipeBook::names() const {
  std::vector<std::string> out;
  if (state_) {
    for (const auto& [name, index] : state_->by_name) out.push_back(name);
  }
  return out;
}

std::vector<std::string> RecipeBook::frameworks() const {
  std::vector<std::string> out;
  if (state_) {
    for (const auto& [name, index] : state_->by_framework) out.push_back(name);
  }
  return out;
}

Result<RecipeBook> load_recipe_book(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return fail(ErrorCode::kNotFound,
                fmt::format("recipes folder {} does not exist or is not a folder (give the folder "
                            "holding <framework>.yaml recipes, e.g. the project's recipes/)",
                            dir.string()));
  const auto files = recipe_files(dir, ec);
  if (ec) return fail(ErrorCode::kIo, fmt::format("cannot list recipes folder {}: {}", dir.string(), ec.message()));
  auto state = std::make_shared<RecipeBook::State>();
  state->dir = dir;
  for (const auto& path : files) {
    auto recipe = load_recipe(path);
    if (!recipe) return std::unexpected(recipe.error());
    state->recipes.push_back(std::move(*recipe));
    if (auto ok = index_recipe(*state, state->recipes.size() - 1); !ok) return std::unexpected(ok.error());
  }
  if (state->recipes.empty())
    return fail(ErrorCode::kNotFound,
                fmt::format("recipes folder {} holds no recipe (*.yaml or *.sh); see docs/recipes.md", dir.string()));
  return RecipeBook(std::move(state));
}

Result<std::filesystem::path> find_recipe_dir(const std::filesystem::path& given,
                                              const std::filesystem::path& executable) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("IXBENCH_RECIPES_DIR"); env != nullptr && *env != '\0') return fs::path(env);
  fs::path exe = executable;
  if (exe.empty()) {
    std::error_code ec;
    exe = fs::read_symlink("/proc/self/exe", ec);
  }
  std::vector<fs::path> tried;
  for (fs::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    for (const fs::path& candidate : {dir / "recipes", dir / "share" / "ixbench" / "recipes"}) {
      std::error_code ec;
      if (fs::is_regular_file(candidate / "sim.yaml", ec)) return candidate;
      tried.push_back(candidate);
    }
    if (dir == dir.parent_path()) break;
  }
  std::string list;
  for (const auto& path : tried) list += "\n  " + path.string();
  return fail(ErrorCode::kNotFound,
              fmt::format("no recipes folder found (give --recipes DIR or set IXBENCH_RECIPES_DIR); tried:{}", list));
}

}  // namespace ix::run
