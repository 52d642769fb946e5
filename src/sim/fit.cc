#include "sim/fit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "common/file_io.h"
#include "metrics/statistics.h"
#include "sim/engine_core.h"
#include "sim/predict.h"
#include "sim/sweep_row.h"

namespace ix::sim {

namespace {

// RFC 4180 fields: commas inside double quotes, "" for a quote.
std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  fields.push_back(std::move(field));
  return fields;
}

// One data row. An empty field reads as missing (the fallback); a field that is present but not a
// finite number, an integer or a boolean where one is expected is recorded in `errors` (a
// malformed file is refused, not fitted with guessed values).
class CsvRow {
 public:
  CsvRow(const std::map<std::string, size_t>& columns, std::vector<std::string> fields, std::string where,
         std::vector<std::string>& errors)
      : columns_(columns), fields_(std::move(fields)), where_(std::move(where)), errors_(errors) {}
  std::string text(const std::string& name) const {
    auto it = columns_.find(name);
    return it == columns_.end() || it->second >= fields_.size() ? std::string() : fields_[it->second];
  }
  std::optional<double> number(const std::string& name) const {
    const std::string value = text(name);
    if (value.empty()) return std::nullopt;
    try {
      size_t used = 0;
      const double parsed = std::stod(value, &used);
      if (used == value.size() && std::isfinite(parsed)) return parsed;
    } catch (const std::exception&) {
    }
    bad(name, value, "a finite number");
    return std::nullopt;
  }
  int32_t integer(const std::string& name, int32_t fallback = 0) const {
    const std::string value = text(name);
    if (value.empty()) return fallback;
    auto parsed = number(name);
    if (!parsed) return fallback;
    if (*parsed != std::floor(*parsed) || std::abs(*parsed) > 2e9) {
      bad(name, value, "an integer");
      return fallback;
    }
    return int32_t(*parsed);
  }
  bool flag(const std::string& name) const {
    const std::string value = text(name);
    if (value == "true" || value == "True") return true;
    if (value.empty() || value == "false" || value == "False") return false;
    bad(name, value, "true or false");
    return false;
  }

 private:
  void bad(const std::string& name, const std::string& value, const char* expected) const {
    errors_.push_back(fmt::format("{}: column '{}' is '{}', expected {}", where_, name, value, expected));
  }

  const std::map<std::string, size_t>& columns_;
  std::vector<std::string> fields_;
  std::string where_;
  std::vector<std::string>& errors_;
};

std::string topology_key(const EngineConfig& c) {
  auto side = [](const WorkerTopology& t) {
    return fmt::format("{}x(tp{}ep{}{})", t.num_workers, t.tp, t.ep, t.dp_attn ? "dpa" : "");
  };
  if (c.disagg) return fmt::format("p{}-d{}", side(c.prefill), side(c.decode));
  return fmt::format("{}x(tp{}ep{}{})", c.num_replicas, c.tp, c.ep, c.dp_attn ? "dpa" : "");
}

// ---- closed-form re-prediction ---------------------------------------------------------------

// The fitted parameters of one group, in log space for the optimiser.
enum ThetaIndex {
  kThFixed = 0,
  kThMemory,
  kThCompute,
  kThApi,
  kThRequest,
  kThAttention,
  kThPrefill,
  kThFrontend,
  kThetaSize
};
using Theta = std::array<double, kThetaSize>;
struct ThetaField {
  double Efficiency::*member;
  double lo, hi;       // bounds
  double step = 0.5;   // initial simplex step (log)
  double ridge = 1.0;  // weight of the pull toward the parent level
};
// Lower bounds at the roofline: memory and decode attention no faster than 0.8 of their nominal
// time, GEMMs no faster than 0.6, prefill no faster than nominal. Unbounded, the factors traded
// off to unphysical values (decode attention 10x faster than the roofline) at the same held-out
// error (docs/simulator.md).
constexpr ThetaField kTheta[kThetaSize] = {
    {&Efficiency::fixed_scale, 0.05, 50},
    {&Efficiency::memory_scale, 0.8, 20},
    {&Efficiency::compute_scale, 0.6, 50},
    {&Efficiency::api_overhead_s, 1e-4, 3.0},
    {&Efficiency::request_scale, 0.01, 300},
    {&Efficiency::attention_scale, 0.8, 50},
    {&Efficiency::prefill_scale, 1.0, 20},
    // The front-end delay spans orders of magnitude between frameworks (0 on TRT-LLM, ~1e-4 s^2 on
    // SGLang/Blackwell): a wide first step and a weak pull toward the parent.
    {&Efficiency::frontend_delay_s2, 1e-8, 1e-2, 2.5, 0.02},
};
Theta theta_of(const Efficiency& e) {
  Theta t;
  for (int k = 0; k < kThetaSize; ++k) t[k] = e.*(kTheta[k].member);
  return t;
}
void apply_theta(Efficiency& e, const Theta& t) {
  for (int k = 0; k < kThetaSize; ++k) e.*(kTheta[k].member) = t[k];
}

struct Simulated {
  bool ok = false;
  std::string error;
  Theta theta0{};
  double ttft_s = 0, tpot_s = 0, tput_per_gpu = 0;
  CostBuckets ttft_cost{}, tpot_cost{};
};

// Each bucket scales with the product of its multipliers (cost_model.h, CostBucket).
double rescale(const CostBuckets& b, const Theta& t, const Theta& t0) {
  auto r = [&](int k) { return t0[k] > 0 ? t[k] / t0[k] : 1.0; };
  return b[kFixed] * r(kThFixed) + b[kMemory] * r(kThMemory) + b[kCompute] * r(kThCompute) + b[kOther] +
         b[kApi] * r(kThApi) + b[kRequest] * r(kThFixed) * r(kThRequest) + b[kAttention] * r(kThAttention) +
         b[kPrefill] * r(kThCompute) * r(kThPrefill) + b[kFrontend] * r(kThFrontend);
}
double total(const CostBuckets& b) {
  double sum = 0;
  for (double v : b) sum += v;
  return sum;
}

struct Prediction {
  double ttft_s, tpot_s, tput_per_gpu;
};
Prediction repredict(const Simulated& s, const MeasuredPoint& p, const Theta& t) {
  const double tpot_ratio = total(s.tpot_cost) > 0 ? rescale(s.tpot_cost, t, s.theta0) / total(s.tpot_cost) : 1.0;
  const double ttft_ratio = total(s.ttft_cost) > 0 ? rescale(s.ttft_cost, t, s.theta0) / total(s.ttft_cost) : 1.0;
  Prediction out;
  out.tpot_s = s.tpot_s * tpot_ratio;
  out.ttft_s = s.ttft_s * ttft_ratio;
  const double tokens = 0.9 * p.osl - 1;
  const double e2e0 = s.ttft_s + tokens * s.tpot_s;
  const double e2e = out.ttft_s + tokens * out.tpot_s;
  out.tput_per_gpu = e2e > 0 ? s.tput_per_gpu * e2e0 / e2e : s.tput_per_gpu;
  return out;
}

double log_error(double predicted, double measured) {
  if (!(predicted > 0) || !(measured > 0)) return 0;
  return std::log(predicted / measured);
}

constexpr double kWeightTpot = 1.0;
constexpr double kWeightTput = 1.0;
constexpr double kWeightTtft = 0.5;

// Huber loss on a log error: squared up to `delta`, linear beyond it.
double huber(double x, double delta) {
  const double a = std::abs(x);
  if (delta <= 0 || a <= delta) return x * x;
  return 2 * delta * a - delta * delta;
}

// Nelder-Mead over log(theta), bounded by clamping.
Theta minimise(const std::function<double(const Theta&)>& objective, const Theta& start) {
  constexpr int n = kThetaSize;
  using Vec = std::array<double, n>;
  auto to_theta = [](const Vec& v) {
    Theta t;
    for (int k = 0; k < n; ++k) t[k] = std::exp(std::clamp(v[k], std::log(kTheta[k].lo), std::log(kTheta[k].hi)));
    return t;
  };
  auto f = [&](const Vec& v) { return objective(to_theta(v)); };
  Vec x0;
  for (int k = 0; k < n; ++k) x0[k] = std::log(std::clamp(start[k], kTheta[k].lo, kTheta[k].hi));
  std::array<Vec, n + 1> simplex;
  std::array<double, n + 1> values;
  simplex[0] = x0;
  for (int i = 0; i < n; ++i) {
    simplex[i + 1] = x0;
    simplex[i + 1][i] += kTheta[i].step;
  }
  for (int i = 0; i <= n; ++i) values[i] = f(simplex[i]);
  for (int iteration = 0; iteration < 300 * n; ++iteration) {
    std::array<int, n + 1> order;
    for (int i = 0; i <= n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return values[a] < values[b]; });
    std::array<Vec, n + 1> s2;
    std::array<double, n + 1> v2;
    for (int i = 0; i <= n; ++i) {
      s2[i] = simplex[order[i]];
      v2[i] = values[order[i]];
    }
    simplex = s2;
    values = v2;
    if (values[n] - values[0] < 1e-10) break;
    Vec centroid{};
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < n; ++k) centroid[k] += simplex[i][k] / n;
    auto along = [&](double t) {
      Vec v;
      for (int k = 0; k < n; ++k) v[k] = centroid[k] + t * (simplex[n][k] - centroid[k]);
      return v;
    };
    Vec reflected = along(-1);
    double fr = f(reflected);
    if (fr < values[0]) {
      Vec expanded = along(-2);
      double fe = f(expanded);
      if (fe < fr) {
        simplex[n] = expanded;
        values[n] = fe;
      } else {
        simplex[n] = reflected;
        values[n] = fr;
      }
    } else if (fr < values[n - 1]) {
      simplex[n] = reflected;
      values[n] = fr;
    } else {
      Vec contracted = along(0.5);
      double fc = f(contracted);
      if (fc < values[n]) {
        simplex[n] = contracted;
        values[n] = fc;
      } else {
        for (int i = 1; i <= n; ++i) {
          for (int k = 0; k < n; ++k) simplex[i][k] = simplex[0][k] + 0.5 * (simplex[i][k] - simplex[0][k]);
          values[i] = f(simplex[i]);
        }
      }
    }
  }
  int best = int(std::min_element(values.begin(), values.end()) - values.begin());
  return to_theta(simplex[best]);
}

// Loss of one point under theta: Huber on the log errors of TPOT, tput_per_gpu and TTFT.
double point_loss(const Simulated& s, const MeasuredPoint& p, const Theta& t, double huber_delta) {
  if (!s.ok) return 0;
  const auto pred = repredict(s, p, t);
  return kWeightTpot * huber(log_error(pred.tpot_s, p.tpot_s), huber_delta) +
         kWeightTput * huber(log_error(pred.tput_per_gpu, p.tput_per_gpu), huber_delta) +
         kWeightTtft * huber(log_error(pred.ttft_s, p.ttft_s), huber_delta);
}

Theta fit_group(const std::vector<size_t>& members, const std::vector<MeasuredPoint>& points,
                const std::vector<Simulated>& sims, const Theta& prior, double ridge, double huber_delta) {
  auto objective = [&](const Theta& t) {
    double sum = 0;
    for (size_t i : members) sum += point_loss(sims[i], points[i], t, huber_delta);
    double penalty = 0;
    for (int k = 0; k < kThetaSize; ++k) {
      const double r = std::log(t[k] / prior[k]);
      penalty += kTheta[k].ridge * r * r;
    }
    return sum + ridge * penalty;
  };
  // The objective is flat in the front-end delay while it is tiny (a microsecond-scale delay
  // changes nothing), so a start from a negligible parent value never finds a real front-end
  // queue: also start from delays that matter and keep the best.
  Theta best = minimise(objective, prior);
  double best_value = objective(best);
  for (double frontend : {3e-6, 3e-5, 3e-4}) {
    Theta start = prior;
    start[kThFrontend] = frontend;
    const Theta candidate = minimise(objective, start);
    const double value = objective(candidate);
    if (value < best_value) {
      best = candidate;
      best_value = value;
    }
  }
  return best;
}

Simulated simulate(const MeasuredPoint& point, const CalibrationTable& table, const FitOptions& options) {
  Simulated out;
  auto engine = resolve_engine(point.engine, &table);
  if (!engine) {
    out.error = engine.error().message();
    return out;
  }
  out.theta0 = theta_of(engine->efficiency);
  PredictOptions predict;
  predict.engine = point.engine;
  predict.isl = point.isl;
  predict.osl = point.osl;
  predict.num_prompts = std::min(10 * point.conc, std::max(options.max_prompts, point.conc * 3));
  // The measured run sent 10 x conc requests: keep the t=0 burst at its measured share.
  predict.represented_prompts = 10 * point.conc;
  predict.record_costs = true;
  predict.metric_percentiles = {};
  predict.summary_only = true;
  auto result = predict_point(*engine, predict, point.conc);
  if (!result) {
    out.error = result.error().message();
    return out;
  }
  // The simulated GPU count can differ from gpus_total only on rows already skipped.
  out.ok = true;
  out.ttft_s = result->median_ttft_s;
  out.tpot_s = result->median_tpot_s;
  out.tput_per_gpu = result->tput_per_gpu;
  out.ttft_cost = result->ttft_cost;
  out.tpot_cost = result->tpot_cost;
  return out;
}

std::vector<Simulated> simulate_all(const std::vector<MeasuredPoint>& points, const CalibrationTable& table,
                                    const FitOptions& options) {
  std::vector<Simulated> sims(points.size());
  std::atomic<size_t> next{0};
  const unsigned workers =
      options.jobs > 0 ? static_cast<unsigned>(options.jobs) : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < workers; ++w)
    threads.emplace_back([&] {
      for (size_t i = next++; i < points.size(); i = next++) sims[i] = simulate(points[i], table, options);
    });
  for (auto& thread : threads) thread.join();
  return sims;
}

}  // namespace

Result<CsvLoad> load_measured_csv(const std::string& path) {
  auto text =
      files::read_text_file(path, files::kMaxConfigFileBytes,
                            "a measured CSV file (--csv), such as ../shared/data/calibration/measured_dsr1.csv");
  if (!text) return fail(text.error());
  std::istringstream in(*text);
  std::string line;
  if (!std::getline(in, line)) return fail(ErrorCode::kParse, fmt::format("{}: empty file", path));
  std::map<std::string, size_t> columns;
  auto header = split_csv_line(line);
  for (size_t i = 0; i < header.size(); ++i) columns[header[i]] = i;
  for (const char* needed :
       {"hardware", "framework", "precision", "spec_decoding", "tp", "ep", "dp_attention", "isl", "osl", "conc",
        "median_ttft_s", "median_tpot_s", "tput_per_gpu", "gpus_total", "is_multinode"})
    if (!columns.contains(needed)) return fail(ErrorCode::kParse, fmt::format("{}: missing column '{}'", path, needed));
  CsvLoad load;
  std::vector<std::string> errors;
  int32_t number = 1;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line == "\r") continue;
    auto fields = split_csv_line(line);
    const std::string where = fmt::format("{}:{}", path, number);
    if (fields.size() != header.size()) {
      errors.push_back(fmt::format("{}: {} fields, the header has {}", where, fields.size(), header.size()));
      continue;
    }
    const size_t errors_before = errors.size();
    CsvRow row(columns, std::move(fields), where, errors);
    MeasuredPoint p;
    p.line = number;
    p.hardware = row.text("hardware");
    p.framework = row.text("framework");
    p.precision = row.text("precision");
    p.isl = row.integer("isl");
    p.osl = row.integer("osl");
    p.conc = row.integer("conc");
    p.gpus_total = row.integer("gpus_total");
    p.multinode = row.flag("is_multinode");
    p.ttft_s = row.number("median_ttft_s").value_or(0);
    p.tpot_s = row.number("median_tpot_s").value_or(0);
    p.tput_per_gpu = row.number("tput_per_gpu").value_or(0);
    // Read every field the row may use now, so a malformed one is reported even if the row is
    // skipped for another reason.
    for (const char* name : {"tp", "ep", "prefill_num_workers", "prefill_tp", "prefill_ep", "decode_num_workers",
                             "decode_tp", "decode_ep"})
      (void)row.integer(name);
    for (const char* name : {"is_multinode", "disagg", "dp_attention", "prefill_dp_attention", "decode_dp_attention"})
      (void)row.flag(name);
    if (errors.size() != errors_before) continue;
    if (p.isl <= 0 || p.osl <= 0 || p.conc <= 0 || p.ttft_s <= 0 || p.tpot_s <= 0 || p.tput_per_gpu <= 0 ||
        p.gpus_total <= 0) {
      load.skipped.push_back(fmt::format("{}: missing or non-positive isl/osl/conc/latency/throughput", where));
      continue;
    }
    // A disaggregated deployment recorded without its prefill/decode workers (the source flags
    // these `legacy_disagg_gpu_fields`): its split is unknown, and read as one engine of
    // gpus_total GPUs it would be fitted as something it was not (a TP72 engine for a 72-GPU
    // deployment).
    if (row.flag("disagg") && !row.flag("is_multinode") && row.integer("prefill_num_workers") == 0 &&
        row.integer("decode_num_workers") == 0) {
      load.skipped.push_back(
          fmt::format("{}: disaggregated, but without prefill/decode workers (split unknown)", where));
      continue;
    }
    EngineConfig& c = p.engine;
    c.model = "deepseek-r1";
    c.hardware = p.hardware;
    c.framework = p.framework;
    c.precision = p.precision;
    auto spec = parse_spec_decoding(row.text("spec_decoding"));
    if (!spec) {
      errors.push_back(fmt::format("{}: {}", where, spec.error().message()));
      continue;
    }
    c.spec_decoding = *spec;
    if (row.flag("is_multinode")) {
      WorkerTopology prefill{row.integer("prefill_num_workers"), row.integer("prefill_tp", 1),
                             row.integer("prefill_ep", 1), row.flag("prefill_dp_attention")};
      WorkerTopology decode{row.integer("decode_num_workers"), row.integer("decode_tp", 1), row.integer("decode_ep", 1),
                            row.flag("decode_dp_attention")};
      auto gpus = [](const WorkerTopology& t) { return t.num_workers * std::max({1, t.tp, t.ep}); };
      if (gpus(prefill) + gpus(decode) != p.gpus_total && prefill.tp == 1 && decode.tp == 1 && prefill.ep == 1 &&
          decode.ep == 1) {
        // Legacy rows record tp=1 for attention-DP workers: spread the GPUs over the workers.
        const int32_t workers = prefill.num_workers + decode.num_workers;
        if (workers > 0 && p.gpus_total % workers == 0) {
          const int32_t per = p.gpus_total / workers;
          prefill.tp = prefill.ep = decode.tp = decode.ep = per;
        }
      }
      if (gpus(prefill) + gpus(decode) != p.gpus_total) {
        load.skipped.push_back(fmt::format("{}: workers x GPUs ({}) != gpus_total ({})", where,
                                           gpus(prefill) + gpus(decode), p.gpus_total));
        continue;
      }
      if (prefill.num_workers > 0 && decode.num_workers > 0) {
        c.disagg = true;
        c.prefill = prefill;
        c.decode = decode;
      } else {
        const WorkerTopology& only = prefill.num_workers > 0 ? prefill : decode;
        c.tp = only.tp;
        c.ep = only.ep;
        c.dp_attn = only.dp_attn;
        c.num_replicas = std::max(1, only.num_workers);
      }
    } else {
      c.tp = row.integer("tp", 1);
      c.ep = row.integer("ep", 1);
      c.dp_attn = row.flag("dp_attention");
      if (total_gpus(c) != p.gpus_total) {
        load.skipped.push_back(
            fmt::format("{}: tp/ep ({} GPUs) != gpus_total ({})", where, total_gpus(c), p.gpus_total));
        continue;
      }
    }
    if (auto ok = validate(c); !ok) {
      errors.push_back(fmt::format("{}: {}", where, ok.error().message()));
      continue;
    }
    p.series = fmt::format("{}|{}|{}|{}|{}x{}|{}", p.hardware, p.framework, p.precision,
                           spec_decoding_name(c.spec_decoding), p.isl, p.osl, topology_key(c));
    load.points.push_back(std::move(p));
  }
  if (!errors.empty()) {
    std::string message =
        fmt::format("{} malformed field(s) in the measured CSV (fix or remove those rows):", errors.size());
    for (size_t i = 0; i < std::min<size_t>(errors.size(), 10); ++i) message += "\n  " + errors[i];
    if (errors.size() > 10) message += fmt::format("\n  ... and {} more", errors.size() - 10);
    return fail(ErrorCode::kParse, message);
  }
  return load;
}

namespace {
// What the calibration source says about the split (empty: every point was fitted).
std::string holdout_description(const FitOptions& options) {
  std::string out;
  if (options.holdout) out += ", lowest and highest concurrency of each series only";
  if (options.holdout_series >= 2)
    out += fmt::format(", one series in {} of each hardware held out whole", options.holdout_series);
  return out;
}
}  // namespace

std::vector<bool> fitting_points(const std::vector<MeasuredPoint>& points, const FitOptions& options) {
  std::vector<bool> fitted(points.size(), true);
  if (options.holdout) {
    std::map<std::string, std::pair<int32_t, int32_t>> range;
    for (const auto& p : points) {
      auto [it, inserted] = range.try_emplace(p.series, p.conc, p.conc);
      it->second.first = std::min(it->second.first, p.conc);
      it->second.second = std::max(it->second.second, p.conc);
    }
    for (size_t i = 0; i < points.size(); ++i) {
      const auto& [lo, hi] = range[points[i].series];
      fitted[i] = points[i].conc == lo || points[i].conc == hi;
    }
  }
  if (options.holdout_series >= 2) {
    // Series keys start with the hardware, so a sorted set numbers each hardware's series in key
    // order; the numbering restarts at every hardware.
    std::set<std::string> keys;
    for (const auto& p : points) keys.insert(p.series);
    std::map<std::string, bool> held_out;
    std::string hardware;
    int32_t index = 0;
    for (const auto& key : keys) {
      std::string hw = key.substr(0, key.find('|'));
      if (hw != hardware) {
        hardware = hw;
        index = 0;
      }
      held_out[key] = index++ % options.holdout_series == options.holdout_series - 1;
    }
    for (size_t i = 0; i < points.size(); ++i)
      if (held_out[points[i].series]) fitted[i] = false;
  }
  return fitted;
}

Result<FitReport> fit_calibration(const CsvLoad& data, const FitOptions& options,
                                  const std::function<void(const std::string&)>& progress) {
  const auto& points = data.points;
  if (points.empty()) return fail(ErrorCode::kInvalidArgument, "no usable measured points to fit on");
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };

  if (options.holdout_series == 1 || options.holdout_series < 0)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("holdout_series must be 0 (off) or >= 2, got {}", options.holdout_series));
  // Never empty: each hardware's first series keeps its lowest and highest concurrency.
  std::vector<bool> fitted = fitting_points(points, options);

  std::vector<size_t> all;
  for (size_t i = 0; i < points.size(); ++i)
    if (fitted[i]) all.push_back(i);

  // One round of fitting on simulated buckets: every level, each starting from its parent.
  auto fit_levels = [&](const std::vector<Simulated>& sims, const CalibrationTable& table) {
    // Level 0 (all hardware; every device level's parent): the single-node points when there are
    // at least 10, for the reason the device levels use them (below): multi-node rows fold router,
    // KV-transfer and cross-node behaviour into the factors. Held-out mi300x TPOT 15.6 -> 12.9 %,
    // all 8.7/8.4/11.4 -> 8.7/8.2/10.8 % (docs/simulator.md).
    auto single_node_of = [&](const std::vector<size_t>& members) {
      std::vector<size_t> single;
      for (size_t i : members)
        if (!points[i].multinode) single.push_back(i);
      return single;
    };
    CalibrationTable next;
    Efficiency defaults = table.defaults();
    std::vector<size_t> level0 = single_node_of(all);
    if (level0.size() < 10) level0 = all;
    apply_theta(defaults, fit_group(level0, points, sims, theta_of(table.defaults()), 0.01, options.huber_delta));
    next.set_defaults(defaults);
    // Level 1: per hardware; level 1b: per (hardware, spec decoding); level 2: per (hardware,
    // framework, precision); level 3: per (hardware, framework, precision, spec decoding).
    std::map<std::string, std::vector<size_t>> by_hardware;
    std::map<std::pair<std::string, std::string>, std::vector<size_t>> by_spec;
    std::map<std::tuple<std::string, std::string, std::string>, std::vector<size_t>> by_group;
    std::map<std::tuple<std::string, std::string, std::string, std::string>, std::vector<size_t>> by_group_spec;
    auto spec_of = [&](size_t i) { return spec_decoding_name(points[i].engine.spec_decoding); };
    for (size_t i : all) {
      by_hardware[points[i].hardware].push_back(i);
      by_spec[{points[i].hardware, spec_of(i)}].push_back(i);
      by_group[{points[i].hardware, points[i].framework, points[i].precision}].push_back(i);
      by_group_spec[{points[i].hardware, points[i].framework, points[i].precision, spec_of(i)}].push_back(i);
    }
    // A device's own level (what every engine on it falls back to) is fitted on its single-node
    // rows where it has at least 3: multi-node rows mix the device's kernels with router,
    // prefill-queue, KV-transfer and cross-node behaviour (held-out mi355x TPOT 14.1 -> 11.1 %,
    // h200 5.6 -> 4.2 %). Devices with only multi-node rows (h100, gb200, gb300) are fitted on
    // those: with the all-hardware level as their parent instead, gb300's in-sample throughput
    // error rose from 9 % to 21 %.
    auto group_of = [&](std::string hardware, std::string framework, std::string precision, std::string spec,
                        const Efficiency& e, const std::vector<size_t>& members) {
      CalibrationGroup group{std::move(hardware),    std::move(framework), std::move(precision), std::move(spec), e,
                             int32_t(members.size())};
      group.single_node_rows = int32_t(single_node_of(members).size());
      return group;
    };
    std::map<std::string, Efficiency> hardware_level;
    for (const auto& [hardware, members] : by_hardware) {
      const std::vector<size_t> single_node = single_node_of(members);
      const std::vector<size_t>& rows = single_node.size() >= 3 ? single_node : members;
      Efficiency e = defaults;
      apply_theta(e, fit_group(rows, points, sims, theta_of(defaults), 0.05, options.huber_delta));
      hardware_level[hardware] = e;
      next.add(group_of(hardware, "*", "*", "*", e, rows));
    }
    auto parent_of = [&](const std::string& hardware) {
      auto it = hardware_level.find(hardware);
      return it != hardware_level.end() ? it->second : defaults;
    };
    for (const auto& [key, members] : by_spec) {
      const auto& [hardware, spec] = key;
      if (!options.spec_groups || spec == "none" || members.size() < 3) continue;
      Efficiency e = parent_of(hardware);
      apply_theta(e, fit_group(members, points, sims, theta_of(e), 0.1, options.huber_delta));
      next.add(group_of(hardware, "*", "*", spec, e, members));
    }
    std::map<std::tuple<std::string, std::string, std::string>, Efficiency> group_level;
    for (const auto& [key, members] : by_group) {
      const auto& [hardware, framework, precision] = key;
      if (members.size() < 3) continue;
      Efficiency e = parent_of(hardware);
      apply_theta(e, fit_group(members, points, sims, theta_of(e), 0.1, options.huber_delta));
      group_level[key] = e;
      next.add(group_of(hardware, framework, precision, "*", e, members));
    }
    for (const auto& [key, members] : by_group_spec) {
      const auto& [hardware, framework, precision, spec] = key;
      if (!options.spec_groups || members.size() < 3) continue;
      auto parent = group_level.find({hardware, framework, precision});
      Efficiency e = parent != group_level.end() ? parent->second : parent_of(hardware);
      apply_theta(e, fit_group(members, points, sims, theta_of(e), 0.1, options.huber_delta));
      next.add(group_of(hardware, framework, precision, spec, e, members));
    }
    return next;
  };
  // Total loss of the fitting points, each under the group a prediction would use.
  auto table_loss = [&](const std::vector<Simulated>& sims, const CalibrationTable& table) {
    double sum = 0;
    for (size_t i : all) {
      const auto& c = points[i].engine;
      const Efficiency e =
          table.lookup(points[i].hardware, c.framework, c.precision, std::string(spec_decoding_name(c.spec_decoding)));
      sum += point_loss(sims[i], points[i], theta_of(e), options.huber_delta);
    }
    return sum;
  };
  auto simulate_round = [&](int32_t round, const CalibrationTable& table) {
    auto sims = simulate_all(points, table, options);
    size_t failures = 0;
    for (const auto& s : sims) failures += s.ok ? 0 : 1;
    if (failures > 0) say(fmt::format("round {}: {} points failed to simulate", round + 1, failures));
    return sims;
  };

  CalibrationTable table;
  table.set_source("nominal");
  double routing_exponent = 1.0;
  struct BestRound {
    double loss = 0;
    int32_t round = 0;  // refits that made this table (its name in "round N's table")
    CalibrationTable table;
    std::vector<Simulated> sims;
  };
  std::optional<BestRound> best_round;
  if (options.evaluate_only) {
    auto builtin = CalibrationTable::builtin();
    if (!builtin) return fail(builtin.error());
    table = std::move(*builtin);
    std::fill(fitted.begin(), fitted.end(), false);
  }
  for (int32_t round = 0; round < (options.evaluate_only ? 0 : options.iterations); ++round) {
    if (round == 0 && options.routing_exponents.size() > 1) {
      // The routing exponent changes the expert reads of every step non-linearly, so it is not
      // rescaled in closed form: each candidate is simulated and fitted, the one whose fitted
      // table has the lowest loss on the fitting points is kept for every group.
      std::optional<CalibrationTable> best;
      double best_loss = 0;
      for (double a : options.routing_exponents) {
        say(fmt::format("round 1: simulating {} points, expert routing exponent {}", points.size(), a));
        CalibrationTable start = table;
        Efficiency defaults = start.defaults();
        defaults.expert_routing_exponent = a;
        start.set_defaults(defaults);
        const auto sims = simulate_round(round, start);
        CalibrationTable next = fit_levels(sims, start);
        const double loss = table_loss(sims, next);
        say(fmt::format("round 1: routing exponent {}: loss {:.3f}", a, loss));
        if (!best || loss < best_loss) {
          best = std::move(next);
          best_loss = loss;
          routing_exponent = a;
        }
      }
      table = std::move(*best);
      continue;
    }
    say(fmt::format("round {}: simulating {} points", round + 1, points.size()));
    auto sims = simulate_round(round, table);
    // The refit is a closed-form rescaling around the last simulation, blind to queueing that
    // starts or stops with the new factors: the table just simulated is a candidate of its own,
    // judged on its simulated (not rescaled) loss.
    const double loss = table_loss(sims, table);
    say(fmt::format("round {}: simulated loss of round {}'s table {:.3f}", round + 1, round, loss));
    CalibrationTable next = fit_levels(sims, table);
    if (!best_round || loss < best_round->loss) best_round = BestRound{loss, round, std::move(table), std::move(sims)};
    table = std::move(next);
  }
  std::vector<Simulated> final_sims;
  if (options.evaluate_only) {
    say("simulating every point with the built-in factors");
    final_sims = simulate_all(points, table, options);
    say(
        fmt::format("simulated loss of the built-in table on these points {:.3f} (the fit's objective: compare "
                    "with a refit's 'final: simulated loss')",
                    table_loss(final_sims, table)));
  } else {
    say("final: simulating every point with the fitted factors");
    final_sims = simulate_all(points, table, options);
    const double loss = table_loss(final_sims, table);
    say(fmt::format("final: simulated loss of round {}'s table {:.3f}", options.iterations, loss));
    int32_t kept_round = options.iterations;
    if (best_round && best_round->loss < loss) {
      say(fmt::format("final: keeping round {}'s table (lower simulated loss)", best_round->round));
      table = std::move(best_round->table);
      final_sims = std::move(best_round->sims);
      kept_round = best_round->round;
    }
    table.set_source(fmt::format(
        "fitted by `ixbench sim calibrate` on {} measured DeepSeek-R1 points (data/calibration/measured_dsr1.csv){}; "
        "{} rounds, round {}'s table kept (the lowest simulated loss); levels: all hardware (defaults), per "
        "hardware (hw/*/*), per hardware/framework/precision with >= 3 points{}; Huber loss on log errors, delta {}; "
        "expert routing exponent {} (searched over {})",
        std::count(fitted.begin(), fitted.end(), true), holdout_description(options), options.iterations, kept_round,
        options.spec_groups ? ", and per speculative-decoding method" : "", options.huber_delta, routing_exponent,
        fmt::join(options.routing_exponents, ", ")));
  }
  FitReport report;
  report.table = std::move(table);
  report.skipped = data.skipped;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!final_sims[i].ok) {
      report.skipped.push_back(fmt::format("line {}: simulation failed: {}", points[i].line, final_sims[i].error));
      continue;
    }
    PointResidual r;
    r.point = &points[i];
    r.fitted = fitted[i];
    r.ttft_s = final_sims[i].ttft_s;
    r.tpot_s = final_sims[i].tpot_s;
    r.tput_per_gpu = final_sims[i].tput_per_gpu;
    report.residuals.push_back(r);
  }
  return report;
}

RowJoin join_sweep_rows(CsvLoad& data, const boost::json::array& rows) {
  RowJoin join;
  auto catalog = Catalog::builtin();
  auto canonical = [&](const std::string& hardware) -> std::string {
    if (!catalog) return hardware;
    auto spec = catalog->hardware(hardware);
    return spec ? (*spec)->name : hardware;
  };
  auto same_side = [](const WorkerTopology& a, const WorkerTopology& b) {
    return a.num_workers == b.num_workers && a.tp == b.tp && a.ep == b.ep && a.dp_attn == b.dp_attn;
  };
  std::vector<RowWorkload> parsed;
  std::vector<std::string> parsed_hardware;
  for (const auto& value : rows) {
    if (!value.is_object()) {
      ++join.rows_skipped;
      continue;
    }
    auto row = parse_sweep_row(value.as_object(), EngineConfig{});
    if (!row || !row->engine.disagg) {
      ++join.rows_skipped;
      continue;
    }
    ++join.rows_used;
    parsed_hardware.push_back(canonical(row->engine.hardware));
    parsed.push_back(std::move(*row));
  }
  for (auto& point : data.points) {
    EngineConfig& c = point.engine;
    if (!c.disagg) continue;
    const std::string hardware = canonical(c.hardware);
    struct Limits {
      int32_t decode_batch = 0, prefill_batch = 0, draft_tokens = 0;
      int32_t prefill_budget = 0, decode_reserved = 0;
      int64_t prefill_kv = 0, decode_kv = 0;
      bool operator==(const Limits&) const = default;
    };
    std::optional<Limits> found;
    bool matched = false, ambiguous = false;
    for (size_t i = 0; i < parsed.size(); ++i) {
      const RowWorkload& row = parsed[i];
      const EngineConfig& r = row.engine;
      if (parsed_hardware[i] != hardware || r.framework != c.framework || r.precision != c.precision ||
          r.spec_decoding != c.spec_decoding || row.isl != point.isl || row.osl != point.osl ||
          !same_side(r.prefill, c.prefill) || !same_side(r.decode, c.decode) ||
          std::find(row.concurrencies.begin(), row.concurrencies.end(), point.conc) == row.concurrencies.end())
        continue;
      matched = true;
      const Limits says{r.decode.max_num_seqs,
                        r.prefill.max_num_seqs,
                        r.num_spec_tokens,
                        r.prefill.max_num_batched_tokens,
                        r.decode.reserved_decode_tokens,
                        r.prefill.max_kv_tokens,
                        r.decode.max_kv_tokens};
      if (says == Limits{}) continue;  // a row that names no limits does not contradict one that does
      if (found && *found != says) ambiguous = true;
      found = says;
    }
    if (matched) ++join.points_matched;
    if (!found) continue;
    if (ambiguous) {
      ++join.points_ambiguous;
      continue;
    }
    bool changed = false;
    if (found->decode_batch > 0) {
      c.decode.max_num_seqs = found->decode_batch;
      changed = true;
    }
    if (found->prefill_batch > 0) {
      c.prefill.max_num_seqs = found->prefill_batch;
      changed = true;
    }
    for (auto [field, value] : {std::pair{&c.prefill.max_kv_tokens, found->prefill_kv},
                                std::pair{&c.decode.max_kv_tokens, found->decode_kv}}) {
      if (value > 0) {
        *field = value;
        changed = true;
      }
    }
    for (auto [field, value] : {std::pair{&c.prefill.max_num_batched_tokens, found->prefill_budget},
                                std::pair{&c.decode.reserved_decode_tokens, found->decode_reserved}}) {
      if (value > 0) {
        *field = value;
        changed = true;
      }
    }
    if (found->draft_tokens > 0 && c.spec_decoding != SpecDecoding::kNone) {
      c.num_spec_tokens = found->draft_tokens;
      changed = true;
    }
    if (changed) ++join.points_changed;
  }
  return join;
}

std::string residual_table(const FitReport& report, bool held_out_only) {
  std::map<std::string, std::array<std::vector<double>, 3>> errors;
  for (const auto& r : report.residuals) {
    if (held_out_only && r.fitted) continue;
    auto& e = errors[r.point->hardware];
    e[0].push_back(std::abs(r.tpot_s / r.point->tpot_s - 1));
    e[1].push_back(std::abs(r.tput_per_gpu / r.point->tput_per_gpu - 1));
    e[2].push_back(std::abs(r.ttft_s / r.point->ttft_s - 1));
  }
  std::string out = "| hardware | points | TPOT | tput_per_gpu | TTFT |\n|---|---:|---:|---:|---:|\n";
  std::array<std::vector<double>, 3> all;
  for (const auto& [hardware, e] : errors) {
    out += fmt::format("| {} | {} | {:.1f}% | {:.1f}% | {:.1f}% |\n", hardware, e[0].size(),
                       100 * metrics::median(e[0]), 100 * metrics::median(e[1]), 100 * metrics::median(e[2]));
    for (int k = 0; k < 3; ++k) all[k].insert(all[k].end(), e[k].begin(), e[k].end());
  }
  out += fmt::format("| all | {} | {:.1f}% | {:.1f}% | {:.1f}% |\n", all[0].size(), 100 * metrics::median(all[0]),
                     100 * metrics::median(all[1]), 100 * metrics::median(all[2]));
  return out;
}

}  // namespace ix::sim
