// changelog-prose: what a new entry's description says about the shipped config and recipe agrees
// with them (tests/data/review/README.md gives the rule). Documentation only: WARN, never FAIL.
//
// A description claims an image (`repo/name:tag`), a digest (`sha256:...`), or a number tied to a
// setting: one of rules.json's prose_settings named by a phrase ("8K state checkpoints",
// "dram-utilization 0.085", "concurrency 1, 2, and 4", "TP8"), or a variable or flag named as
// written ("Set OFFLOAD_GPU_STAGING_CHUNKS to 16"). `from X to Y` claims X for the base and Y for
// the head; 8K = 8192. A claim agrees when it matches any value the entry's configs, their recipes
// or the scripts those source (library defaults, `${NAME:-v}`) give the setting; a setting nothing
// gives a literal value cannot be judged and is skipped.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>

#include "changelog/plan.h"
#include "review/review.h"
#include "review/rules.h"
#include "review/shell_scan.h"
#include "review/text.h"
#include "sweep/sweep_row.h"

namespace ix::review {
namespace {

struct Word {
  std::string text;    // without surrounding quotes, brackets and punctuation
  bool comma = false;  // it ended in ','
  bool stop = false;   // it ended a clause (. ; : ) ! ?)
};

struct Claim {
  enum class Kind { kImage, kDigest, kNumber };
  Kind kind = Kind::kNumber;
  ProseSetting setting;  // numbers
  std::string text;      // as written: "32K", "rocm/atom-dev:nightly_202608181633"
  double value = 0;      // numbers, K expanded
  bool base = false;     // the X of `from X to Y`: the base's value
};

bool is_image(std::string_view word) {
  const size_t slash = word.find('/'), colon = word.rfind(':');
  return slash != std::string_view::npos && colon != std::string_view::npos && slash < colon &&
         colon + 1 < word.size() && !word.starts_with("http") && word.find("//") == std::string_view::npos;
}

bool is_digest(std::string_view word) {
  return word.starts_with("sha256:") && word.size() >= 7 + 12 &&
         word.find_first_not_of("0123456789abcdef", 7) == std::string_view::npos;
}

Word clean(std::string_view raw) {
  Word word;
  while (!raw.empty() && std::string_view("(\"'[`").find(raw.front()) != std::string_view::npos) raw.remove_prefix(1);
  while (!raw.empty() && std::string_view(",;.:)\"']`!?").find(raw.back()) != std::string_view::npos) {
    word.comma = word.comma || raw.back() == ',';
    word.stop = word.stop || std::string_view(";.:)!?").find(raw.back()) != std::string_view::npos;
    raw.remove_suffix(1);
  }
  word.text = std::string(raw);
  return word;
}

// The description's words, blank-separated; `a/b` is two words unless it is an image.
std::vector<Word> words_of(std::string_view text) {
  std::vector<Word> out;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find_first_of(" \t\n", begin);
    if (end == std::string_view::npos) end = text.size();
    Word word = clean(text.substr(begin, end - begin));
    begin = end + 1;
    if (word.text.empty()) continue;
    if (is_image(word.text) || word.text.find('/') == std::string::npos) {
      out.push_back(std::move(word));
      continue;
    }
    for (size_t at = 0; at <= word.text.size();) {
      const size_t slash = std::min(word.text.find('/', at), word.text.size());
      if (slash > at) out.push_back({word.text.substr(at, slash - at), false, false});
      at = slash + 1;
    }
    if (!out.empty()) {
      out.back().comma = word.comma;
      out.back().stop = word.stop;
    }
  }
  return out;
}

// `8192`, `0.085`, `8K` (8192), `1800-second`, `128-token`: the number, else nothing.
std::optional<double> number_word(std::string_view word) {
  double value = 0;
  const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc() || word.empty() || !std::isdigit(static_cast<unsigned char>(word.front()))) return std::nullopt;
  std::string_view rest(end, word.data() + word.size() - end);
  if (rest.starts_with("K") || rest.starts_with("k")) {
    value *= 1024;
    rest.remove_prefix(1);
  }
  if (rest.starts_with("-") && rest.size() > 1 &&
      std::all_of(rest.begin() + 1, rest.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); }))
    rest = {};
  return rest.empty() ? std::optional<double>(value) : std::nullopt;
}

bool is_word(const Word& word, std::initializer_list<std::string_view> options) {
  return std::find(options.begin(), options.end(), word.text) != options.end();
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// One past the end of `phrase` (its words, case-insensitive, the last one possibly plural) when it
// starts at words[at], else 0.
size_t phrase_end(const std::vector<Word>& words, size_t at, std::string_view phrase) {
  size_t i = at, begin = 0;
  while (true) {
    const size_t end = std::min(phrase.find(' ', begin), phrase.size());
    if (i >= words.size() || (i > at && words[i - 1].stop)) return 0;
    const std::string word = lower(words[i].text), want = lower(std::string(phrase.substr(begin, end - begin)));
    const bool last = end == phrase.size();
    if (word != want && !(last && word == want + "s")) return 0;
    ++i;
    if (last) return i;
    begin = end + 1;
  }
}

// The numbers from words[at] on: `64`, `1, 2, 4, and 48`, `1 through 16`, `8 and 10`.
void number_list(const std::vector<Word>& words, size_t at, const ProseSetting& setting, std::vector<Claim>& out) {
  while (at < words.size()) {
    const auto value = number_word(words[at].text);
    if (!value) return;
    out.push_back({Claim::Kind::kNumber, setting, words[at].text, *value, false});
    if (words[at].stop) return;
    const size_t next = at + 1;
    if (next < words.size() && is_word(words[next], {"and", "or", "through", "to"})) {
      at = next + 1;
    } else if (words[at].comma) {
      at = next;
    } else {
      return;
    }
  }
}

// After a setting's phrase (ending before words[at]): `from X to Y`, or `[to|of|is|=] the N`.
void claims_after(const std::vector<Word>& words, size_t at, const ProseSetting& setting, std::vector<Claim>& out) {
  auto skip = [&](size_t i, std::initializer_list<std::string_view> fillers) {
    while (i < words.size() && is_word(words[i], fillers) && !words[i].stop) ++i;
    return i;
  };
  if (at < words.size() && words[at].text == "from") {
    const size_t x = skip(at + 1, {"the", "a", "an", "its"});
    const auto base = x < words.size() ? number_word(words[x].text) : std::nullopt;
    if (!base) return;
    out.push_back({Claim::Kind::kNumber, setting, words[x].text, *base, true});
    for (size_t to = x + 1; to < words.size() && to <= x + 4 && !words[to - 1].stop; ++to) {
      if (words[to].text != "to") continue;
      const size_t y = skip(to + 1, {"the", "a", "an"});
      const auto head = y < words.size() ? number_word(words[y].text) : std::nullopt;
      if (head) out.push_back({Claim::Kind::kNumber, setting, words[y].text, *head, false});
      return;
    }
    return;
  }
  number_list(words, skip(at, {"=", "to", "of", "is", "set", "the", "a", "an", "its", "default"}), setting, out);
}

// A variable or flag written as such (OFFLOAD_GPU_STAGING_CHUNKS, --max-num-seqs), as a setting of its own.
std::optional<ProseSetting> named_setting(std::string_view word) {
  const std::string_view name = word.substr(0, word.find('='));
  const bool flag = name.starts_with("--") && name.size() > 3;
  const bool variable = name.size() >= 4 && std::isupper(static_cast<unsigned char>(name.front())) &&
                        name.find('_') != std::string_view::npos &&
                        name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == std::string_view::npos;
  if (!flag && !variable) return std::nullopt;
  return ProseSetting{std::string(name), {std::string(name)}, {std::string(name)}, ""};
}

// Whether one of the three words before words[at] (in its clause) removes what follows: "dropping
// the published concurrency 16 and 24" names values the change takes away, not values it ships.
bool removed(const std::vector<Word>& words, size_t at) {
  for (size_t k = at; k > 0 && k + 3 >= at + 1 && !words[k - 1].comma && !words[k - 1].stop; --k) {
    if (is_word(words[k - 1], {"drop", "drops", "dropped", "dropping", "remove", "removes", "removed", "removing",
                               "retire", "retires", "retired", "retiring", "without"}))
      return true;
  }
  return false;
}

// A variable or flag named as written: `NAME=16`, `NAME to 16`, `NAME from 8 to 16`.
void named_claims(const std::vector<Word>& words, size_t at, const ProseSetting& named, std::vector<Claim>& out) {
  const size_t eq = words[at].text.find('=');
  if (eq != std::string::npos) {
    const std::string written = words[at].text.substr(eq + 1);
    if (const auto value = number_word(written)) out.push_back({Claim::Kind::kNumber, named, written, *value, false});
  } else if (!words[at].stop && !words[at].comma) {
    claims_after(words, at + 1, named, out);
  }
}

// A prose setting's phrase at words[at]: `TP8` (a one-word upper-case phrase with the number glued
// on), `8K state checkpoints` (the number before), `dram-utilization 0.085` (after).
void setting_claims(const std::vector<Word>& words, size_t at, const ProseSetting& setting, std::vector<Claim>& out) {
  for (const auto& phrase : setting.phrases) {
    const bool gluable = phrase.find(' ') == std::string::npos && std::isupper(static_cast<unsigned char>(phrase[0]));
    const auto glued = gluable && words[at].text.starts_with(phrase) ? number_word(words[at].text.substr(phrase.size()))
                                                                     : std::nullopt;
    if (glued) {
      out.push_back({Claim::Kind::kNumber, setting, words[at].text, *glued, false});
      continue;
    }
    const size_t end = phrase_end(words, at, phrase);
    if (end == 0) continue;
    const Word* before = at > 0 && !words[at - 1].comma && !words[at - 1].stop ? &words[at - 1] : nullptr;
    if (const auto value = before ? number_word(before->text) : std::nullopt)
      out.push_back({Claim::Kind::kNumber, setting, before->text, *value, false});
    if (!words[end - 1].stop && !words[end - 1].comma) claims_after(words, end, setting, out);
  }
}

// The number claims of one description line.
void number_claims(const std::vector<Word>& words, std::vector<Claim>& out) {
  for (size_t i = 0; i < words.size(); ++i) {
    if (removed(words, i)) continue;
    if (const auto named = named_setting(words[i].text)) {
      named_claims(words, i, *named, out);
      continue;
    }
    for (const auto& setting : default_rules().prose_settings) setting_claims(words, i, setting, out);
  }
}

std::vector<Claim> claims_in(std::string_view description) {
  const auto words = words_of(description);
  std::vector<Claim> out;
  for (size_t i = 0; i < words.size(); ++i) {
    const bool image = is_image(words[i].text), digest = is_digest(words[i].text);
    if ((!image && !digest) || removed(words, i)) continue;
    const bool from = image && i >= 1 && words[i - 1].text == "from";  // `from <image> to <image>`
    out.push_back({image ? Claim::Kind::kImage : Claim::Kind::kDigest, {}, words[i].text, 0, from});
  }
  number_claims(words, out);
  return out;
}

// Where one revision gives an entry's settings their values.
struct Side {
  const RepoTree* tree = nullptr;
  std::vector<const config::MasterConfig*> configs;  // the entry's configs
  std::vector<std::string> scripts;                  // their recipes and the scripts those source
};

// A setting's values, each with where it is set ("--state-checkpoint-interval-tokens at x.sh:100").
struct Values {
  std::vector<std::pair<double, std::string>> found;
  bool unknown = false;  // a value review cannot read: the setting is not judged
};

void add_number(Values& values, double number, std::string where) {
  values.found.emplace_back(number, std::move(where));
}

// A master-config field's values: `conc` (every search-space entry's list or range), `tp`, `dram-utilization`.
void config_values(const std::string& field, const config::MasterConfig& config, Values& values) {
  const std::string where = fmt::format("{} of {}", field, config.key);
  auto each_entry = [&](auto on_entry) {
    for (const auto& scenario : config.fixed_seq_len)
      for (const auto& entry : scenario.search_space) on_entry(entry);
    for (const auto& scenario : config.agentic_coding)
      for (const auto& entry : scenario.search_space) on_entry(entry);
  };
  if (field == "conc") {
    each_entry([&](const config::SearchEntry& e) {
      const auto list = e.conc.is_list ? e.conc.list : sweep::expand_concurrency(e.conc.start, e.conc.end, 2);
      for (const int64_t conc : list) add_number(values, static_cast<double>(conc), where);
    });
  } else if (field == "tp") {
    each_entry([&](const config::SearchEntry& e) {
      for (const int64_t tp : {e.tp, e.prefill ? e.prefill->tp : 0, e.decode ? e.decode->tp : 0})
        if (tp > 0) add_number(values, static_cast<double>(tp), where);
    });
  } else if (field == "dram-utilization") {
    for (const auto& scenario : config.agentic_coding)
      if (scenario.dram_utilization) add_number(values, *scenario.dram_utilization, where);
  }
}

Values values_of(const ProseSetting& setting, const Side& side) {
  Values values;
  for (const auto* config : side.configs) config_values(setting.config, *config, values);
  for (const auto& script : side.scripts) {
    const auto& text = side.tree->read(script);
    if (!text) continue;
    for (const auto& name : setting.recipe) {
      for (const auto& value : setting_values(*text, name)) {
        const auto number = parse_number(value.value);
        if (!number) values.unknown = true;
        if (number) add_number(values, *number, fmt::format("{} at {}:{}", name, script, value.line));
      }
    }
  }
  return values;
}

// Each number once, grouped by where it was first found: "1, 4, 8 (conc of k); 8192 (--x at a.sh:3)".
std::string shown(const Values& values) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  std::vector<double> seen;
  for (const auto& [number, where] : values.found) {
    if (std::find(seen.begin(), seen.end(), number) != seen.end()) continue;
    seen.push_back(number);
    auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == where; });
    if (group == groups.end()) group = groups.insert(groups.end(), {where, {}});
    if (group->second.size() == 8) group->second.push_back("...");
    if (group->second.size() < 8) group->second.push_back(format_number(number));
  }
  std::vector<std::string> parts;
  for (const auto& [where, numbers] : groups) parts.push_back(fmt::format("{} ({})", fmt::join(numbers, ", "), where));
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::optional<std::string> number_disagreement(const Claim& claim, const Side& side) {
  const Values values = values_of(claim.setting, side);
  if (values.unknown || values.found.empty()) return std::nullopt;
  const bool agrees = std::any_of(values.found.begin(), values.found.end(), [&](const auto& found) {
    return std::abs(found.first - claim.value) <= 1e-9 * std::max(1.0, std::abs(found.first));
  });
  if (agrees) return std::nullopt;
  const std::string expanded =
      format_number(claim.value) == claim.text ? "" : fmt::format(" (= {})", format_number(claim.value));
  return claim.base ? fmt::format("{}: says it was {}{} before the change, but the base gives {}", claim.setting.name,
                                  claim.text, expanded, shown(values))
                    : fmt::format("{}: says {}{}, but the change ships {}", claim.setting.name, claim.text, expanded,
                                  shown(values));
}

// An image or digest claim against the configs' images (a digest only where an image pins one).
std::optional<std::string> image_disagreement(const Claim& claim, const Side& side) {
  std::vector<std::string> images;
  bool agrees = false;
  for (const auto* config : side.configs) {
    const std::string& image = config->image;
    const size_t at = image.find('@');
    const std::string compared = claim.kind == Claim::Kind::kImage ? image.substr(0, at)
                                 : at == std::string::npos         ? ""
                                                                   : image.substr(at + 1);
    if (compared.empty()) continue;
    images.push_back(fmt::format("{} ({})", compared, config->key));
    agrees = agrees || compared == claim.text || image == claim.text;
  }
  if (agrees || images.empty()) return std::nullopt;
  std::sort(images.begin(), images.end());
  images.erase(std::unique(images.begin(), images.end()), images.end());
  const char* what = claim.kind == Claim::Kind::kImage ? "image" : "digest";
  return claim.base ? fmt::format("{}: says it was {} before the change, but the base has {}", what, claim.text,
                                  fmt::join(images, ", "))
                    : fmt::format("{}: names {}, but the config ships {}", what, claim.text, fmt::join(images, ", "));
}

// The head's side of an entry: the configs in scope it names, their recipes and what those source.
Side head_side(const ReviewInput& input, const changelog::Entry& entry) {
  Side side{&input.head, {}, {}};
  for (const auto& key : input.scope.keys) {
    const bool named = std::any_of(entry.config_keys.begin(), entry.config_keys.end(), [&](const auto& pattern) {
      return changelog::config_key_matches(pattern, key.key);
    });
    if (!named || !key.config) continue;
    side.configs.push_back(&*key.config);
    for (const auto& recipe : key.recipes) {
      for (auto& script : sourced_scripts(input.head, recipe)) {
        if (std::find(side.scripts.begin(), side.scripts.end(), script) == side.scripts.end())
          side.scripts.push_back(script);
      }
    }
  }
  return side;
}

// The same keys and recipes in the base: a changed key's base config from the scope, an unchanged
// one (in scope by its recipe) is the head's; an added key has none.
Side base_side(const ReviewInput& input, const Side& head) {
  Side side{&input.base, {}, {}};
  for (const auto* config : head.configs) {
    const ScopedKey* key = input.scope.find_key(config->key);
    if (!key || key->added) continue;
    if (key->base_config) {
      side.configs.push_back(&*key->base_config);
    } else if (!key->config_changed) {
      side.configs.push_back(config);
    }
  }
  for (const auto& script : head.scripts) {
    if (input.base.has(script)) side.scripts.push_back(script);
  }
  return side;
}

// Each claim of the entry's description against its side; returns how many there were.
size_t report_entry(const ReviewInput& input, const changelog::Entry& entry, CheckResult& result) {
  const Side head = head_side(input, entry);
  std::optional<Side> base;  // made at the entry's first base claim
  size_t claims = 0;
  for (size_t i = 0; i < entry.description.size(); ++i) {
    const int line = i < entry.description_lines.size() ? entry.description_lines[i] : entry.line;
    for (const auto& claim : claims_in(entry.description[i])) {
      ++claims;
      if (claim.base && !base) base = base_side(input, head);
      const Side& side = claim.base ? *base : head;
      const auto wrong =
          claim.kind == Claim::Kind::kNumber ? number_disagreement(claim, side) : image_disagreement(claim, side);
      if (wrong) result.evidence.push_back({input.options.changelog_path, line, *wrong});
    }
  }
  return claims;
}

}  // namespace

CheckResult check_changelog_prose(const ReviewInput& input) {
  CheckResult result = start_check("changelog-prose", "Changelog prose agrees with the shipped config and recipe");
  const auto& entries = input.scope.new_entries;
  if (entries.empty()) return not_applicable(std::move(result), "no new changelog entry");
  size_t claims = 0;
  for (const auto& entry : entries) claims += report_entry(input, entry, result);
  return verdict_of(std::move(result), {.warn = true},
                    fmt::format("{} claim(s) in {} new entr{}: none disagrees with the config or recipe", claims,
                                entries.size(), entries.size() == 1 ? "y" : "ies"),
                    "changelog prose that disagrees with the shipped config or recipe",
                    "make the description say what the config and recipe ship (or ship what it says)");
}

}  // namespace ix::review
