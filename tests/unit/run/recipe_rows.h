// Matrix rows of every kind the recipe tests render, and the inputs a job gives render_server.
#pragma once

#include <string>

#include "run/recipe.h"
#include "support/subprocess.h"
#include "sweep/sweep_row.h"

namespace ix::run::testing {

inline config::Worker worker(int64_t num, int64_t tp, int64_t ep, bool dp_attn) {
  config::Worker w;
  w.num_worker = num;
  w.tp = tp;
  w.ep = ep;
  w.dp_attn = dp_attn;
  return w;
}

// dsr1 fp8 on h200, 1k1k, tp8.
inline sweep::SweepRow fixed_row(std::string framework) {
  sweep::SweepRow row;
  row.kind = sweep::RowKind::kSingleNodeFixed;
  row.image = "lmsysorg/sglang:v0.5.9-cu130";
  row.model = "deepseek-ai/DeepSeek-R1-0528";
  row.model_prefix = "dsr1";
  row.precision = "fp8";
  row.framework = std::move(framework);
  row.runner = "h200";
  row.isl = 1024;
  row.osl = 1024;
  row.tp = 8;
  row.conc = {64};
  row.exp_name = "dsr1_1k1k";
  row.run_eval = false;
  return row;
}

// dsv4 fp4 on b200, 8k1k, tp8 ep8 dp-attn, MTP.
inline sweep::SweepRow spec_row(std::string framework) {
  sweep::SweepRow row = fixed_row(std::move(framework));
  row.image = "vllm/vllm-openai:v0.20.0";
  row.model = "deepseek-ai/DeepSeek-V4-Pro";
  row.model_prefix = "dsv4";
  row.precision = "fp4";
  row.runner = "b200";
  row.isl = 8192;
  row.osl = 1024;
  row.ep = 8;
  row.dp_attn = true;
  row.spec_decoding = config::SpecDecoding::kMtp;
  row.exp_name = "dsv4_8k1k";
  return row;
}

// dsv4 fp4 agentic on b200, tp8, DRAM offloading, MTP.
inline sweep::SweepRow agentic_row(std::string framework) {
  sweep::SweepRow row = spec_row(std::move(framework));
  row.kind = sweep::RowKind::kSingleNodeAgentic;
  row.isl = 0;
  row.osl = 0;
  row.ep = 1;
  row.dp_attn = false;
  row.conc = {16};
  row.kv_offloading = config::KvOffloading::kDram;
  row.kv_offload_backend = config::Component{"native", std::nullopt};
  row.total_cpu_dram_gb = 1600;
  row.exp_name = "dsv4_tp8_conc16_kvdram-native_spec-mtp";
  row.run_eval.reset();
  return row;
}

// dsr1 fp8 on h200, 8k1k, disaggregated: 1 prefill (tp8 ep8 dp-attn) + 2 decode (tp8).
inline sweep::SweepRow disagg_row(std::string framework) {
  sweep::SweepRow row = fixed_row(std::move(framework));
  row.kind = sweep::RowKind::kMultiNodeFixed;
  row.isl = 8192;
  row.osl = 1024;
  row.prefill = worker(1, 8, 8, true);
  row.decode = worker(2, 8, 1, false);
  row.prefill.additional_settings = {"CONFIG_FILE=recipes/dsr1/8k1k/ctx1_gen2_dep8_tep8_batch64.yaml"};
  row.decode.additional_settings = row.prefill.additional_settings;
  row.conc = {32, 64};
  row.disagg = true;
  row.kv_p2p_transfer = "nixl";
  row.exp_name = "dsr1_8k1k";
  return row;
}

// dsv4 fp4 on b200, 8k1k, disaggregated with MTP (DECODE_MTP_SIZE=2).
inline sweep::SweepRow spec_disagg_row(std::string framework) {
  sweep::SweepRow row = disagg_row(std::move(framework));
  row.model = "deepseek-ai/DeepSeek-V4-Pro";
  row.model_prefix = "dsv4";
  row.precision = "fp4";
  row.runner = "b200";
  row.spec_decoding = config::SpecDecoding::kMtp;
  row.decode.additional_settings = {"CONFIG_FILE=recipes/dsv4/8k1k/ctx1_gen2_mtp2.yaml", "DECODE_MTP_SIZE=2"};
  row.prefill.additional_settings = {"CONFIG_FILE=recipes/dsv4/8k1k/ctx1_gen2_mtp2.yaml"};
  row.exp_name = "dsv4_8k1k";
  return row;
}

inline RecipeInputs inputs_for(const sweep::SweepRow& row) {
  RecipeInputs in;
  in.row = &row;
  in.conc = row.conc.front();
  in.runner = row.runner + "-cw_00";
  in.hardware = row.runner;
  in.port = 8123;
  in.ixbench = "/opt/ixbench/bin/ixbench";
  in.job_dir = "/tmp/jobs/job-0001";
  in.golden_al_dir = ix::testing::source_path("tests/data/recipes/golden_al");
  return in;
}

}  // namespace ix::run::testing
