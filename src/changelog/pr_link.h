// pr-link rules: the canonical link https://github.com/<org>/<repo>/pull/<digits> (one
// repository when a repository URL is given), and on a pull request also its placeholders.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ix::changelog {

// "https://github.com/<org>/<repo>" with no trailing '/' or ".git"; nullopt when `url` is not a
// GitHub repository URL.
std::optional<std::string> normalize_repo_url(std::string_view url);

// Canonical: the repository (`repo_url`, or any when empty) and /pull/<digits>.
bool is_canonical_link(std::string_view link, std::string_view repo_url);

// A new entry's link on pull request `pr`: its own URL, "XXX" or ".../pull/XXX".
bool is_pull_request_link(std::string_view link, int64_t pr, std::string_view repo_url);

// What the rule wants, for messages: "https://github.com/<org>/<repo>" or the given repository.
std::string repo_shown(std::string_view repo_url);

}  // namespace ix::changelog
