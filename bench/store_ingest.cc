// Ingests N generated agg records (varied configs: models × hardware × frameworks × precisions ×
// TP × ISL/OSL × conc) into a fresh results store and times it, then times the queries a
// dashboard's first view makes (facets, and the latest view of one model at one ISL/OSL, turned into
// the dashboard's points, curves and frontiers), and a re-ingest of everything (all unchanged). The
// database is left in place for bench/dashboard_first_view.mjs.
//
//   bench_store_ingest [--records N] [--per-run K] [--db LOCATION]
//
// LOCATION: a SQLite path (default: a fresh file under /tmp) or a postgresql:// URL (a schema
// `bench_store_ingest` is dropped and created there). Records are converted from agg JSON text
// (results_from_agg_json, as `ixbench ingest` does) and written K per run, one transaction each.
#include <fmt/format.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/json_io.h"
#include "report/dashboard_data.h"
#include "store/backend.h"
#include "store/ingest.h"
#include "store/store.h"

namespace {

namespace bj = boost::json;
using Clock = std::chrono::steady_clock;
using ix::store::ResultRecord;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Record i's agg JSON: the fields process_result.py writes, values varied by i.
std::string agg_text(size_t i) {
  static const char* kModels[] = {"dsr1", "gptoss", "qwen3", "llama3", "kimik2"};
  static const char* kHardware[] = {"h100", "h200", "b200", "gb200", "mi300x", "mi325x", "mi355x"};
  static const char* kFrameworks[] = {"sglang", "vllm", "trt", "atom"};
  static const char* kPrecisions[] = {"fp8", "fp4", "bf16"};
  static const int kTp[] = {1, 2, 4, 8};
  static const int kSeq[][2] = {{1024, 1024}, {1024, 8192}, {8192, 1024}};
  static const int kConc[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  size_t k = i;
  auto pick = [&k](size_t n) {
    const size_t v = k % n;
    k /= n;
    return v;
  };
  const size_t conc = pick(10), model = pick(5), hw = pick(7), fw = pick(4), prec = pick(3), tp = pick(4),
               seq = pick(3);
  const double c = kConc[conc];
  bj::object o{{"hw", kHardware[hw]},
               {"conc", kConc[conc]},
               {"image", fmt::format("registry/{}:v{}", kFrameworks[fw], k % 7)},
               {"model", fmt::format("org/{}", kModels[model])},
               {"infmax_model_prefix", kModels[model]},
               {"framework", kFrameworks[fw]},
               {"precision", kPrecisions[prec]},
               {"spec_decoding", "none"},
               {"disagg", false},
               {"isl", kSeq[seq][0]},
               {"osl", kSeq[seq][1]},
               {"is_multinode", false},
               {"tp", kTp[tp]},
               {"pp", 1},
               {"ep", 1},
               {"dp_attention", "false"},
               {"tput_per_gpu", 40.0 * c / (1.0 + c / 64.0)},
               {"output_tput_per_gpu", 20.0 * c / (1.0 + c / 64.0)},
               {"input_tput_per_gpu", 20.0 * c / (1.0 + c / 64.0)},
               {"median_ttft", 0.1 + 0.01 * c},
               {"p90_ttft", 0.2 + 0.02 * c},
               {"median_tpot", 0.01 + 0.0005 * c},
               {"median_e2el", 10.0 + 0.2 * c},
               {"p90_e2el", 12.0 + 0.3 * c},
               {"median_intvty", 100.0 / (1.0 + 0.05 * c)},
               {"p90_intvty", 90.0 / (1.0 + 0.05 * c)},
               {"power_valid", 1},
               {"avg_power_w", 650.0 + static_cast<double>(i % 100)},
               {"total_gpu_energy_j", 1.0e6 + static_cast<double>(i)},
               {"joules_per_output_token", 1.5},
               {"joules_per_total_token", 0.7}};
  return bj::serialize(o);
}

std::string fresh_location(std::string location) {
  if (!location.empty() && !location.starts_with("postgres")) {
    std::filesystem::remove(location);
    std::filesystem::remove(location + "-wal");
    std::filesystem::remove(location + "-shm");
    return location;
  }
  if (location.empty()) return fresh_location(fmt::format("/tmp/bench_store_ingest_{}.db", ::getpid()));
  auto connection = ix::store::open_postgres(location);
  if (!connection) return "error:" + connection.error().message();
  if (auto ok =
          (*connection)->exec("DROP SCHEMA IF EXISTS bench_store_ingest CASCADE; CREATE SCHEMA bench_store_ingest");
      !ok)
    return "error:" + ok.error().message();
  return location + (location.find('?') == std::string::npos ? "?" : "&") +
         "options=-csearch_path%3Dbench_store_ingest";
}

}  // namespace

int main(int argc, char** argv) {
  size_t records = 100000, per_run = 1000;
  std::string location;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--records") records = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--per-run") per_run = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--db") location = argv[i + 1];
  }
  location = fresh_location(location);
  if (location.starts_with("error:")) {
    fmt::print(stderr, "bench_store_ingest: {}\n", location.substr(6));
    return 1;
  }

  auto convert_start = Clock::now();
  std::vector<std::vector<ResultRecord>> runs;
  for (size_t i = 0; i < records; ++i) {
    if (i % per_run == 0) runs.emplace_back();
    auto converted = ix::store::results_from_agg_json(agg_text(i), "generated", fmt::format("r{}", i));
    if (!converted) {
      fmt::print(stderr, "bench_store_ingest: {}\n", converted.error().message());
      return 1;
    }
    for (auto& r : *converted) runs.back().push_back(std::move(r));
  }
  const double convert_s = seconds_since(convert_start);

  auto store = ix::store::open_store(location);
  if (!store) {
    fmt::print(stderr, "bench_store_ingest: {}\n", store.error().message());
    return 1;
  }
  auto ingest_all = [&]() -> ix::store::IngestStats {
    ix::store::IngestStats total;
    for (size_t r = 0; r < runs.size(); ++r) {
      ix::store::RunRecord run{.run_id = fmt::format("run{:05}", r),
                               .created_at = fmt::format("2026-{:02}-{:02}T00:00:00Z", 1 + r / 28 % 12, 1 + r % 28),
                               .source = "bench",
                               .host = "bench",
                               .ixbench_version = "bench",
                               .manifest_json = "{}"};
      for (auto& result : runs[r]) result.run_id = run.run_id;
      auto stats = (*store)->put_run_results(run, runs[r]);
      if (!stats) {
        fmt::print(stderr, "bench_store_ingest: {}\n", stats.error().message());
        std::exit(1);
      }
      total.inserted += stats->inserted, total.updated += stats->updated, total.unchanged += stats->unchanged;
    }
    return total;
  };
  auto ingest_start = Clock::now();
  const auto first = ingest_all();
  const double ingest_s = seconds_since(ingest_start);
  auto again_start = Clock::now();
  const auto again = ingest_all();
  const double again_s = seconds_since(again_start);

  auto facets_start = Clock::now();
  auto facets = (*store)->facets();
  const double facets_s = seconds_since(facets_start);
  ix::store::ResultQuery view;
  view.models = {"dsr1"};
  view.isl = 1024, view.osl = 1024;
  auto view_start = Clock::now();
  auto latest = (*store)->latest(view);
  const double view_s = seconds_since(view_start);
  if (!facets || !latest) {
    fmt::print(stderr, "bench_store_ingest: a query failed\n");
    return 1;
  }
  // What /api/view adds to the query: points, curves and frontiers, and the JSON text.
  auto json_start = Clock::now();
  const std::string view_text =
      ix::json::to_string(ix::report::view_json(*latest, ix::report::default_gpu_hour_costs()));
  const double json_s = seconds_since(json_start);
  fmt::print("store: {}\n", (*store)->describe());
  fmt::print("convert {} agg records: {:.2f} s\n", records, convert_s);
  fmt::print("ingest ({} per run, one transaction each): {:.2f} s ({:.0f} records/s; {} inserted)\n", per_run, ingest_s,
             static_cast<double>(records) / ingest_s, first.inserted);
  fmt::print("re-ingest (all unchanged): {:.2f} s ({} unchanged)\n", again_s, again.unchanged);
  fmt::print("facets: {:.3f} s ({} results in the latest view)\n", facets_s, facets->results);
  fmt::print("latest(model dsr1, 1024/1024): {:.3f} s ({} results)\n", view_s, latest->size());
  fmt::print("dashboard view of it (frontiers + JSON): {:.3f} s ({:.1f} MB)\n", json_s,
             static_cast<double>(view_text.size()) / 1e6);
  fmt::print("first view (facets + latest + view): {:.3f} s\n", facets_s + view_s + json_s);
  return 0;
}
