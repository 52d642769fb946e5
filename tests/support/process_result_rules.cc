#include "support/process_result_rules.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <cctype>
#include <cstdlib>
#include <string_view>

namespace ix::testing {
namespace {

// Python's float(value), or why it raises.
ix::Result<double> python_float(std::string_view key, const boost::json::value& value) {
  if (value.is_double()) return value.as_double();
  if (value.is_int64()) return static_cast<double>(value.as_int64());
  if (value.is_uint64()) return static_cast<double>(value.as_uint64());
  if (value.is_bool()) return value.as_bool() ? 1.0 : 0.0;
  if (value.is_string()) {
    std::string text(value.as_string());
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    size_t first = 0;
    while (first < text.size() && std::isspace(static_cast<unsigned char>(text[first]))) ++first;
    text = text.substr(first);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (!text.empty() && end == text.c_str() + text.size()) return v;
    return ix::fail(ix::ErrorCode::kInvalidArgument,
                    fmt::format("ValueError: could not convert string to float: '{}' (key '{}')", text, key));
  }
  const char* type = value.is_null() ? "NoneType" : value.is_array() ? "list" : "dict";
  return ix::fail(
      ix::ErrorCode::kInvalidArgument,
      fmt::format("TypeError: float() argument must be a string or a real number, not '{}' (key '{}')", type, key));
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace

ix::Result<std::set<std::string>> process_result_metric_keys(const boost::json::object& raw) {
  std::set<std::string> keys;
  for (const auto& [key_view, value] : raw) {
    const std::string key(key_view);
    if (key.ends_with("ms")) {
      auto v = python_float(key, value);
      if (!v) return std::unexpected(v.error());
      keys.insert(replace_all(key, "_ms", ""));
    }
    if (key.find("tpot") != std::string::npos) {
      auto v = python_float(key, value);
      if (!v) return std::unexpected(v.error());
      if (*v == 0.0)
        return ix::fail(ix::ErrorCode::kInvalidArgument, fmt::format("ZeroDivisionError: float division by zero "
                                                                     "(key '{}')",
                                                                     key));
      keys.insert(replace_all(replace_all(key, "_ms", ""), "tpot", "intvty"));
    }
  }
  return keys;
}

ix::Result<std::set<std::string>> process_result_agg_keys(const boost::json::object& raw) {
  for (const char* key : {"model_id", "max_concurrency", "total_token_throughput", "output_throughput"}) {
    if (!raw.contains(key)) return ix::fail(ix::ErrorCode::kNotFound, fmt::format("KeyError: '{}'", key));
  }
  if (!raw.at("max_concurrency").is_int64())
    return ix::fail(ix::ErrorCode::kInvalidArgument, "int(bmk_result['max_concurrency']) fails: not an integer");
  for (const char* key : {"total_token_throughput", "output_throughput"}) {
    if (auto v = python_float(key, raw.at(key)); !v) return std::unexpected(v.error());
  }
  auto keys = process_result_metric_keys(raw);
  if (!keys) return keys;
  for (const char* key : {"hw",
                          "conc",
                          "image",
                          "model",
                          "infmax_model_prefix",
                          "framework",
                          "precision",
                          "spec_decoding",
                          "disagg",
                          "recipe_fingerprint",
                          "isl",
                          "osl",
                          "is_multinode",
                          "tp",
                          "pp",
                          "dcp_size",
                          "pcp_size",
                          "ep",
                          "dp_attention",
                          "tput_per_gpu",
                          "output_tput_per_gpu",
                          "input_tput_per_gpu"})
    keys->insert(key);
  return keys;
}

}  // namespace ix::testing
