#include "review/repo_tree.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "common/file_io.h"
#include "common/subprocess.h"

namespace ix::review {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxFileBytes = size_t{16} << 20;

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    if (end > begin) out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

Result<std::string> git(const std::vector<std::string>& args) {
  return run_git(args);
}

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

bool has_word(std::string_view line, std::string_view word) {
  for (size_t at = line.find(word); at != std::string_view::npos; at = line.find(word, at + 1)) {
    const bool left = at == 0 || !word_char(line[at - 1]);
    const bool right = at + word.size() >= line.size() || !word_char(line[at + word.size()]);
    if (left && right) return true;
  }
  return false;
}

}  // namespace

Result<RepoTree> RepoTree::open(const std::string& value) {
  RepoTree tree;
  std::error_code error;
  if (fs::is_directory(value, error)) {
    tree.label_ = value;
    tree.dir_ = value;
    for (auto it = fs::recursive_directory_iterator(value, error); !error && it != fs::recursive_directory_iterator();
         it.increment(error)) {
      if (it->path().filename() == ".git") {
        it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file(error)) tree.files_.push_back(it->path().lexically_relative(value).generic_string());
    }
    if (error) return fail(ErrorCode::kIo, fmt::format("cannot list {}: {}", value, error.message()));
    std::sort(tree.files_.begin(), tree.files_.end());
    return tree;
  }
  auto verified = git({"rev-parse", "--verify", "--quiet", value + "^{commit}"});
  if (!verified)
    return fail(ErrorCode::kNotFound,
                fmt::format("'{}' is neither a directory nor a git ref of the current directory's repository; pass "
                            "a checkout or a ref such as origin/main",
                            value));
  tree.label_ = value;
  tree.ref_ = value;
  auto listing = git({"ls-tree", "-r", "--name-only", "--full-tree", value});
  if (!listing) return std::unexpected(listing.error());
  tree.files_ = split_lines(*listing);
  std::sort(tree.files_.begin(), tree.files_.end());
  return tree;
}

bool RepoTree::has(const std::string& path) const {
  return std::binary_search(files_.begin(), files_.end(), path);
}

const std::optional<std::string>& RepoTree::read(const std::string& path) const {
  auto [it, inserted] = cache_.try_emplace(path);
  if (!inserted || !has(path)) return it->second;
  if (is_git()) {
    auto text = git({"show", ref_ + ":" + path});
    if (text) it->second = std::move(*text);
  } else {
    auto text = files::read_text_file(fs::path(dir_) / path, kMaxFileBytes, "a repository file");
    if (text) it->second = std::move(*text);
  }
  return it->second;
}

std::vector<RepoTree::Hit> RepoTree::grep_words(const std::vector<std::string>& words) const {
  std::vector<Hit> hits;
  if (words.empty()) return hits;
  if (is_git()) {
    std::vector<std::string> args = {"grep", "-n", "-I", "-w", "-F"};
    for (const auto& word : words) {
      args.push_back("-e");
      args.push_back(word);
    }
    args.push_back(ref_);
    args.push_back("--");
    auto out = git(args);
    if (!out) return hits;  // exit 1: no match
    for (const auto& line : split_lines(*out)) {
      // <ref>:<path>:<line>:<text>
      const size_t path_begin = ref_.size() + 1;
      const size_t path_end = line.find(':', path_begin);
      const size_t line_end = path_end == std::string::npos ? path_end : line.find(':', path_end + 1);
      if (line_end == std::string::npos) continue;
      hits.push_back({line.substr(path_begin, path_end - path_begin),
                      std::atoi(line.substr(path_end + 1, line_end - path_end - 1).c_str()),
                      line.substr(line_end + 1)});
    }
    return hits;
  }
  for (const auto& path : files_) {
    const auto& text = read(path);
    if (!text || text->find('\0') != std::string::npos) continue;
    int number = 0;
    size_t begin = 0;
    while (begin <= text->size()) {
      size_t end = text->find('\n', begin);
      if (end == std::string::npos) end = text->size();
      ++number;
      std::string_view line(text->data() + begin, end - begin);
      if (std::any_of(words.begin(), words.end(), [&](const auto& word) { return has_word(line, word); }))
        hits.push_back({path, number, std::string(line)});
      begin = end + 1;
    }
  }
  return hits;
}

Result<std::vector<std::string>> changed_files(const RepoTree& base, const RepoTree& head) {
  if (base.is_git() && head.is_git()) {
    auto out = git({"diff", "--name-only", "--no-renames", base.ref(), head.ref(), "--"});
    if (!out) return std::unexpected(out.error());
    auto files = split_lines(*out);
    std::sort(files.begin(), files.end());
    return files;
  }
  std::set<std::string> paths(base.files().begin(), base.files().end());
  paths.insert(head.files().begin(), head.files().end());
  std::vector<std::string> changed;
  for (const auto& path : paths) {
    if (base.has(path) != head.has(path) || base.read(path) != head.read(path)) changed.push_back(path);
  }
  return changed;
}

}  // namespace ix::review
