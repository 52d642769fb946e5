// The change scope's pieces that need no repository: recipe names for a config, and parsing only
// the configs a review needs out of a large master file.
#include "review/scope.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ix::review {
namespace {

const std::string kTwoConfigs =
    "# header comment\n"
    "dsr1-fp8-h200-sglang:\n"
    "  image: lmsysorg/sglang:v0.5.9-cu129\n"
    "  model: deepseek-ai/DeepSeek-R1-0528\n"
    "  model-prefix: dsr1\n"
    "  runner: h200\n"
    "  precision: fp8\n"
    "  framework: sglang\n"
    "  multinode: false\n"
    "  scenarios:\n"
    "    fixed-seq-len:\n"
    "    - isl: 8192\n"
    "      osl: 1024\n"
    "      search-space:\n"
    "      - { tp: 8, conc-start: 4, conc-end: 64, spec-decoding: mtp }\n"
    "      - { tp: 8, conc-start: 4, conc-end: 64 }\n"
    "\n"
    "qwen3.5-fp8-mi355x-atom:\n"
    "  image: rocm/atom-dev:nightly\n"
    "  model: Qwen/Qwen3.5-397B-A17B-FP8\n"
    "  model-prefix: \"qwen3.5\"\n"
    "  runner: mi355x\n"
    "  precision: fp8\n"
    "  framework: atom\n"
    "  multinode: false\n"
    "  scenarios:\n"
    "    fixed-seq-len:\n"
    "    - isl: 8192\n"
    "      osl: 1024\n"
    "      search-space:\n"
    "      - { tp: 8, conc-start: 4, conc-end: 64 }\n";

std::vector<config::MasterConfig> parse(const std::string& text) {
  std::vector<config::Diagnostic> diagnostics;
  auto configs = config::parse_master_configs(text, "configs/master.yaml", diagnostics);
  EXPECT_TRUE(diagnostics.empty()) << config::format_diagnostics(diagnostics);
  return configs;
}

TEST(ReviewScope, KeepConfigsBlanksTheOthersAndKeepsLineNumbers) {
  const std::string kept =
      keep_configs(kTwoConfigs, [](std::string_view, std::string_view prefix) { return prefix == "qwen3.5"; });
  EXPECT_EQ(std::count(kept.begin(), kept.end(), '\n'), std::count(kTwoConfigs.begin(), kTwoConfigs.end(), '\n'));
  const auto configs = parse(kept);
  ASSERT_EQ(configs.size(), 1u);
  EXPECT_EQ(configs[0].key, "qwen3.5-fp8-mi355x-atom");
  EXPECT_EQ(configs[0].location.line, 18);
  EXPECT_EQ(parse(keep_configs(kTwoConfigs,
                               [](std::string_view key, std::string_view) { return key == "dsr1-fp8-h200-sglang"; }))
                .size(),
            1u);
  const std::string none = keep_configs(kTwoConfigs, [](std::string_view, std::string_view) { return false; });
  EXPECT_EQ(none.find_first_not_of('\n'), std::string::npos);
}

TEST(ReviewScope, RecipeCandidatesFollowTheLaunchers) {
  const auto configs = parse(kTwoConfigs);
  ASSERT_EQ(configs.size(), 2u);
  EXPECT_EQ(recipe_candidates(configs[0]),
            (std::vector<std::string>{"benchmarks/single_node/fixed_seq_len/dsr1_fp8_h200_sglang.sh",
                                      "benchmarks/single_node/fixed_seq_len/dsr1_fp8_h200.sh",
                                      "benchmarks/single_node/fixed_seq_len/dsr1_fp8_h200_sglang_mtp.sh",
                                      "benchmarks/single_node/fixed_seq_len/dsr1_fp8_h200_mtp.sh"}));
  EXPECT_TRUE(has_draft(configs[0]));
  EXPECT_FALSE(has_draft(configs[1]));
  EXPECT_EQ(runner_gpu("cluster:mi355x-amds"), "mi355x");
  EXPECT_EQ(runner_gpu("h200"), "h200");
}

}  // namespace
}  // namespace ix::review
