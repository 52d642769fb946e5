#include "config/master_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/subprocess.h"

namespace ix::config {
namespace {

// A single-node config whose fixed-seq-len search space is `entries` (YAML list items at 6 spaces).
// Line numbers: the first search-space item is on line 13.
std::string single_node(const std::string& entries, const std::string& extra_top = "") {
  return "cfg-fp8-h200-vllm:\n"     // 1
         "  image: img:1\n"         // 2
         "  model: org/model\n"     // 3
         "  model-prefix: m\n"      // 4
         "  precision: fp8\n"       // 5
         "  framework: vllm\n"      // 6
         "  runner: h200\n"         // 7
         "  multinode: false\n" +   // 8
         extra_top +                //
         "  scenarios:\n"           // 9
         "    fixed-seq-len:\n"     // 10
         "    - isl: 8192\n"        // 11
         "      osl: 1024\n"        // 12
         "      search-space:\n" +  // 13
         entries;
}

std::string multi_node(const std::string& entries, const std::string& extra_top = "") {
  return "mn-fp4-b200-dynamo:\n"
         "  image: img:1\n"
         "  model: org/model\n"
         "  model-prefix: m\n"
         "  precision: fp4\n"
         "  framework: dynamo-trt\n"
         "  runner: b200-multinode\n"
         "  multinode: true\n" +
         extra_top +
         "  scenarios:\n"
         "    fixed-seq-len:\n"
         "    - isl: 8192\n"
         "      osl: 1024\n"
         "      search-space:\n" +
         entries;
}

std::string agentic(const std::string& entries, const std::string& runner = "cluster:b200-dgxc",
                    const std::string& scenario_extra = "    - dram-utilization: 0.80\n") {
  return "ag-fp8-b200-sglang:\n"
         "  image: img:1\n"
         "  model: org/model\n"
         "  model-prefix: m\n"
         "  precision: fp8\n"
         "  framework: sglang\n"
         "  runner: " +
         runner +
         "\n"
         "  multinode: false\n"
         "  scenarios:\n"
         "    agentic-coding:\n" +
         scenario_extra + "      search-space:\n" + entries;
}

const std::string kWorkers =
    "        prefill: { num-worker: 1, tp: 4, ep: 4, dp-attn: true }\n"
    "        decode: { num-worker: 1, tp: 8, ep: 8, dp-attn: false }\n";

std::vector<Diagnostic> problems(const std::string& yaml) {
  std::vector<Diagnostic> diagnostics;
  parse_master_configs(yaml, "m.yaml", diagnostics);
  return diagnostics;
}

// Exactly one problem, on `field`, whose message contains `text`.
void expect_one(const std::string& yaml, const std::string& field, const std::string& text, int line = 0) {
  auto found = problems(yaml);
  ASSERT_EQ(found.size(), 1u) << format_diagnostics(found);
  EXPECT_EQ(found[0].field, field) << found[0].to_string();
  EXPECT_NE(found[0].message.find(text), std::string::npos) << found[0].to_string();
  EXPECT_EQ(found[0].where.file, "m.yaml");
  if (line > 0) {
    EXPECT_EQ(found[0].where.line, line) << found[0].to_string();
  }
  EXPECT_FALSE(found[0].config_key.empty());
}

const std::string kSs = "scenarios.fixed-seq-len[0].search-space[0].";

TEST(MasterConfig, ValidSingleNodeParsesIntoTypedStructs) {
  std::vector<Diagnostic> diagnostics;
  auto configs = parse_master_configs(
      single_node("      - { tp: 8, ep: 4, dp-attn: true, conc-start: 4, conc-end: 64, spec-decoding: mtp }\n"
                  "      - { tp: 4, dcp-size: 2, conc-list: [1, 2] }\n"),
      "m.yaml", diagnostics);
  ASSERT_TRUE(diagnostics.empty()) << format_diagnostics(diagnostics);
  ASSERT_EQ(configs.size(), 1u);
  const MasterConfig& config = configs[0];
  EXPECT_EQ(config.key, "cfg-fp8-h200-vllm");
  EXPECT_EQ(config.location.line, 1);
  EXPECT_EQ(config.image, "img:1");
  EXPECT_FALSE(config.multinode);
  ASSERT_EQ(config.fixed_seq_len.size(), 1u);
  EXPECT_EQ(config.fixed_seq_len[0].isl, 8192);
  const auto& space = config.fixed_seq_len[0].search_space;
  ASSERT_EQ(space.size(), 2u);
  EXPECT_EQ(space[0].tp, 8);
  EXPECT_EQ(space[0].ep, 4);
  EXPECT_EQ(space[0].dp_attn, true);
  EXPECT_EQ(space[0].spec_decoding, SpecDecoding::kMtp);
  EXPECT_FALSE(space[0].conc.is_list);
  EXPECT_EQ(space[0].conc.start, 4);
  EXPECT_EQ(space[0].conc.end, 64);
  EXPECT_EQ(space[0].location.line, 14);
  EXPECT_EQ(space[1].dcp_size, 2);
  EXPECT_FALSE(space[1].ep.has_value());
  EXPECT_EQ(space[1].conc.list, (std::vector<int64_t>{1, 2}));
}

TEST(MasterConfig, UnknownTopLevelField) {
  expect_one(single_node("      - { tp: 8, conc-list: [1] }\n", "  imgae: x\n"), "imgae", "unknown field 'imgae'", 9);
}

TEST(MasterConfig, UnknownSearchSpaceField) {
  expect_one(single_node("      - { tp: 8, conc-list: [1], concurrency: 4 }\n"), kSs + "concurrency",
             "unknown field 'concurrency'", 14);
}

TEST(MasterConfig, WrongTypes) {
  expect_one(single_node("      - { tp: eight, conc-list: [1] }\n"), kSs + "tp", "expected an integer", 14);
  expect_one(single_node("      - { tp: 8, dp-attn: maybe, conc-list: [1] }\n"), kSs + "dp-attn",
             "expected true or false");
  expect_one(single_node("      - { tp: 8, conc-list: 4 }\n"), kSs + "conc-list", "expected a list");
  expect_one(single_node("      - { tp: 8, conc-list: [1] }\n", "  router: { name: r, version: 1.3 }\n"),
             "router.version", "quote it");
  expect_one(single_node("      - { tp: 8, spec-decoding: eagle, conc-list: [1] }\n"), kSs + "spec-decoding",
             "mtp, draft_model, none");
  std::string yaml = single_node("      - { tp: 8, conc-list: [1] }\n");
  yaml.replace(yaml.find("multinode: false"), 16, "multinode: maybe");
  expect_one(yaml, "multinode", "expected true or false", 8);
}

TEST(MasterConfig, ConcurrencyRules) {
  expect_one(single_node("      - { tp: 8, conc-start: 64, conc-end: 4 }\n"), kSs + "conc-start",
             "'conc-start' (64) must be <= 'conc-end' (4)", 14);
  expect_one(single_node("      - { tp: 8, conc-list: [4], conc-start: 4, conc-end: 8 }\n"), kSs + "conc-list",
             "either a list or a range");
  expect_one(single_node("      - { tp: 8 }\n"), "scenarios.fixed-seq-len[0].search-space[0]", "missing concurrency");
  expect_one(single_node("      - { tp: 8, conc-start: 4 }\n"), kSs + "conc-end", "must be given together");
  expect_one(single_node("      - { tp: 8, conc-start: 0, conc-end: 4 }\n"), kSs + "conc-start", ">= 1");
  expect_one(single_node("      - { tp: 8, conc-list: [4, 0] }\n"), kSs + "conc-list[1]", "integers > 0");
  expect_one(single_node("      - { tp: 8, conc-list: [] }\n"), kSs + "conc-list", "at least one");
  expect_one(single_node("      - { tp: 8, conc-list: }\n"), kSs + "conc-list", "at least one");
}

TEST(MasterConfig, IntegersAboveTheBoundAreRefusedInListsToo) {
  // conc-list entries escaped the 10^9 bound that isl and conc-end have (2e9 passed validate).
  expect_one(single_node("      - { tp: 8, conc-list: [4, 2000000000] }\n"), kSs + "conc-list[1]", "<= 1000000000", 14);
  EXPECT_TRUE(problems(single_node("      - { tp: 8, conc-list: [1000000000] }\n")).empty());
  expect_one(single_node("      - { tp: 8, conc-start: 4, conc-end: 2000000000 }\n"), kSs + "conc-end", "<= 1000000000",
             14);
  expect_one(single_node("      - { tp: 65537, conc-list: [1] }\n"), kSs + "tp", "<= 65536", 14);
}

TEST(MasterConfig, DcpMustDivideTp) {
  expect_one(single_node("      - { tp: 6, dcp-size: 4, conc-list: [1] }\n"), kSs + "dcp-size",
             "'tp' (6) must be divisible by 'dcp-size' (4)", 14);
  expect_one(multi_node("      - conc-list: [1]\n"
                        "        prefill: { num-worker: 1, tp: 4, dcp-size: 3, ep: 1, dp-attn: false }\n"
                        "        decode: { num-worker: 1, tp: 8, ep: 8, dp-attn: false }\n",
                        "  kv-p2p-transfer: nixl\n"),
             kSs + "prefill.dcp-size", "must be divisible");
}

TEST(MasterConfig, DuplicateKeysInsideOneFile) {
  expect_one(single_node("      - { tp: 8, tp: 4, conc-list: [1] }\n"), kSs + "tp", "duplicate key 'tp'", 14);
  std::string twice = single_node("      - { tp: 8, conc-list: [1] }\n");
  auto found = problems(twice + twice);
  ASSERT_EQ(found.size(), 1u) << format_diagnostics(found);
  EXPECT_NE(found[0].message.find("duplicate config key 'cfg-fp8-h200-vllm'"), std::string::npos);
  EXPECT_EQ(found[0].where.line, 15);
}

TEST(MasterConfig, MissingRequiredFields) {
  std::string yaml = single_node("      - { tp: 8, conc-list: [1] }\n");
  yaml.erase(yaml.find("  image: img:1\n"), std::string("  image: img:1\n").size());
  expect_one(yaml, "image", "missing required field 'image'");
  expect_one(single_node("      - { conc-list: [1] }\n"), kSs + "tp", "missing required field 'tp'");
}

TEST(MasterConfig, ScenariosNeedAtLeastOneType) {
  std::string yaml =
      "c:\n  image: i\n  model: m\n  model-prefix: m\n  precision: fp8\n  framework: vllm\n  runner: h200\n"
      "  multinode: false\n  scenarios: {}\n";
  expect_one(yaml, "scenarios", "at least one scenario type");
}

TEST(MasterConfig, StarInConfigKeyIsRejected) {
  std::string yaml = single_node("      - { tp: 8, conc-list: [1] }\n");
  yaml.replace(0, std::string("cfg-fp8-h200-vllm").size(), "cfg*");
  expect_one(yaml, "", "may not contain '*'", 1);
}

TEST(MasterConfig, DisaggRules) {
  expect_one(single_node("      - { tp: 8, conc-list: [1] }\n", "  disagg: true\n"), "disagg",
             "only valid with `multinode: true`");
  expect_one(multi_node("      - conc-list: [1]\n" + kWorkers, "  disagg: true\n"), kSs + "kv-p2p-transfer",
             "requires 'kv-p2p-transfer'");
  EXPECT_TRUE(
      problems(multi_node("      - conc-list: [1]\n        kv-p2p-transfer: nixl\n" + kWorkers, "  disagg: true\n"))
          .empty());
  EXPECT_TRUE(
      problems(multi_node("      - conc-list: [1]\n" + kWorkers, "  disagg: true\n  kv-p2p-transfer: mori\n")).empty());
}

TEST(MasterConfig, ComponentScopeRules) {
  expect_one(multi_node("      - conc-list: [1]\n        router: { name: r, version: \"1\" }\n" + kWorkers,
                        "  router: { name: r, version: \"1\" }\n"),
             kSs + "router", "declared at the top level");
  expect_one(
      multi_node("      - conc-list: [1]\n        kv-p2p-transfer: nixl\n" + kWorkers, "  kv-p2p-transfer: nixl\n"),
      kSs + "kv-p2p-transfer", "declared at the top level");
  expect_one(single_node("      - { tp: 8, conc-list: [1] }\n", "  kv-p2p-transfer: nixl\n"), "kv-p2p-transfer",
             "only valid when `multinode: true`");
  expect_one(single_node("      - { tp: 8, conc-list: [1], kv-p2p-transfer: nixl }\n"), kSs + "kv-p2p-transfer",
             "only valid when `multinode: true`");
  expect_one(single_node("      - { tp: 8, conc-list: [1] }\n", "  router: { name: r, version: \"image:x\" }\n"),
             "router.version", "image reference");
  expect_one(single_node("      - { tp: 8, conc-list: [1] }\n", "  router: { name: r }\n"), "router.version",
             "missing required field 'version'");
}

TEST(MasterConfig, MultiNodeWorkerRules) {
  EXPECT_TRUE(problems(multi_node("      - conc-list: [1]\n" + kWorkers)).empty());
  expect_one(multi_node("      - conc-list: [1]\n        prefill: { num-worker: 1, tp: 4, ep: 4, dp-attn: true }\n"),
             "scenarios.fixed-seq-len[0].search-space[0]", "both 'prefill' and 'decode'");
  expect_one(multi_node("      - conc-list: [1]\n"
                        "        prefill: { num-worker: 1, tp: 4, ep: 4, dp-attn: true, hardware: gb200 }\n"
                        "        decode: { num-worker: 1, tp: 8, ep: 8, dp-attn: false }\n"),
             kSs + "decode.hardware", "for both 'prefill' and 'decode'");
  expect_one(multi_node("      - conc-list: [1]\n        tp: 8\n" + kWorkers), kSs + "tp",
             "set it inside 'prefill' and 'decode'");
  auto found = problems(single_node("      - conc-list: [1]\n" + kWorkers));
  ASSERT_EQ(found.size(), 3u) << format_diagnostics(found);  // prefill, decode, and the missing tp
  EXPECT_EQ(found[0].field, kSs + "prefill");
  EXPECT_NE(found[0].message.find("only valid in multinode"), std::string::npos);
  expect_one(multi_node("      - conc-list: [1]\n"
                        "        prefill: { num-worker: 1, tp: 4, ep: 4, dp-attn: true, additional-settings: [1] }\n"
                        "        decode: { num-worker: 1, tp: 8, ep: 8, dp-attn: false }\n"),
             kSs + "prefill.additional-settings[0]", "expected a string");
}

TEST(MasterConfig, MultiNodeWorkerKeepsKeyOrder) {
  std::vector<Diagnostic> diagnostics;
  auto configs = parse_master_configs(
      multi_node(
          "      - conc-list: [1]\n"
          "        prefill: { tp: 4, num-worker: 1, pp: 2, ep: 4, dp-attn: true, additional-settings: [\"A=1\"] }\n"
          "        decode: { num-worker: 1, tp: 8, ep: 8, dp-attn: false }\n"),
      "m.yaml", diagnostics);
  ASSERT_TRUE(diagnostics.empty()) << format_diagnostics(diagnostics);
  const Worker& prefill = *configs[0].fixed_seq_len[0].search_space[0].prefill;
  EXPECT_EQ(prefill.key_order,
            (std::vector<WorkerKey>{WorkerKey::kTp, WorkerKey::kNumWorker, WorkerKey::kPp, WorkerKey::kEp,
                                    WorkerKey::kDpAttn, WorkerKey::kAdditionalSettings}));
  EXPECT_EQ(prefill.pp, 2);
  EXPECT_EQ(prefill.dcp_size, 1);
  EXPECT_EQ(prefill.additional_settings, (std::vector<std::string>{"A=1"}));
}

TEST(MasterConfig, AgenticRules) {
  EXPECT_TRUE(problems(agentic("      - { tp: 8, kv-offloading: none, conc-list: [4] }\n")).empty());
  const std::string ss = "scenarios.agentic-coding[0].search-space[0].";
  expect_one(agentic("      - { tp: 8, kv-offloading: none, conc-list: [4] }\n", "b200"), "runner",
             "'cluster:<name>' runner");
  expect_one(agentic("      - { tp: 8, conc-list: [4] }\n"), ss + "kv-offloading", "missing required field");
  expect_one(agentic("      - { tp: 8, kv-offloading: nvme, conc-list: [4] }\n"), ss + "kv-offloading",
             "one of none, dram");
  expect_one(agentic("      - { tp: 8, kv-offloading: dram, conc-list: [4] }\n"), ss + "kv-offload-backend",
             "required when 'kv-offloading' is 'dram'");
  expect_one(agentic("      - { tp: 8, kv-offloading: none, kv-offload-backend: { name: x }, conc-list: [4] }\n"),
             ss + "kv-offload-backend", "can only be set when");
  expect_one(agentic("      - { tp: 8, kv-offloading: dram, kv-offload-backend: { name: x }, conc-list: [4] }\n",
                     "cluster:b200-dgxc", "    - dram-utilization: 1.5\n"),
             "scenarios.agentic-coding[0].dram-utilization", "(0, 1]");
  expect_one(agentic("      - { tp: 8, kv-offloading: dram, kv-offload-backend: { name: x }, conc-list: [4] }\n",
                     "cluster:b200-dgxc", "    -\n"),
             ss + "kv-offloading", "requires 'dram-utilization'");
  expect_one(agentic("      - { tp: 8, kv-offloading: dram, kv-offload-backend: { name: x, version: \"image:y\" }, "
                     "conc-list: [4] }\n"),
             ss + "kv-offload-backend.version", "image reference");
}

TEST(MasterConfig, ReportsEveryProblemNotJustTheFirst) {
  auto found =
      problems(single_node("      - { tp: 8, conc-start: 64, conc-end: 4 }\n"
                           "      - { tp: 6, dcp-size: 4, conc-list: [4] }\n"
                           "      - { tp: x, conc-list: [4] }\n",
                           "  typo: 1\n"));
  ASSERT_EQ(found.size(), 4u) << format_diagnostics(found);
  EXPECT_EQ(found[0].where.line, 9);
  EXPECT_EQ(found[1].where.line, 15);
  EXPECT_EQ(found[2].where.line, 16);
  EXPECT_EQ(found[3].where.line, 17);
}

TEST(MasterConfig, DiagnosticNamesFileLineColumnKeyAndField) {
  auto found = problems(single_node("      - { tp: 8, conc-start: 64, conc-end: 4 }\n"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].to_string(),
            "m.yaml:14:30: config 'cfg-fp8-h200-vllm': field "
            "'scenarios.fixed-seq-len[0].search-space[0].conc-start': 'conc-start' (64) must be <= 'conc-end' (4); "
            "swap them or fix the range");
}

TEST(MasterConfig, FileMustBeAMapping) {
  auto found = problems("- a\n- b\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].message.find("must be a mapping"), std::string::npos);
  EXPECT_EQ(problems("").size(), 1u);
}

TEST(RunnerConfig, ParsesLabelsAndHardware) {
  std::vector<Diagnostic> diagnostics;
  RunnerConfig runners = parse_runner_config(
      "labels:\n  h200: [h200-cw_00, h200-cw_01]\nhardware:\n  cluster:h200:\n    available-cpu-dram-mib: 1_471_356\n"
      "    gpus-per-node: 8\n",
      "r.yaml", diagnostics);
  ASSERT_TRUE(diagnostics.empty()) << format_diagnostics(diagnostics);
  ASSERT_NE(runners.nodes("h200"), nullptr);
  EXPECT_EQ(runners.nodes("h200")->size(), 2u);
  EXPECT_EQ(runners.nodes("b200"), nullptr);
  ASSERT_NE(runners.find_hardware("cluster:h200"), nullptr);
  EXPECT_EQ(runners.find_hardware("cluster:h200")->available_cpu_dram_mib, 1471356);
}

TEST(RunnerConfig, RejectsBadShapes) {
  auto check = [](const std::string& yaml, const std::string& text) {
    std::vector<Diagnostic> diagnostics;
    parse_runner_config(yaml, "r.yaml", diagnostics);
    ASSERT_EQ(diagnostics.size(), 1u) << format_diagnostics(diagnostics);
    EXPECT_NE(diagnostics[0].to_string().find(text), std::string::npos) << diagnostics[0].to_string();
  };
  check("hardware: {}\n", "missing required field 'labels'");
  check("labels:\n  h200: []\n", "non-empty list");
  check("labels:\n  h200: [a]\nhardware:\n  h200: { gpus-per-node: 8 }\n", "available-cpu-dram-mib");
  check("labels:\n  h200: [a]\nextra: 1\n", "unknown field 'extra'");
  check("labels:\n  h200: [a]\n  h200: [b]\n", "duplicate runner label 'h200'");
  check(
      "labels:\n  h200: [a]\nhardware:\n  h200: { available-cpu-dram-mib: 1, gpus-per-node: 8 }\n"
      "  h200: { available-cpu-dram-mib: 1, gpus-per-node: 8 }\n",
      "duplicate hardware label 'h200'");
  check("labels:\n  h200: [a]\nhardware:\n  h200: { available-cpu-dram-mib: 1, gpus-per-node: 0 }\n", ">= 1");
}

TEST(ConfigSet, DramOffloadingNeedsRunnerHardwareAndMustFitANode) {
  std::vector<Diagnostic> diagnostics;
  auto configs = parse_master_configs(
      agentic("      - { tp: 16, kv-offloading: dram, kv-offload-backend: { name: x }, conc-list: [4] }\n"), "m.yaml",
      diagnostics);
  ASSERT_TRUE(diagnostics.empty()) << format_diagnostics(diagnostics);
  RunnerConfig runners;
  runners.file = "r.yaml";
  check_config_set(configs, &runners, diagnostics);
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_NE(diagnostics[0].message.find("needs hardware facts for runner 'cluster:b200-dgxc'"), std::string::npos);
  diagnostics.clear();
  runners.hardware.emplace_back("cluster:b200-dgxc", RunnerHardware{3095781, 8});
  check_config_set(configs, &runners, diagnostics);
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_NE(diagnostics[0].message.find("requires 16 GPUs and exceeds gpus-per-node=8"), std::string::npos);
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("ixbench-config-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return path_ / name;
  }
  std::filesystem::path at(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

TEST(ConfigSet, KeyDefinedInTwoFilesIsAnError) {
  TempDir dir;
  std::string yaml = single_node("      - { tp: 8, conc-list: [1] }\n");
  std::vector<std::filesystem::path> files{dir.write("a.yaml", yaml), dir.write("b.yaml", yaml)};
  auto report = validate_files(files, nullptr);
  ASSERT_EQ(report.diagnostics.size(), 1u) << format_diagnostics(report.diagnostics);
  EXPECT_EQ(report.diagnostics[0].where.file, files[1].string());
  EXPECT_NE(report.diagnostics[0].message.find("already defined in " + files[0].string() + ":1:1"), std::string::npos);
}

TEST(ConfigSet, KeyDefinedInTwoFilesIsReportedWhenADefinitionIsInvalid) {
  // The duplicate was only found when both definitions were otherwise valid: an unknown field in
  // the second file hid it until that was fixed.
  TempDir dir;
  std::string yaml = single_node("      - { tp: 8, conc-list: [1] }\n");
  std::string typo = single_node("      - { tp: 8, conc-list: [1] }\n", "  typo-field: 1\n");
  std::vector<std::filesystem::path> files{dir.write("one.yaml", yaml), dir.write("three.yaml", typo)};
  auto report = validate_files(files, nullptr);
  ASSERT_EQ(report.diagnostics.size(), 2u) << format_diagnostics(report.diagnostics);
  EXPECT_NE(report.diagnostics[0].message.find("unknown field 'typo-field'"), std::string::npos);
  EXPECT_EQ(report.diagnostics[1].where.file, files[1].string());
  EXPECT_EQ(report.diagnostics[1].where.line, 1);
  EXPECT_EQ(report.diagnostics[1].config_key, "cfg-fp8-h200-vllm");
  EXPECT_NE(report.diagnostics[1].message.find("already defined in " + files[0].string() + ":1:1"), std::string::npos);

  // The first definition invalid, or both: still reported, once, on the later definition.
  files = {dir.write("typo.yaml", typo), dir.write("ok.yaml", yaml), dir.write("typo2.yaml", typo)};
  report = validate_files(files, nullptr);
  ASSERT_EQ(report.diagnostics.size(), 4u) << format_diagnostics(report.diagnostics);
  size_t duplicates = 0;
  for (const auto& diagnostic : report.diagnostics) {
    if (diagnostic.message.find("already defined in " + files[0].string() + ":1:1") != std::string::npos) {
      ++duplicates;
    }
  }
  EXPECT_EQ(duplicates, 2u) << format_diagnostics(report.diagnostics);
}

TEST(ConfigSet, MissingFilesAndSyntaxErrorsAreDiagnosticsAndEveryFileIsChecked) {
  TempDir dir;
  std::vector<std::filesystem::path> files{dir.write("bad.yaml", "a: [1,\n"), dir.at("missing.yaml"),
                                           dir.write("ok.yaml", single_node("      - { tp: 8, conc-list: [1] }\n"))};
  auto report = validate_files(files, nullptr);
  ASSERT_EQ(report.diagnostics.size(), 2u) << format_diagnostics(report.diagnostics);
  EXPECT_NE(report.diagnostics[0].message.find("YAML syntax error"), std::string::npos);
  EXPECT_GT(report.diagnostics[0].where.line, 0);
  EXPECT_NE(report.diagnostics[1].message.find("does not exist"), std::string::npos);
  EXPECT_EQ(report.configs.configs.size(), 1u);
  auto loaded = load_configs(files, files[2]);
  ASSERT_FALSE(loaded.has_value());
  EXPECT_NE(loaded.error().message().find("does not exist"), std::string::npos);
}

TEST(ConfigSet, RealMasterConfigsValidateCleanly) {
  std::string nvidia = ix::testing::shared_path("data/inferencex/nvidia-master.yaml");
  std::string amd = ix::testing::shared_path("data/inferencex/amd-master.yaml");
  std::string runners = ix::testing::shared_path("data/inferencex/runners.yaml");
  if (nvidia.empty() || amd.empty() || runners.empty()) {
    GTEST_SKIP() << ix::testing::shared_missing_message("data/inferencex/");
  }
  std::vector<std::filesystem::path> files{nvidia, amd};
  std::filesystem::path runner_path = runners;
  auto report = validate_files(files, &runner_path);
  EXPECT_TRUE(report.ok()) << format_diagnostics(report.diagnostics);
  EXPECT_GT(report.configs.configs.size(), 150u);
  ASSERT_TRUE(report.runners.has_value());
  EXPECT_NE(report.runners->find_hardware("cluster:mi355x-amds"), nullptr);
}

}  // namespace
}  // namespace ix::config
