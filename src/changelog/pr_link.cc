#include "changelog/pr_link.h"

#include <algorithm>
#include <string>

namespace ix::changelog {
namespace {

constexpr std::string_view kGitHub = "https://github.com/";

bool is_name(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
  });
}

bool is_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

struct PullLink {
  std::string repo;  // https://github.com/<org>/<repo>
  std::string_view tail;
};

// https://github.com/<org>/<repo>/pull/<tail>
std::optional<PullLink> split_link(std::string_view link) {
  if (!link.starts_with(kGitHub)) return std::nullopt;
  std::string_view rest = link.substr(kGitHub.size());
  const size_t org_end = rest.find('/');
  if (org_end == std::string_view::npos || !is_name(rest.substr(0, org_end))) return std::nullopt;
  const size_t repo_end = rest.find('/', org_end + 1);
  if (repo_end == std::string_view::npos || !is_name(rest.substr(org_end + 1, repo_end - org_end - 1))) {
    return std::nullopt;
  }
  std::string_view pull = rest.substr(repo_end);
  if (!pull.starts_with("/pull/")) return std::nullopt;
  return PullLink{std::string(link.substr(0, kGitHub.size() + repo_end)), pull.substr(6)};
}

bool repo_matches(const PullLink& link, std::string_view repo_url) {
  return repo_url.empty() || link.repo == repo_url;
}

}  // namespace

std::optional<std::string> normalize_repo_url(std::string_view url) {
  while (url.ends_with('/')) url.remove_suffix(1);
  if (url.ends_with(".git")) url.remove_suffix(4);
  if (!url.starts_with(kGitHub)) return std::nullopt;
  std::string_view rest = url.substr(kGitHub.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || !is_name(rest.substr(0, slash)) || !is_name(rest.substr(slash + 1))) {
    return std::nullopt;
  }
  return std::string(url);
}

bool is_canonical_link(std::string_view link, std::string_view repo_url) {
  auto parts = split_link(link);
  return parts && repo_matches(*parts, repo_url) && is_digits(parts->tail);
}

bool is_pull_request_link(std::string_view link, int64_t pr, std::string_view repo_url) {
  if (link == "XXX") return true;
  auto parts = split_link(link);
  return parts && repo_matches(*parts, repo_url) && (parts->tail == "XXX" || parts->tail == std::to_string(pr));
}

std::string repo_shown(std::string_view repo_url) {
  return repo_url.empty() ? std::string(kGitHub) + "<org>/<repo>" : std::string(repo_url);
}

}  // namespace ix::changelog
