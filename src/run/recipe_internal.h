// The loaded form of a recipe book (recipe.h's RecipeBook::State), shared by the loader and the
// renderer.
#pragma once

#include <boost/json/object.hpp>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/recipe_file.h"
#include "jinja/template.h"
#include "run/recipe.h"

namespace ix::run {

// A template compiled once, with where it starts in its recipe file.
struct CompiledTemplate {
  jinja::Template templ;
  config::Mark mark;
};

struct CompiledEnv {
  std::string name;
  CompiledTemplate value;
};

struct CompiledModelEntry {
  size_t index = 0;  // into YamlRecipe::file.models
  std::optional<CompiledTemplate> args;
  std::vector<CompiledEnv> env;
};

struct YamlRecipe {
  config::RecipeFile file;
  CompiledTemplate command;
  CompiledTemplate served_model;
  CompiledTemplate tokenizer;
  std::vector<CompiledEnv> env;
  std::vector<CompiledEnv> files;  // name: the relative path
  std::vector<CompiledModelEntry> models;
};

struct Recipe {
  std::string name;  // the file stem
  std::filesystem::path path;
  std::optional<YamlRecipe> yaml;  // unset: a shell script (InferenceX's environment contract)
};

struct RecipeBook::State {
  std::filesystem::path dir;
  std::vector<Recipe> recipes;                 // sorted by name
  std::map<std::string, size_t> by_framework;  // row framework -> index into recipes
  std::map<std::string, size_t> by_name;       // recipe name -> index into recipes
};

// What a row's model entry adds to the template context: model_key, model_vars, num_spec_tokens,
// thinking, golden_al, golden_al_minus_one (model_entry.cc).
struct EntryContext {
  const CompiledModelEntry* entry = nullptr;  // null: the recipe has none for this model (allowed)
  boost::json::object variables;
  std::optional<double> forced_al;
};
Result<EntryContext> entry_context(const Recipe& recipe, const RecipeInputs& in);

// A number as templates and environment variables get it: shortest text, noise below 1e-9 gone
// (2.49 - 1 is 1.49, not 1.4900000000000002).
std::string decimal(double value);

std::string scenario_name(const sweep::SweepRow& row);  // "fixed-seq-len" | "agentic-coding"

}  // namespace ix::run
