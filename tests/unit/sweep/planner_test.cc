#include "sweep/planner.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/subprocess.h"

namespace ix::sweep {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The fixture (tests/data/config/valid-master.yaml) holds, in order:
//   tiny-fp8-h200-vllm: 8k1k {tp8 ep8 dpa, conc 4..100}, {tp4 mtp, conc [2, 32]}; 1k1k {tp8, 1..4}
//   tiny-fp4-b200-dynamo-disagg: multi-node 8k1k, conc [8, 32, 64]
//   tiny-fp8-b200-sglang-agentic: {tp8 kvnone [4, 16]}, {tp4 dram hicache mtp [8]} at 0.80
class Planner : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<config::Diagnostic> diagnostics;
    configs_.configs = config::parse_master_configs(
        read_all(ix::testing::source_path("tests/data/config/valid-master.yaml")), "valid-master.yaml", diagnostics);
    runners_ = config::parse_runner_config(read_all(ix::testing::source_path("tests/data/config/runners.yaml")),
                                           "runners.yaml", diagnostics);
    ASSERT_TRUE(diagnostics.empty()) << config::format_diagnostics(diagnostics);
    ASSERT_EQ(configs_.configs.size(), 3u);
  }

  std::vector<SweepRow> full(const SweepOptions& options) {
    auto rows = plan_full_sweep(configs_, runners_, options);
    EXPECT_TRUE(rows.has_value()) << (rows ? "" : rows.error().message());
    return rows ? *rows : std::vector<SweepRow>{};
  }
  std::vector<SweepRow> test(const SweepOptions& options) {
    auto rows = plan_test_config(configs_, runners_, options);
    EXPECT_TRUE(rows.has_value()) << (rows ? "" : rows.error().message());
    return rows ? *rows : std::vector<SweepRow>{};
  }

  config::MasterConfigSet configs_;
  config::RunnerConfig runners_;
};

std::vector<int64_t> concs(const std::vector<SweepRow>& rows, RowKind kind) {
  std::vector<int64_t> out;
  for (const auto& row : rows) {
    if (row.kind == kind) out.insert(out.end(), row.conc.begin(), row.conc.end());
  }
  return out;
}

std::vector<int64_t> eval_concs(const std::vector<SweepRow>& rows, RowKind kind) {
  std::vector<int64_t> out;
  for (const auto& row : rows) {
    if (row.kind == kind && row.run_eval.value_or(false)) out.push_back(row.conc.front());
  }
  return out;
}

TEST_F(Planner, FullSweepExpandsEveryKindInConfigOrder) {
  auto rows = full({});
  ASSERT_EQ(rows.size(), 15u);
  EXPECT_EQ(concs(rows, RowKind::kSingleNodeFixed), (std::vector<int64_t>{4, 8, 16, 32, 64, 100, 2, 32, 1, 2, 4}));
  EXPECT_EQ(rows[0].exp_name, "tiny_8k1k");
  EXPECT_EQ(rows[0].max_model_len(), 9472);
  EXPECT_EQ(rows[0].ep, 8);
  EXPECT_TRUE(rows[0].dp_attn);
  EXPECT_EQ(rows[6].ep, 1);  // ep omitted -> 1
  EXPECT_EQ(rows[6].spec_decoding, config::SpecDecoding::kMtp);
  EXPECT_EQ(rows[8].exp_name, "tiny_1k1k");
  const SweepRow& multi = rows[11];
  EXPECT_EQ(multi.kind, RowKind::kMultiNodeFixed);
  EXPECT_EQ(multi.conc, (std::vector<int64_t>{8, 32, 64}));
  EXPECT_EQ(multi.kv_p2p_transfer, "nixl");
  ASSERT_TRUE(multi.router.has_value());
  EXPECT_EQ(multi.router->name, "dynamo-router");
  EXPECT_TRUE(multi.disagg);
  EXPECT_EQ(rows[12].exp_name, "tiny_tp8_conc4_kvnone");
  EXPECT_EQ(rows[12].total_cpu_dram_gb, 0);
  EXPECT_EQ(rows[14].exp_name, "tiny_tp4_conc8_kvdram-hicache_spec-mtp");
  EXPECT_EQ(rows[14].total_cpu_dram_gb, 1199);  // min(3_095_781, 2_861_022) MiB * 0.80 * 4/8
  EXPECT_EQ(rows[14].duration_s, 3600);
}

TEST_F(Planner, DefaultEvalMarkingHighestAndMedianOf8k1kAtConc16Plus) {
  auto rows = full({});
  // Group tp8/dp-attn: eligible {16, 32, 64, 100} -> highest 100, median [4/2] = 64.
  // Group tp4/mtp: {32} -> 32. 1k1k rows are never marked.
  EXPECT_EQ(eval_concs(rows, RowKind::kSingleNodeFixed), (std::vector<int64_t>{64, 100, 32}));
  const SweepRow& multi = rows[11];
  EXPECT_TRUE(multi.run_eval.value_or(false));
  EXPECT_EQ(multi.eval_conc, 64);
  for (const auto& row : rows) {
    if (row.is_agentic()) {
      ASSERT_TRUE(row.run_eval.has_value());
      EXPECT_FALSE(*row.run_eval);  // agentic evals are opt-in
    }
    EXPECT_FALSE(row.eval_only);
  }
}

TEST_F(Planner, EvalsOnlyKeepsEvalRowsAndOptsInAgentic) {
  SweepOptions options;
  options.evals_only = true;
  auto rows = full(options);
  ASSERT_EQ(rows.size(), 5u);
  for (const auto& row : rows) {
    EXPECT_TRUE(row.eval_only);
    EXPECT_TRUE(row.run_eval.value_or(false));
  }
  EXPECT_EQ(rows[4].kind, RowKind::kSingleNodeAgentic);
  EXPECT_EQ(rows[4].conc.front(), 16);  // highest conc per (model, runner, framework, precision)
}

TEST_F(Planner, AllEvalsMarksEvery8k1kRowAndMergesMultiNodeTopologies) {
  SweepOptions options;
  options.all_evals = true;
  auto rows = full(options);
  ASSERT_EQ(rows.size(), 12u);  // 8 single-node 8k1k + 1 multi-node + 3 agentic; 1k1k dropped
  for (const auto& row : rows) EXPECT_TRUE(row.eval_only);
  const SweepRow& multi = rows[8];
  ASSERT_EQ(multi.kind, RowKind::kMultiNodeFixed);
  EXPECT_TRUE(multi.eval_all_concs);
  EXPECT_FALSE(multi.eval_conc.has_value());
}

TEST_F(Planner, NoEvalsLeavesAgenticRowsWithoutRunEval) {
  SweepOptions options;
  options.no_evals = true;
  auto rows = full(options);
  ASSERT_EQ(rows.size(), 15u);
  for (const auto& row : rows) {
    if (row.is_agentic()) {
      EXPECT_FALSE(row.run_eval.has_value());
    } else {
      EXPECT_EQ(row.run_eval, false);
    }
  }
}

TEST_F(Planner, MaxConcBelowStartCollapsesToMaxConc) {
  SweepOptions options;
  options.max_conc = 2;
  options.no_evals = true;
  auto rows = full(options);
  EXPECT_EQ(concs(rows, RowKind::kSingleNodeFixed), (std::vector<int64_t>{2, 2, 1, 2}));
  EXPECT_EQ(concs(rows, RowKind::kMultiNodeFixed), (std::vector<int64_t>{2}));
  EXPECT_TRUE(concs(rows, RowKind::kSingleNodeAgentic).empty());
}

TEST_F(Planner, MinConcRaisesStartAndDropsEntriesBelow) {
  SweepOptions options;
  options.min_conc = 32;
  auto rows = full(options);
  EXPECT_EQ(concs(rows, RowKind::kSingleNodeFixed), (std::vector<int64_t>{32, 64, 100, 32}));
  EXPECT_EQ(concs(rows, RowKind::kMultiNodeFixed), (std::vector<int64_t>{32, 64}));
  EXPECT_TRUE(concs(rows, RowKind::kSingleNodeAgentic).empty());
}

TEST_F(Planner, StepSizeChangesTheGeometry) {
  SweepOptions options;
  options.step_size = 3;
  options.seq_lens = {{8192, 1024}};
  options.single_node = true;
  options.scenario_types = {ScenarioType::kFixedSeqLen};
  auto rows = full(options);
  EXPECT_EQ(concs(rows, RowKind::kSingleNodeFixed), (std::vector<int64_t>{4, 12, 36, 100, 2, 32}));
}

TEST_F(Planner, MaxEpClampsAndMaxTpSkips) {
  SweepOptions options;
  options.max_ep = 4;
  options.scenario_types = {ScenarioType::kFixedSeqLen};
  options.single_node = true;
  auto rows = full(options);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].ep, 4);
  options.max_ep.reset();
  options.max_tp = 4;
  rows = full(options);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].tp, 4);
}

TEST_F(Planner, NodeTypeAndSeqLenAndScenarioFilters) {
  SweepOptions options;
  options.multi_node = true;
  EXPECT_EQ(full(options).size(), 1u);
  options = {};
  options.single_node = true;
  EXPECT_EQ(full(options).size(), 14u);
  options = {};
  options.seq_lens = {{1024, 1024}};
  EXPECT_EQ(concs(full(options), RowKind::kSingleNodeFixed), (std::vector<int64_t>{1, 2, 4}));
  options = {};
  options.scenario_types = {ScenarioType::kAgenticCoding};
  EXPECT_EQ(full(options).size(), 3u);
}

TEST_F(Planner, ModelPrefixMatchesTheConfigKeyAndOtherFiltersTheFields) {
  SweepOptions options;
  options.model_prefixes = {"tiny-fp8"};
  EXPECT_EQ(full(options).size(), 14u);
  options = {};
  options.precisions = {"fp4"};
  EXPECT_EQ(full(options).size(), 1u);
  options = {};
  options.frameworks = {"sglang", "vllm"};
  EXPECT_EQ(full(options).size(), 14u);
  options = {};
  options.runner_types = {"h200"};
  EXPECT_EQ(full(options).size(), 11u);
}

TEST_F(Planner, UnknownRunnerTypeIsAnErrorListingValidLabels) {
  SweepOptions options;
  options.runner_types = {"h999"};
  auto rows = plan_full_sweep(configs_, runners_, options);
  ASSERT_FALSE(rows.has_value());
  EXPECT_NE(rows.error().message().find("unknown runner type 'h999'"), std::string::npos);
  EXPECT_NE(rows.error().message().find("b200-multinode, cluster:b200-dgxc, h200"), std::string::npos);
}

TEST_F(Planner, BadFlagCombinationsAreRejected) {
  SweepOptions options;
  options.step_size = 1;
  EXPECT_FALSE(plan_full_sweep(configs_, runners_, options).has_value());
  options = {};
  options.min_conc = 8;
  options.max_conc = 4;
  EXPECT_FALSE(plan_full_sweep(configs_, runners_, options).has_value());
  options = {};
  options.no_evals = true;
  options.all_evals = true;
  EXPECT_FALSE(plan_full_sweep(configs_, runners_, options).has_value());
  options.all_evals = false;
  options.evals_only = true;
  EXPECT_FALSE(check_options(options, false).has_value());
}

TEST_F(Planner, RunnerNodeFilterGivesOneRowPerMatchingRunner) {
  SweepOptions options;
  options.runner_node_filter = "cw";
  options.no_evals = true;
  auto rows = full(options);
  ASSERT_EQ(rows.size(), 22u);  // only the h200 config has cw runners: 11 rows x 2
  EXPECT_EQ(rows[0].runner, "h200-cw_00");
  EXPECT_EQ(rows[1].runner, "h200-cw_01");
  EXPECT_EQ(rows[0].conc, rows[1].conc);  // concurrency outer, runner inner
}

TEST_F(Planner, TestConfigSelectsByGlobAndIntersectsConc) {
  SweepOptions options;
  options.config_keys = {"tiny-fp8-*"};
  options.conc = {32, 64, 16};
  auto rows = test(options);
  EXPECT_EQ(concs(rows, RowKind::kSingleNodeFixed), (std::vector<int64_t>{16, 32, 64, 32}));
  EXPECT_EQ(concs(rows, RowKind::kSingleNodeAgentic), (std::vector<int64_t>{16}));
  EXPECT_TRUE(concs(rows, RowKind::kMultiNodeFixed).empty());
}

TEST_F(Planner, TestConfigDeduplicatesKeepingFirstMention) {
  SweepOptions options;
  options.config_keys = {"tiny-fp4-b200-dynamo-disagg", "tiny*"};
  options.scenario_types = {ScenarioType::kFixedSeqLen};
  auto rows = test(options);
  ASSERT_EQ(rows.size(), 12u);
  EXPECT_EQ(rows[0].kind, RowKind::kMultiNodeFixed);
  EXPECT_EQ(rows[1].runner, "h200");
}

TEST_F(Planner, TestConfigErrorsNameThePattern) {
  SweepOptions options;
  options.config_keys = {"nothing-*"};
  auto rows = plan_test_config(configs_, runners_, options);
  ASSERT_FALSE(rows.has_value());
  EXPECT_NE(rows.error().message().find("pattern 'nothing-*' matched no config keys"), std::string::npos);
  options.config_keys = {"tiny-fp8-h200-sglang"};
  rows = plan_test_config(configs_, runners_, options);
  ASSERT_FALSE(rows.has_value());
  EXPECT_NE(rows.error().message().find("config key 'tiny-fp8-h200-sglang' not found"), std::string::npos);
}

TEST_F(Planner, TestConfigRunnerFilterIncludesTheLabelItself) {
  SweepOptions options;
  options.config_keys = {"tiny-fp8-b200-sglang-agentic"};
  options.runner_node_filter = "dgxc";
  auto rows = test(options);
  ASSERT_EQ(rows.size(), 9u);
  EXPECT_EQ(rows[0].runner, "cluster:b200-dgxc");
  EXPECT_EQ(rows[1].runner, "b200-dgxc_00");
  EXPECT_EQ(rows[2].runner, "b200-dgxc_01");
}

TEST_F(Planner, OutputIsDeterministic) {
  SweepOptions options;
  options.all_evals = true;
  EXPECT_EQ(render_matrix(full(options)), render_matrix(full(options)));
  EXPECT_EQ(render_matrix(full({})), render_matrix(full({})));
}

TEST(PlannerMultiNodeAgentic, OneConcurrencyPerAllocationAndTopologyExpName) {
  const std::string yaml =
      "mn-agentic:\n"
      "  image: img:1\n  model: org/m\n  model-prefix: m\n  precision: fp4\n  framework: dynamo-trt\n"
      "  runner: cluster:b200-dgxc\n  multinode: true\n  disagg: true\n  kv-p2p-transfer: nixl\n"
      "  scenarios:\n    agentic-coding:\n    - dram-utilization: 0.5\n      search-space:\n"
      "      - conc-list: [4, 32]\n        spec-decoding: mtp\n"
      "        kv-offloading: dram\n        kv-offload-backend: { name: native, version: \"1.0\" }\n"
      "        prefill: { num-worker: 1, tp: 4, ep: 4, dp-attn: true }\n"
      "        decode: { num-worker: 4, tp: 8, ep: 1, dp-attn: false }\n"
      "      - conc-list: [8]\n"
      "        prefill: { num-worker: 1, tp: 8, ep: 1, dp-attn: false }\n"
      "        decode: { num-worker: 0, tp: 8, ep: 1, dp-attn: false }\n";
  std::vector<config::Diagnostic> diagnostics;
  config::MasterConfigSet configs;
  configs.configs = config::parse_master_configs(yaml, "m.yaml", diagnostics);
  config::RunnerConfig runners;
  runners.labels.push_back({"cluster:b200-dgxc", {"b200-dgxc_00"}});
  runners.hardware.push_back({"cluster:b200-dgxc", {3'095'781, 8}});
  config::check_config_set(configs.configs, &runners, diagnostics);
  ASSERT_TRUE(diagnostics.empty()) << config::format_diagnostics(diagnostics);
  SweepOptions options;
  options.evals_only = true;
  auto all = plan_full_sweep(configs, runners, {});
  ASSERT_TRUE(all.has_value());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].conc, (std::vector<int64_t>{4}));
  EXPECT_EQ((*all)[0].exp_name, "m_p1x4ep4dpa_d4x8_conc4_kvdram-native");
  EXPECT_EQ((*all)[0].total_cpu_dram_gb, 749);  // 2_861_022 MiB * 0.5 * 4/8
  EXPECT_EQ((*all)[1].exp_name, "m_p1x4ep4dpa_d4x8_conc32_kvdram-native");
  EXPECT_EQ((*all)[2].exp_name, "m_p1x8_d0x8_conc8");  // no suffix without offloading
  EXPECT_EQ((*all)[2].total_cpu_dram_gb, 0);
  auto evals = plan_full_sweep(configs, runners, options);
  ASSERT_TRUE(evals.has_value());
  ASSERT_EQ(evals->size(), 1u);  // highest eligible conc (>= 16) per topology
  EXPECT_EQ((*evals)[0].conc, (std::vector<int64_t>{32}));
  EXPECT_EQ((*evals)[0].eval_conc, 32);
  SweepOptions all_evals;
  all_evals.all_evals = true;
  auto merged = plan_full_sweep(configs, runners, all_evals);
  ASSERT_TRUE(merged.has_value());
  ASSERT_EQ(merged->size(), 2u);
  EXPECT_EQ((*merged)[0].conc, (std::vector<int64_t>{4, 32}));
  EXPECT_EQ((*merged)[0].eval_conc, 32);
}

TEST(GlobMatch, FnmatchSemantics) {
  EXPECT_TRUE(glob_match("dsv4*", "dsv4-fp4-mi355x-atom"));
  EXPECT_FALSE(glob_match("dsv4*", "dsr1-fp8"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("a?c", "abc"));
  EXPECT_FALSE(glob_match("a?c", "ac"));
  EXPECT_TRUE(glob_match("*-mi3[0-9]5x-*", "dsv4-fp8-mi325x-vllm"));
  EXPECT_FALSE(glob_match("*-mi3[!2]5x-*", "dsv4-fp8-mi325x-vllm"));
  EXPECT_TRUE(glob_match("*vllm", "a-vllm-vllm"));
  EXPECT_TRUE(glob_match("a[b", "a[b"));  // unterminated class is literal
  EXPECT_FALSE(glob_match("abc", "abcd"));
}

TEST(ParseFlags, SeqLensAndScenarioTypes) {
  EXPECT_EQ(parse_seq_len("8k1k").value(), (std::pair<int64_t, int64_t>{8192, 1024}));
  EXPECT_FALSE(parse_seq_len("1k8k").has_value());
  EXPECT_EQ(parse_scenario_type("agentic-coding").value(), ScenarioType::kAgenticCoding);
  EXPECT_FALSE(parse_scenario_type("chat").has_value());
}

// Golden tests: the reference generator's exact outputs for the real master configs.
class ReferenceGolden : public ::testing::Test {
 protected:
  bool load(const std::vector<std::string>& files) {
    std::string runners = ix::testing::shared_path("data/inferencex/runners.yaml");
    if (runners.empty()) return false;
    std::vector<std::filesystem::path> paths;
    for (const auto& file : files) {
      std::string path = ix::testing::shared_path("data/inferencex/" + file);
      if (path.empty()) return false;
      paths.emplace_back(path);
    }
    auto loaded = config::load_configs(paths, runners);
    EXPECT_TRUE(loaded.has_value()) << (loaded ? "" : loaded.error().message());
    if (!loaded) return false;
    loaded_ = std::move(*loaded);
    return true;
  }
  config::LoadedConfigs loaded_;
};

TEST_F(ReferenceGolden, FullSweepAmdDsv4AtomMi355x) {
  std::string golden = ix::testing::shared_path("data/inferencex/examples/full-sweep_amd_dsv4_atom_mi355x.json");
  if (golden.empty() || !load({"amd-master.yaml"})) {
    GTEST_SKIP() << ix::testing::shared_missing_message("data/inferencex/examples/");
  }
  SweepOptions options;
  options.model_prefixes = {"dsv4"};
  options.frameworks = {"atom"};
  options.runner_types = {"mi355x"};
  auto rows = plan_full_sweep(loaded_.configs, loaded_.runners, options);
  ASSERT_TRUE(rows.has_value()) << rows.error().message();
  EXPECT_EQ(rows->size(), 37u);
  EXPECT_EQ(render_matrix(*rows) + "\n", read_all(golden));
}

TEST_F(ReferenceGolden, TestConfigDsv4StarConc4And8) {
  std::string golden = ix::testing::shared_path("data/inferencex/examples/test-config_dsv4-star_conc_4_8.json");
  if (golden.empty() || !load({"amd-master.yaml", "nvidia-master.yaml"})) {
    GTEST_SKIP() << ix::testing::shared_missing_message("data/inferencex/examples/");
  }
  SweepOptions options;
  options.config_keys = {"dsv4*"};
  options.conc = {4, 8};
  auto rows = plan_test_config(loaded_.configs, loaded_.runners, options);
  ASSERT_TRUE(rows.has_value()) << rows.error().message();
  EXPECT_EQ(rows->size(), 100u);
  EXPECT_EQ(render_matrix(*rows) + "\n", read_all(golden));
}

}  // namespace
}  // namespace ix::sweep
