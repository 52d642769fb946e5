#include "sweep/row_parse.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/master_config.h"
#include "support/subprocess.h"
#include "sweep/planner.h"

namespace ix::sweep {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Empty when equal, else where the two texts part (a whole matrix is too long to print).
std::string difference(const std::string& got, const std::string& want) {
  size_t at = 0;
  while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
  if (at == got.size() && at == want.size()) return "";
  size_t from = at < 80 ? 0 : at - 80;
  return "differ at byte " + std::to_string(at) + "\n got: " + got.substr(from, 160) +
         "\nwant: " + want.substr(from, 160);
}

// Parses the matrix text and renders it again, checking the text comes back byte for byte.
std::vector<SweepRow> expect_round_trip(const std::string& text, const std::string& name) {
  auto rows = matrix_from_json(text, name);
  EXPECT_TRUE(rows.has_value()) << (rows ? "" : rows.error().message());
  if (!rows) return {};
  EXPECT_EQ(difference(render_matrix(*rows), text), "") << name;
  return *rows;
}

std::set<RowKind> kinds_of(const std::vector<SweepRow>& rows) {
  std::set<RowKind> kinds;
  for (const auto& row : rows) kinds.insert(row.kind);
  return kinds;
}

TEST(RowParse, ReferenceExamplesRoundTripByteForByte) {
  const std::string dir = ix::testing::shared_path("data/inferencex/examples");
  if (dir.empty()) GTEST_SKIP() << ix::testing::shared_missing_message("data/inferencex/examples");
  std::set<RowKind> kinds;
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    std::string text = read_all(entry.path().string());
    if (!text.empty() && text.back() == '\n') text.pop_back();
    auto rows = expect_round_trip(text, entry.path().filename().string());
    kinds.merge(kinds_of(rows));
  }
  EXPECT_EQ(files, 2u);
  EXPECT_EQ(kinds.size(), 4u);  // every kind of row
}

TEST(RowParse, InferenceXMasterSweepsRoundTripByteForByte) {
  const std::string runners = ix::testing::shared_path("data/inferencex/runners.yaml");
  if (runners.empty()) GTEST_SKIP() << ix::testing::shared_missing_message("data/inferencex/runners.yaml");
  for (const char* name : {"nvidia-master.yaml", "amd-master.yaml"}) {
    const std::string file = ix::testing::shared_path(std::string("data/inferencex/") + name);
    if (file.empty()) GTEST_SKIP() << ix::testing::shared_missing_message(std::string("data/inferencex/") + name);
    std::vector<std::filesystem::path> files{file};
    auto loaded = config::load_configs(files, runners);
    ASSERT_TRUE(loaded.has_value()) << loaded.error().message();
    auto planned = plan_full_sweep(loaded->configs, loaded->runners, {});
    ASSERT_TRUE(planned.has_value()) << planned.error().message();
    auto rows = expect_round_trip(render_matrix(*planned), name);
    ASSERT_EQ(rows.size(), planned->size());
    EXPECT_EQ(kinds_of(rows).size(), 4u) << name;
    for (size_t index = 0; index < rows.size(); ++index) {
      ASSERT_EQ(recipe_fingerprint(rows[index]), recipe_fingerprint((*planned)[index])) << name << " row " << index;
    }
  }
}

// Every kind, and every optional key: a version-first router, a worker with its keys in an
// unusual order (hardware, additional-settings), kv-p2p-transfer, a DRAM backend with a version.
constexpr const char* kMaster = R"(
small-fp8-h200-sglang:
  image: lmsysorg/sglang:v0.5.0
  model: example/small
  model-prefix: small
  precision: fp8
  framework: sglang
  runner: h200
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - { tp: 8, ep: 8, dp-attn: true, conc-start: 4, conc-end: 64, router: { version: "0.3.2", name: sglang-router } }
      - { tp: 4, pp: 2, dcp-size: 2, spec-decoding: draft_model, conc-list: [16, 32] }
    - isl: 1024
      osl: 8192
      search-space:
      - { tp: 8, conc-list: [1] }
small-fp4-b200-dynamo:
  image: nvcr.io/nvidia/dynamo:1.0
  model: example/small
  model-prefix: small
  precision: fp4
  framework: dynamo-sglang
  runner: b200-multinode
  multinode: true
  disagg: true
  kv-p2p-transfer: nixl
  router: { name: dynamo-router, version: "1.3.0" }
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - spec-decoding: mtp
        conc-list: [8, 32, 64]
        prefill: { num-worker: 1, pp: 1, tp: 4, ep: 4, dp-attn: true, hardware: gb200-nv, additional-settings: ["A=1"] }
        decode: { num-worker: 2, tp: 8, pcp-size: 1, ep: 8, dp-attn: false, hardware: gb200-nv }
small-fp4-h200-vllm-agentic:
  image: vllm/vllm-openai:v0.11.0
  model: example/small
  model-prefix: small
  precision: fp4
  framework: vllm
  runner: cluster:h200-dgxc
  multinode: true
  disagg: false
  kv-p2p-transfer: nixl
  router: { version: "0.1.14", name: vllm-router }
  scenarios:
    agentic-coding:
    - search-space:
      - spec-decoding: mtp
        kv-offloading: none
        conc-list: [1, 4]
        prefill: { num-worker: 2, tp: 8, ep: 8, dp-attn: true, additional-settings: [] }
        decode: { num-worker: 0, tp: 8, ep: 8, dp-attn: true }
small-fp8-b200-sglang-agentic:
  image: lmsysorg/sglang:v0.5.0
  model: example/small
  model-prefix: small
  precision: fp8
  framework: sglang
  runner: cluster:b200-dgxc
  multinode: false
  scenarios:
    agentic-coding:
    - dram-utilization: 0.80
      search-space:
      - { tp: 8, kv-offloading: none, conc-list: [4, 16] }
      - { tp: 4, kv-offloading: dram, kv-offload-backend: { version: "2", name: hicache }, spec-decoding: mtp, conc-list: [8] }
)";

constexpr const char* kRunners = R"(
labels:
  h200: [h200-cw_00, h200-cw_01]
  b200-multinode: [b200-dgxc-slurm_0]
  cluster:b200-dgxc: [b200-dgxc_00]
  cluster:h200-dgxc: [h200-dgxc_00]
hardware:
  cluster:b200-dgxc: { available-cpu-dram-mib: 3_095_781, gpus-per-node: 8 }
)";

class RowParseSmallConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<config::Diagnostic> diagnostics;
    configs_.configs = config::parse_master_configs(kMaster, "small-master.yaml", diagnostics);
    runners_ = config::parse_runner_config(kRunners, "runners.yaml", diagnostics);
    ASSERT_TRUE(diagnostics.empty()) << config::format_diagnostics(diagnostics);
  }
  std::vector<SweepRow> plan(const SweepOptions& options) {
    auto rows = plan_full_sweep(configs_, runners_, options);
    EXPECT_TRUE(rows.has_value()) << (rows ? "" : rows.error().message());
    return rows ? *rows : std::vector<SweepRow>{};
  }

  config::MasterConfigSet configs_;
  config::RunnerConfig runners_;
};

TEST_F(RowParseSmallConfig, GeneratedMatrixRoundTrips) {
  auto planned = plan({});
  auto rows = expect_round_trip(render_matrix(planned), "small.json");
  ASSERT_EQ(rows.size(), planned.size());
  EXPECT_EQ(kinds_of(rows).size(), 4u);
  for (size_t index = 0; index < rows.size(); ++index) {
    EXPECT_EQ(recipe_fingerprint(rows[index]), recipe_fingerprint(planned[index])) << "row " << index;
  }
  ASSERT_TRUE(rows[0].router.has_value());
  EXPECT_TRUE(rows[0].router->version_first);
  const SweepRow* multi = nullptr;
  for (const auto& row : rows) {
    if (row.kind == RowKind::kMultiNodeFixed && !multi) multi = &row;
  }
  ASSERT_NE(multi, nullptr);
  using config::WorkerKey;
  EXPECT_EQ(multi->prefill.key_order,
            (std::vector<WorkerKey>{WorkerKey::kNumWorker, WorkerKey::kPp, WorkerKey::kTp, WorkerKey::kEp,
                                    WorkerKey::kDpAttn, WorkerKey::kHardware, WorkerKey::kAdditionalSettings,
                                    WorkerKey::kDcpSize, WorkerKey::kPcpSize}));
  EXPECT_EQ(multi->prefill.hardware, "gb200-nv");
  EXPECT_EQ(multi->prefill.additional_settings, (std::vector<std::string>{"A=1"}));
  EXPECT_EQ(multi->kv_p2p_transfer, "nixl");
  EXPECT_FALSE(multi->router->version_first);
}

TEST_F(RowParseSmallConfig, EvalMarkingsRoundTrip) {
  SweepOptions all_evals;
  all_evals.all_evals = true;
  SweepOptions no_evals;
  no_evals.no_evals = true;
  for (const auto& options : {all_evals, no_evals}) {
    auto planned = plan(options);
    ASSERT_FALSE(planned.empty());
    expect_round_trip(render_matrix(planned), "small.json");
  }
  auto rows = expect_round_trip(render_matrix(plan(all_evals)), "all-evals.json");
  bool all_concs = false;
  for (const auto& row : rows) {
    EXPECT_TRUE(row.eval_only);
    all_concs |= row.eval_all_concs;
  }
  EXPECT_TRUE(all_concs);
}

// A valid single-node fixed row to break one key at a time.
boost::json::object good_row() {
  return boost::json::parse(R"({"image": "img", "model": "m", "model-prefix": "p", "precision": "fp8",
    "framework": "vllm", "runner": "h200", "isl": 8192, "osl": 1024, "tp": 8, "pp": 1, "dcp-size": 1,
    "pcp-size": 1, "conc": 4, "max-model-len": 9472, "ep": 1, "dp-attn": false, "spec-decoding": "none",
    "exp-name": "p_8k1k", "disagg": false, "run-eval": false})")
      .as_object();
}

std::string row_error(const boost::json::object& row) {
  auto parsed = row_from_json(row, "matrix.json: row 3");
  if (parsed) return "(parsed)";
  EXPECT_EQ(parsed.error().code(), ErrorCode::kInvalidArgument);
  return parsed.error().message();
}

TEST(RowParseErrors, GoodRowParses) {
  auto row = row_from_json(good_row(), "");
  ASSERT_TRUE(row.has_value()) << row.error().message();
  EXPECT_EQ(row->kind, RowKind::kSingleNodeFixed);
  EXPECT_EQ(row->conc, (std::vector<int64_t>{4}));
  EXPECT_EQ(row->run_eval, false);
}

TEST(RowParseErrors, WrongTypeNamesKeyAndType) {
  auto row = good_row();
  row["tp"] = "8";
  EXPECT_EQ(row_error(row), R"(matrix.json: row 3: "tp" must be an integer, got "8")");
  row = good_row();
  row["dp-attn"] = 1;
  EXPECT_EQ(row_error(row), R"(matrix.json: row 3: "dp-attn" must be a boolean, got 1)");
  row = good_row();
  row["isl"] = 8192.5;
  EXPECT_EQ(row_error(row), R"(matrix.json: row 3: "isl" must be an integer, got 8192.5)");
}

TEST(RowParseErrors, MissingKey) {
  auto row = good_row();
  row.erase("exp-name");
  EXPECT_EQ(row_error(row), R"(matrix.json: row 3: missing "exp-name" (a string))");
}

TEST(RowParseErrors, UnknownKeyForTheKind) {
  auto row = good_row();
  row["kv-offloading"] = "none";
  EXPECT_EQ(row_error(row).rfind(R"(matrix.json: row 3: unknown key "kv-offloading" (a single-node fixed-seq-len row)"
                                 R"( has "image", "model",)",
                                 0),
            0u)
      << row_error(row);
}

TEST(RowParseErrors, BadEnumValues) {
  auto row = good_row();
  row["spec-decoding"] = "foo";
  EXPECT_EQ(row_error(row),
            R"(matrix.json: row 3: "spec-decoding" must be one of "none", "mtp", "draft_model", got "foo")");
}

TEST(RowParseErrors, MaxModelLenMustBeDerived) {
  auto row = good_row();
  row["max-model-len"] = 9473;
  EXPECT_EQ(row_error(row), R"(matrix.json: row 3: "max-model-len" is 9473, but isl + osl + 256 is 9472)");
}

TEST(RowParseErrors, ScenarioTypeMustBeAgentic) {
  auto row = good_row();
  row["scenario-type"] = "fixed-seq-len";
  EXPECT_NE(row_error(row).find(R"("scenario-type" must be "agentic-coding")"), std::string::npos) << row_error(row);
}

boost::json::object multi_node_row() {
  return boost::json::parse(R"({"image": "img", "model": "m", "model-prefix": "p", "precision": "fp4",
    "framework": "dynamo-trt", "runner": "b200-multinode", "isl": 8192, "osl": 1024, "spec-decoding": "mtp",
    "prefill": {"num-worker": 1, "tp": 4, "ep": 4, "dp-attn": true, "pp": 1, "dcp-size": 1, "pcp-size": 1},
    "decode": {"num-worker": 1, "tp": 8, "ep": 8, "dp-attn": true, "pp": 1, "dcp-size": 1, "pcp-size": 1},
    "conc": [90], "max-model-len": 9472, "exp-name": "p_8k1k", "disagg": true, "run-eval": false})")
      .as_object();
}

TEST(RowParseErrors, MultiNodeConcMustBeANonEmptyList) {
  auto row = multi_node_row();
  ASSERT_TRUE(row_from_json(row, "").has_value());
  row["conc"] = 90;
  EXPECT_EQ(row_error(row), R"(matrix.json: row 3: "conc" must be a list of integers, got 90)");
  row["conc"] = boost::json::array{};
  EXPECT_EQ(row_error(row), R"(matrix.json: row 3: "conc" must be a non-empty list of integers, got [])");
  row["conc"] = boost::json::array{8, "16"};
  EXPECT_EQ(row_error(row), R"(matrix.json: row 3: "conc" must be a list of integers, got [8, "16"])");
}

TEST(RowParseErrors, NestedKeysAreNamedWithTheirObject) {
  auto row = multi_node_row();
  row["prefill"].as_object()["tp"] = true;
  EXPECT_EQ(row_error(row), R"(matrix.json: row 3: "prefill.tp" must be an integer, got true)");
  row = multi_node_row();
  row["decode"].as_object().erase("dp-attn");
  EXPECT_EQ(row_error(row), R"(matrix.json: row 3: missing "decode.dp-attn" (a boolean))");
  row = multi_node_row();
  row["router"] = boost::json::object{{"name", "r"}, {"tag", "x"}};
  EXPECT_EQ(row_error(row), R"(matrix.json: row 3: unknown key "router.tag" (a component has "name", "version"))");
}

TEST(MatrixParseErrors, NotAnArray) {
  auto rows = matrix_from_json(R"({"image": "x"})", "matrix.json");
  ASSERT_FALSE(rows.has_value());
  EXPECT_EQ(rows.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rows.error().message(),
            R"(matrix.json: a job matrix must be a JSON array of row objects, got {"image": "x"})");
}

TEST(MatrixParseErrors, EmptyArrayHasNoJobs) {
  auto rows = matrix_from_json(" [ ]\n", "matrix.json");
  ASSERT_FALSE(rows.has_value());
  EXPECT_EQ(rows.error().message(), "matrix.json: no jobs (an empty array)");
}

TEST(MatrixParseErrors, RowNotAnObject) {
  std::string text = "[" + boost::json::serialize(good_row()) + ", [1, 2]]";
  auto rows = matrix_from_json(text, "matrix.json");
  ASSERT_FALSE(rows.has_value());
  EXPECT_EQ(rows.error().message(), "matrix.json: row 1: must be an object, got [1, 2]");
}

TEST(MatrixParseErrors, RowErrorsNameTheRowIndex) {
  auto bad = good_row();
  bad["conc"] = "4";
  std::string text = "[" + boost::json::serialize(good_row()) + ", " + boost::json::serialize(bad) + "]";
  auto rows = matrix_from_json(text, "matrix.json");
  ASSERT_FALSE(rows.has_value());
  EXPECT_EQ(rows.error().message(), R"(matrix.json: row 1: "conc" must be an integer, got "4")");
}

TEST(MatrixParseErrors, SyntaxErrorGivesLineAndColumn) {
  auto rows = matrix_from_json("[\n  {\"image\": \"x\",,\n]", "matrix.json");
  ASSERT_FALSE(rows.has_value());
  EXPECT_EQ(rows.error().code(), ErrorCode::kParse);
  EXPECT_EQ(rows.error().message().rfind("matrix.json:2:17: invalid JSON", 0), 0u) << rows.error().message();
}

}  // namespace
}  // namespace ix::sweep
