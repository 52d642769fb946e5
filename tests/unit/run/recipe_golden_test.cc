// Every recipe rendered for every row kind, compared with tests/data/recipes/<case>.txt.
// IXBENCH_UPDATE_GOLDENS=1 rewrites the goldens from the current rendering (then review the diff).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "run/recipe.h"
#include "support/subprocess.h"
#include "support/temp_files.h"
#include "unit/run/recipe_rows.h"

namespace ix::run {
namespace {

using testing::agentic_row;
using testing::disagg_row;
using testing::fixed_row;
using testing::inputs_for;
using testing::spec_disagg_row;
using testing::spec_row;

struct GoldenCase {
  std::string name;  // tests/data/recipes/<name>.txt
  std::function<sweep::SweepRow()> row;
  std::string recipe;  // empty: the row's framework
  bool eval_run = false;
};

// What a golden holds: the command line and everything else the orchestrator reads.
std::string describe(const ServerLaunch& launch) {
  std::string out = "command: " + launch.command_line() + "\n";
  out += "health: " + launch.health_url + "\n";
  out += "base-url: " + launch.base_url + "\n";
  out += "bench-backend: " + launch.bench_backend + "\n";
  out += "served-model: " + launch.served_model + "\n";
  out += "tokenizer: " + launch.tokenizer + "\n";
  out += "forced-acceptance-length: " +
         (launch.forced_acceptance_length ? fmt::format("{}", *launch.forced_acceptance_length) : "none") + "\n";
  for (const auto& [path, content] : launch.files) out += "file " + path.string() + ":\n" + content;
  return out;
}

std::vector<GoldenCase> cases() {
  std::vector<GoldenCase> out = {
      {"sim_spec_eval", [] { return spec_row("sim"); }, "", true},
      {"sim_for_sglang_row", [] { return fixed_row("sglang"); }, "sim", false},
  };
  // Every framework: single-node fixed, spec-decoding, agentic, disaggregated, disaggregated MTP.
  for (const std::string framework : {"sim", "vllm", "sglang", "trt", "atom"}) {
    const std::map<std::string, std::string> disagg_forms = {{"sim", "sim"},
                                                             {"vllm", "dynamo-vllm"},
                                                             {"sglang", "sglang-disagg"},
                                                             {"trt", "dynamo-trt"},
                                                             {"atom", "atom-disagg"}};
    const std::string disagg = disagg_forms.at(framework);
    out.push_back({framework + "_fixed", [=] { return fixed_row(framework); }, "", false});
    out.push_back({framework + "_spec", [=] { return spec_row(framework); }, "", false});
    out.push_back({framework + "_agentic", [=] { return agentic_row(framework); }, "", false});
    out.push_back({framework + "_disagg", [=] { return disagg_row(disagg); }, "", false});
    out.push_back({framework + "_spec_disagg", [=] { return spec_disagg_row(disagg); }, "", false});
  }
  return out;
}

class RecipeGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(RecipeGolden, MatchesCheckedInRendering) {
  const GoldenCase& c = GetParam();
  auto book = load_recipe_book(ix::testing::source_path("recipes"));
  ASSERT_TRUE(book.has_value()) << book.error().message();
  const sweep::SweepRow row = c.row();
  RecipeInputs in = inputs_for(row);
  in.recipe = c.recipe;
  in.eval_run = c.eval_run;
  auto launch = render_server(*book, in);
  ASSERT_TRUE(launch.has_value()) << launch.error().message();
  const std::string rendered = describe(*launch);
  const std::string path = ix::testing::source_path("tests/data/recipes/" + c.name + ".txt");
  if (const char* update = std::getenv("IXBENCH_UPDATE_GOLDENS"); update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << rendered;
    GTEST_SKIP() << "rewrote " << path;
  }
  EXPECT_EQ(rendered, ix::testing::read_whole_file(path))
      << "the rendering of " << c.name
      << " changed; if intended, run with IXBENCH_UPDATE_GOLDENS=1 and review the diff";
}

INSTANTIATE_TEST_SUITE_P(Recipes, RecipeGolden, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) { return info.param.name; });

}  // namespace
}  // namespace ix::run
