#include "config/lm_eval_task.h"

#include <fmt/format.h>

#include "common/file_io.h"
#include "config/yaml_reader.h"

namespace ix::config {

namespace {

// Task YAMLs are a few kB; a larger file is not a task.
constexpr size_t kMaxTaskFileBytes = 4 * 1024 * 1024;

// Keys are not checked for repeats: a task file's repeated key calls its handler again.
class TaskReader : public YamlReader {
 public:
  explicit TaskReader(std::string_view source)
      : YamlReader(std::string(source), unknown_key_message, RepeatedKeys::kAllow) {}

  Result<bool> boolean(const YamlNode& node, std::string_view key) const {
    if (auto value = node.as_bool()) return *value;
    return error(node, fmt::format("'{}' must be true or false, got {}", key, node.describe()));
  }
  Result<int> integer(const YamlNode& node, std::string_view key) const {
    if (auto value = node.as_int(); value && *value >= -1'000'000 && *value <= 1'000'000)
      return static_cast<int>(*value);
    return error(node, fmt::format("'{}' must be a whole number, got {}", key, node.describe()));
  }
  Result<double> number(const YamlNode& node, std::string_view key) const {
    if (auto value = node.as_float()) return *value;
    return error(node, fmt::format("'{}' must be a number, got {}", key, node.describe()));
  }
  Result<std::vector<std::string>> strings(const YamlNode& node, std::string_view key) const {
    std::vector<std::string> out;
    if (node.is_scalar()) {
      out.push_back(node.scalar);
      return out;
    }
    if (!node.is_sequence()) return error(node, fmt::format("'{}' must be a list of strings", key));
    for (const auto& item : node.items) {
      auto text = string(item, key);
      if (!text) return std::unexpected(text.error());
      out.push_back(std::move(*text));
    }
    return out;
  }

 private:
  static std::string unknown_key_message(std::string_view what, std::string_view key, std::string_view known) {
    return fmt::format("{}: '{}' is not supported by ixbench's lm-eval task reader (known: {})", what, key, known);
  }
};

Result<LmEvalMetric> read_metric(const TaskReader& r, const YamlNode& node) {
  LmEvalMetric m;
  auto ok = r.each(node, "metric_list entry",
                   {{"metric",
                     [&](const YamlNode& v) -> Result<void> {
                       IX_READ(m.metric, r.string(v, "metric"));
                       return {};
                     }},
                    {"aggregation",
                     [&](const YamlNode& v) -> Result<void> {
                       IX_READ(m.aggregation, r.string(v, "aggregation"));
                       return {};
                     }},
                    {"higher_is_better",
                     [&](const YamlNode& v) -> Result<void> {
                       IX_READ(m.higher_is_better, r.boolean(v, "higher_is_better"));
                       return {};
                     }},
                    {"ignore_case",
                     [&](const YamlNode& v) -> Result<void> {
                       IX_READ(m.ignore_case, r.boolean(v, "ignore_case"));
                       return {};
                     }},
                    {"ignore_punctuation",
                     [&](const YamlNode& v) -> Result<void> {
                       IX_READ(m.ignore_punctuation, r.boolean(v, "ignore_punctuation"));
                       return {};
                     }},
                    {"regexes_to_ignore", [&](const YamlNode& v) -> Result<void> {
                       IX_READ(m.regexes_to_ignore, r.strings(v, "regexes_to_ignore"));
                       return {};
                     }}});
  if (!ok) return std::unexpected(ok.error());
  if (m.metric != "exact_match")
    return r.error(node, fmt::format("metric '{}' is not supported (exact_match is)", m.metric));
  if (m.aggregation != "mean")
    return r.error(node, fmt::format("aggregation '{}' is not supported (mean is)", m.aggregation));
  return m;
}

Result<LmEvalFilter> read_filter(const TaskReader& r, const YamlNode& node) {
  LmEvalFilter f;
  bool has_regex = false;
  bool has_take_first = false;
  auto steps = [&](const YamlNode& list) -> Result<void> {
    if (!list.is_sequence()) return r.error(list, "'filter' must be a list of steps");
    for (const auto& step : list.items) {
      std::string function;
      auto ok = r.each(step, "filter step",
                       {{"function",
                         [&](const YamlNode& v) -> Result<void> {
                           IX_READ(function, r.string(v, "function"));
                           return {};
                         }},
                        {"regex_pattern",
                         [&](const YamlNode& v) -> Result<void> {
                           IX_READ(f.regex_pattern, r.string(v, "regex_pattern"));
                           return {};
                         }},
                        {"group_select",
                         [&](const YamlNode& v) -> Result<void> {
                           IX_READ(f.group_select, r.integer(v, "group_select"));
                           return {};
                         }},
                        {"fallback", [&](const YamlNode& v) -> Result<void> {
                           IX_READ(f.fallback, r.string(v, "fallback"));
                           return {};
                         }}});
      if (!ok) return ok;
      if (function == "regex") {
        if (has_regex || has_take_first) return r.error(step, "one regex step, before take_first, is supported");
        has_regex = true;
      } else if (function == "take_first") {
        has_take_first = true;
      } else {
        return r.error(step, fmt::format("filter function '{}' is not supported (regex, take_first are)", function));
      }
    }
    return {};
  };
  auto ok = r.each(node, "filter_list entry",
                   {{"name",
                     [&](const YamlNode& v) -> Result<void> {
                       IX_READ(f.name, r.string(v, "name"));
                       return {};
                     }},
                    {"filter", steps}});
  if (!ok) return std::unexpected(ok.error());
  if (f.name.empty()) return r.error(node, "a filter needs a 'name'");
  if (!has_regex || f.regex_pattern.empty())
    return r.error(node, fmt::format("filter '{}' needs a regex step with a regex_pattern", f.name));
  return f;
}

template <typename T, typename F>
Result<void> read_list(const TaskReader& r, const YamlNode& node, std::string_view key, std::vector<T>& out, F read) {
  if (!node.is_sequence()) return r.error(node, fmt::format("'{}' must be a list", key));
  for (const auto& item : node.items) {
    auto value = read(r, item);
    if (!value) return std::unexpected(value.error());
    out.push_back(std::move(*value));
  }
  return {};
}

Result<void> read_generation_kwargs(const TaskReader& r, const YamlNode& node, LmEvalTask& t) {
  return r.each(node, "generation_kwargs",
                {{"until",
                  [&](const YamlNode& v) -> Result<void> {
                    IX_READ(t.until, r.strings(v, "until"));
                    return {};
                  }},
                 {"do_sample",
                  [&](const YamlNode& v) -> Result<void> {
                    IX_READ(t.do_sample, r.boolean(v, "do_sample"));
                    return {};
                  }},
                 {"temperature", [&](const YamlNode& v) -> Result<void> {
                    IX_READ(t.temperature, r.number(v, "temperature"));
                    return {};
                  }}});
}

// What the reader understands of a parsed task (the rest is refused, not ignored).
Result<void> check_task(const TaskReader& r, const YamlNode& root, const LmEvalTask& t) {
  if (t.task.empty()) return r.error(root, "the task file needs 'task'");
  if (t.output_type != "generate_until")
    return r.error(root, fmt::format("output_type '{}' is not supported (generate_until is)", t.output_type));
  if (t.doc_to_text.empty() || t.doc_to_target.empty())
    return r.error(root, "the task needs doc_to_text and doc_to_target");
  if (t.metrics.empty()) return r.error(root, "the task needs a metric_list");
  if (t.repeats != 1) return r.error(root, fmt::format("repeats {} is not supported (1 is)", t.repeats));
  if (t.do_sample || t.temperature != 0.0)
    return r.error(root, "sampling is not supported: set do_sample: false, temperature: 0.0");
  if (t.num_fewshot < 0) return r.error(root, "num_fewshot must be 0 or more");
  return {};
}

}  // namespace

Result<LmEvalTask> parse_lm_eval_task(std::string_view text, std::string_view source_name) {
  auto root = parse_yaml(text, source_name);
  if (!root) return std::unexpected(root.error());
  TaskReader r(source_name);
  LmEvalTask t;
  t.source = std::string(source_name);
  auto str = [&](std::string& target, const char* key) {
    return std::pair<std::string, TaskReader::Handler>{key, [&r, &target, key](const YamlNode& v) -> Result<void> {
                                                         IX_READ(target, r.string(v, key));
                                                         return {};
                                                       }};
  };
  auto ok = r.each(
      *root, "the task file",
      {str(t.task, "task"),
       str(t.dataset_path, "dataset_path"),
       str(t.dataset_name, "dataset_name"),
       str(t.output_type, "output_type"),
       str(t.training_split, "training_split"),
       str(t.fewshot_split, "fewshot_split"),
       str(t.test_split, "test_split"),
       str(t.doc_to_text, "doc_to_text"),
       str(t.doc_to_target, "doc_to_target"),
       str(t.target_delimiter, "target_delimiter"),
       str(t.fewshot_delimiter, "fewshot_delimiter"),
       {"tag",
        [&](const YamlNode& v) -> Result<void> {
          IX_READ(t.tags, r.strings(v, "tag"));
          return {};
        }},
       {"metric_list", [&](const YamlNode& v) { return read_list(r, v, "metric_list", t.metrics, read_metric); }},
       {"generation_kwargs", [&](const YamlNode& v) { return read_generation_kwargs(r, v, t); }},
       {"repeats",
        [&](const YamlNode& v) -> Result<void> {
          IX_READ(t.repeats, r.integer(v, "repeats"));
          return {};
        }},
       {"num_fewshot",
        [&](const YamlNode& v) -> Result<void> {
          IX_READ(t.num_fewshot, r.integer(v, "num_fewshot"));
          return {};
        }},
       {"filter_list", [&](const YamlNode& v) { return read_list(r, v, "filter_list", t.filters, read_filter); }},
       {"metadata", [&](const YamlNode& v) {
          return r.each(v, "metadata", {{"version", [&](const YamlNode& n) -> Result<void> {
                                           IX_READ(t.version, r.number(n, "version"));
                                           return {};
                                         }}});
        }}});
  if (!ok) return std::unexpected(ok.error());
  if (auto checked = check_task(r, *root, t); !checked) return std::unexpected(checked.error());
  return t;
}

Result<LmEvalTask> load_lm_eval_task(const std::filesystem::path& path) {
  auto text = files::read_text_file(path, kMaxTaskFileBytes, "an lm-eval task YAML file");
  if (!text) return std::unexpected(text.error());
  return parse_lm_eval_task(*text, path.string());
}

}  // namespace ix::config
