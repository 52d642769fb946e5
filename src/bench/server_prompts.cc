#include "bench/server_prompts.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <memory>
#include <optional>
#include <unordered_set>

#include "common/json_io.h"
#include "common/rng.h"

namespace ix::bench {
namespace {

namespace bj = boost::json;

constexpr int32_t kScanIds = 32768;  // below every served vocabulary's size
constexpr int32_t kScanBatch = 2048;
constexpr size_t kGroupWords = 32;
constexpr size_t kMaxCandidates = 4096 + 512;  // a few groups may fail
constexpr size_t kPoolMax = 4096;
constexpr size_t kPoolMin = 256;
constexpr int kMaxRounds = 16;
constexpr int kRoundsPerAttempt = 4;

struct Post {
  std::string target;  // "/tokenize" | "/detokenize"
  std::string body;
};

struct Answer {
  http::FailureKind failure = http::FailureKind::kNone;
  std::string failure_message;
  int status = 0;
  std::string body;
};

// Runs a batch of POSTs, `concurrency` at a time, on one event loop over keep-alive connections;
// answers in the order of the posts. All callbacks run inside loop.run() on the calling thread.
class Exchanger {
 public:
  explicit Exchanger(const ServerPromptOptions& options) : options_(options) {
    http::LoopOptions loop_options;
    loop_options.target = options.base_url;
    loop_options.verify_tls = options.verify_tls;
    loop_options.kernel_timestamps = false;
    loop_ = std::make_unique<http::ClientLoop>(loop_options);
  }

  Result<void> prepare() {
    auto ok = loop_->prepare();
    if (!ok)
      return fail(ErrorCode::kUnavailable, fmt::format("{}: {}", options_.base_url.origin(), ok.error().message()));
    return {};
  }

  std::vector<Answer> run(std::vector<Post> posts) {
    posts_ = std::move(posts);
    answers_.assign(posts_.size(), Answer());
    sinks_.clear();
    for (size_t index = 0; index < posts_.size(); ++index) sinks_.push_back(std::make_unique<Sink>(*this, index));
    next_ = 0;
    done_ = 0;
    if (posts_.empty()) return {};
    // Submitted from inside run(): an exchange that fails at once then also ends inside it.
    loop_->post([this] { pump(); });
    loop_->run();
    return std::move(answers_);
  }

 private:
  class Sink final : public http::ResponseSink {
   public:
    Sink(Exchanger& owner, size_t index) : owner_(owner), index_(index) {}
    void on_send(int64_t) override {}
    void on_head(const http::ResponseHead& head, int64_t) override { owner_.answers_[index_].status = head.status; }
    bool on_body(std::string_view bytes, int64_t) override {
      owner_.answers_[index_].body.append(bytes);
      return true;
    }
    void on_done(http::FailureKind kind, std::string_view message, int64_t) override {
      owner_.answers_[index_].failure = kind;
      owner_.answers_[index_].failure_message = std::string(message);
      owner_.finished();
    }

   private:
    Exchanger& owner_;
    size_t index_;
  };

  void pump() {
    const size_t limit = std::max<size_t>(1, options_.concurrency);
    while (next_ < posts_.size() && next_ - done_ < limit) {
      http::Request request;
      request.method = "POST";
      request.target = posts_[next_].target;
      request.body = std::move(posts_[next_].body);
      request.headers = options_.headers;
      request.timeout_ns = options_.request_timeout_ns;
      auto* sink = sinks_[next_].get();
      ++next_;
      loop_->submit(std::move(request), sink);
    }
  }

  void finished() {
    ++done_;
    if (done_ == posts_.size()) {
      loop_->stop();
      return;
    }
    loop_->post([this] { pump(); });  // not from inside the exchange that just ended
  }

  const ServerPromptOptions& options_;
  std::unique_ptr<http::ClientLoop> loop_;
  std::vector<Post> posts_;
  std::vector<Answer> answers_;
  std::vector<std::unique_ptr<Sink>> sinks_;
  size_t next_ = 0;
  size_t done_ = 0;
};

std::string excerpt(std::string_view text) {
  constexpr size_t kMax = 300;
  std::string out(text.substr(0, kMax));
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (text.size() > kMax) out += "...";
  return out;
}

std::string where(const ServerPromptOptions& options, std::string_view target) {
  return fmt::format("POST {}{}{}", options.base_url.origin(), options.base_url.path, target);
}

// The JSON object of a 200 answer, or an error naming the endpoint and what the server said.
Result<bj::object> answer_object(const ServerPromptOptions& options, std::string_view target, const Answer& answer) {
  if (answer.failure != http::FailureKind::kNone) {
    return fail(ErrorCode::kUnavailable, fmt::format("{} failed ({}): {}", where(options, target),
                                                     http::failure_kind_name(answer.failure), answer.failure_message));
  }
  if (answer.status != 200) {
    const bool missing = answer.status == 404 || answer.status == 405 || answer.status == 501;
    return fail(missing                ? ErrorCode::kUnsupported
                : answer.status >= 500 ? ErrorCode::kUnavailable
                                       : ErrorCode::kInvalidArgument,
                fmt::format("{} answered HTTP {}: {}{}", where(options, target), answer.status, excerpt(answer.body),
                            missing ? " (--tokenizer-from-server needs the server's /tokenize and /detokenize, "
                                      "as vLLM and ixbench sim serve have them)"
                                    : ""));
  }
  auto parsed = json::parse(answer.body, target);
  if (!parsed || !parsed->is_object()) {
    return fail(ErrorCode::kUnsupported, fmt::format("{} answered 200 with something other than a JSON object: {}",
                                                     where(options, target), excerpt(answer.body)));
  }
  return std::move(parsed->as_object());
}

Result<int64_t> answer_count(const ServerPromptOptions& options, const Answer& answer) {
  auto object = answer_object(options, "/tokenize", answer);
  if (!object) return std::unexpected(object.error());
  const bj::value* count = object->if_contains("count");
  if (count == nullptr || !count->is_int64()) {
    return fail(ErrorCode::kUnsupported, fmt::format("{} answered without an integer \"count\" (vLLM's shape): {}",
                                                     where(options, "/tokenize"), excerpt(answer.body)));
  }
  return count->as_int64();
}

Result<std::string> answer_prompt(const ServerPromptOptions& options, const Answer& answer) {
  auto object = answer_object(options, "/detokenize", answer);
  if (!object) return std::unexpected(object.error());
  const bj::value* prompt = object->if_contains("prompt");
  if (prompt == nullptr || !prompt->is_string()) {
    return fail(ErrorCode::kUnsupported, fmt::format("{} answered without a string \"prompt\" (vLLM's shape): {}",
                                                     where(options, "/detokenize"), excerpt(answer.body)));
  }
  return std::string(prompt->as_string());
}

bj::object with_model(const ServerPromptOptions& options) {
  bj::object body;
  if (!options.model.empty()) body["model"] = options.model;
  return body;
}

// A /tokenize body counting `text` as the measured request's prompt (kPlain) or user content.
Post tokenize_post(const ServerPromptOptions& options, std::string_view text, bool chat) {
  bj::object body = with_model(options);
  if (chat) {
    bj::array messages;
    messages.push_back(bj::object{{"role", "user"}, {"content", text}});
    body["messages"] = std::move(messages);
    body["add_generation_prompt"] = true;
  } else {
    body["prompt"] = text;
    body["add_special_tokens"] = true;
  }
  for (const auto& member : options.tokenize_extra_body) body[member.key()] = member.value();
  return {"/tokenize", bj::serialize(body)};
}

// Plain text, no special tokens: for the separator and the pool checks.
Post raw_tokenize_post(const ServerPromptOptions& options, std::string_view text) {
  bj::object body = with_model(options);
  body["prompt"] = text;
  body["add_special_tokens"] = false;
  return {"/tokenize", bj::serialize(body)};
}

bool is_word_piece(std::string_view piece) {
  if (piece.size() < 3 || piece.size() > 13 || piece[0] != ' ') return false;
  return std::all_of(piece.begin() + 1, piece.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

// The words of prompt `index`: the first `words` draws of its stream, so fewer words are a prefix.
// Attempt 1, 2, ... draw from other streams (a first word the template makes costly).
std::string prompt_text(const std::vector<std::string>& pool, uint64_t seed, size_t index, int attempt, int64_t words) {
  Rng rng = Rng::stream(seed, attempt == 0 ? fmt::format("ix.bench.server_prompt.{}", index)
                                           : fmt::format("ix.bench.server_prompt.{}.{}", index, attempt));
  std::string text;
  const auto last = static_cast<int64_t>(pool.size()) - 1;
  for (int64_t word = 0; word < words; ++word) text += pool[static_cast<size_t>(rng.uniform_int(0, last))];
  return text;
}

}  // namespace

Result<ServerPromptMaker> ServerPromptMaker::create(ServerPromptOptions options) {
  if (options.format == workload::PromptFormat::kChatRendered) {
    return fail(ErrorCode::kUnsupported,
                "prompts rendered with a client-side chat template need a local tokenizer; --tokenizer-from-server "
                "makes completions prompts or chat message content");
  }
  ServerPromptMaker maker(std::move(options));
  const ServerPromptOptions& o = maker.options_;
  const bool chat = o.format == workload::PromptFormat::kChatContent;
  Exchanger exchanger(o);
  if (auto ok = exchanger.prepare(); !ok) return std::unexpected(ok.error());

  // 1. A separator the server encodes as one token.
  std::optional<int64_t> separator_id;
  std::string separator;
  for (const char* candidate : {"\n", "|", "#"}) {
    auto answers = exchanger.run({raw_tokenize_post(o, candidate)});
    auto object = answer_object(o, "/tokenize", answers[0]);
    if (!object) return std::unexpected(object.error());
    const bj::value* tokens = object->if_contains("tokens");
    if (tokens == nullptr || !tokens->is_array()) {
      return fail(ErrorCode::kUnsupported, fmt::format("{} answered without a \"tokens\" array (vLLM's shape): {}",
                                                       where(o, "/tokenize"), excerpt(answers[0].body)));
    }
    if (tokens->as_array().size() == 1 && tokens->as_array()[0].is_int64()) {
      separator_id = tokens->as_array()[0].as_int64();
      separator = candidate;
      break;
    }
  }
  if (!separator_id) {
    return fail(ErrorCode::kUnsupported,
                fmt::format("{}: the server's tokenizer has no single token for \"\\n\", \"|\" or \"#\" to separate "
                            "decoded ids with",
                            where(o, "/tokenize")));
  }

  // 2. Candidate words from the vocabulary, in id order.
  std::vector<Post> scans;
  for (int32_t first = 0; first < kScanIds; first += kScanBatch) {
    bj::object body = with_model(o);
    bj::array ids;
    ids.reserve(2 * kScanBatch + 1);
    ids.push_back(*separator_id);
    for (int32_t id = first; id < first + kScanBatch; ++id) {
      ids.push_back(id);
      ids.push_back(*separator_id);
    }
    body["tokens"] = std::move(ids);
    scans.push_back({"/detokenize", bj::serialize(body)});
  }
  auto scanned = exchanger.run(std::move(scans));
  std::vector<std::string> candidates;
  std::unordered_set<std::string> seen;
  for (size_t batch = 0; batch < scanned.size() && candidates.size() < kMaxCandidates; ++batch) {
    // A later batch refused (ids past the vocabulary: sim serve answers 400) ends the scan; only
    // the first batch must succeed.
    if (batch > 0 && scanned[batch].failure == http::FailureKind::kNone && scanned[batch].status != 200) break;
    auto text = answer_prompt(o, scanned[batch]);
    if (!text) return std::unexpected(text.error());
    size_t start = 0;
    while (start <= text->size() && candidates.size() < kMaxCandidates) {
      size_t end = text->find(separator, start);
      if (end == std::string::npos) end = text->size();
      const std::string piece = text->substr(start, end - start);
      if (is_word_piece(piece) && seen.insert(piece).second) candidates.push_back(piece);
      start = end + separator.size();
    }
  }

  // 3. The pool: candidates that are one token each and stay apart when concatenated.
  std::vector<Post> checks;
  for (size_t first = 0; first + kGroupWords <= candidates.size(); first += kGroupWords) {
    std::string text;
    for (size_t index = first; index < first + kGroupWords; ++index) text += candidates[index];
    checks.push_back(raw_tokenize_post(o, text));
  }
  auto checked = exchanger.run(std::move(checks));
  for (size_t group = 0; group < checked.size() && maker.pool_.size() < kPoolMax; ++group) {
    auto count = answer_count(o, checked[group]);
    if (!count) return std::unexpected(count.error());
    if (*count != static_cast<int64_t>(kGroupWords)) continue;
    for (size_t index = group * kGroupWords; index < (group + 1) * kGroupWords; ++index) {
      maker.pool_.push_back(candidates[index]);
    }
  }
  if (maker.pool_.size() < kPoolMin) {
    return fail(ErrorCode::kUnsupported,
                fmt::format("{}: the server's tokenizer gave only {} single-token lowercase words among ids 0..{} "
                            "(need {}) to make prompts from",
                            where(o, "/detokenize"), maker.pool_.size(), kScanIds - 1, kPoolMin));
  }

  // 4. What the server adds around the text.
  const std::string probe = chat ? maker.pool_[0] + maker.pool_[1] : maker.pool_[0];
  auto probed = exchanger.run({tokenize_post(o, probe, chat)});
  auto count = answer_count(o, probed[0]);
  if (!count) return std::unexpected(count.error());
  const int64_t added = *count - (chat ? 2 : 1);
  if (added < 0) {
    return fail(ErrorCode::kUnsupported, fmt::format("{} counted {} tokens for {} single-token words",
                                                     where(o, "/tokenize"), *count, chat ? 2 : 1));
  }
  (chat ? maker.chat_overhead_tokens_ : maker.special_tokens_) = added;
  return maker;
}

int64_t ServerPromptMaker::min_prompt_tokens() const {
  return options_.format == workload::PromptFormat::kChatContent ? chat_overhead_tokens_ + 1 : 1;
}

Result<std::vector<std::string>> ServerPromptMaker::make(std::span<const std::pair<size_t, int64_t>> order) const {
  const bool chat = options_.format == workload::PromptFormat::kChatContent;
  struct Pending {
    size_t k = 0;
    int64_t target = 0;  // the server's count to reach
    int64_t first_words = 0;
    int64_t words = 0;
    int attempt = 0;
    int rounds = 0;  // in this attempt
  };
  std::vector<Pending> pending;
  pending.reserve(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const int64_t tokens = order[k].second;
    if (tokens < min_prompt_tokens()) {
      return fail(ErrorCode::kInvalidArgument,
                  chat ? fmt::format("a {}-token chat prompt is shorter than the server's chat template's own {} "
                                     "tokens + 1",
                                     tokens, chat_overhead_tokens_)
                       : fmt::format("a prompt must have at least 1 token, got {}", tokens));
    }
    // kPlain: the text has tokens - specials (at least one word), as RandomDataset's kPlain.
    const int64_t target = chat ? tokens : std::max(tokens, special_tokens_ + 1);
    const int64_t words = target - (chat ? chat_overhead_tokens_ : special_tokens_);
    pending.push_back({k, target, words, words, 0, 0});
  }

  std::vector<std::string> prompts(order.size());
  Exchanger exchanger(options_);
  if (auto ok = exchanger.prepare(); !ok) return std::unexpected(ok.error());
  for (int round = 0; round < kMaxRounds && !pending.empty(); ++round) {
    std::vector<Post> posts;
    posts.reserve(pending.size());
    for (auto& p : pending) {
      prompts[p.k] = prompt_text(pool_, options_.seed, order[p.k].first, p.attempt, p.words);
      posts.push_back(tokenize_post(options_, prompts[p.k], chat));
    }
    auto answers = exchanger.run(std::move(posts));
    std::vector<Pending> again;
    for (size_t index = 0; index < pending.size(); ++index) {
      Pending p = pending[index];
      auto count = answer_count(options_, answers[index]);
      if (!count) return std::unexpected(count.error());
      if (*count == p.target) continue;
      p.words += p.target - *count;
      if (p.words < 1 || ++p.rounds >= kRoundsPerAttempt) {
        // Too few words even at one, or not converging: other words.
        ++p.attempt;
        p.rounds = 0;
        p.words = p.first_words;
      }
      again.push_back(p);
    }
    pending = std::move(again);
  }
  if (!pending.empty()) {
    const auto& p = pending.front();
    return fail(
        ErrorCode::kInternal,
        fmt::format("{}: no prompt of exactly {} tokens for index {} after {} rounds ({} prompts left)",
                    where(options_, "/tokenize"), order[p.k].second, order[p.k].first, kMaxRounds, pending.size()));
  }
  return prompts;
}

Result<std::vector<std::string>> make_prompts_via_server(const ServerPromptOptions& options,
                                                         std::span<const std::pair<size_t, int64_t>> order) {
  auto maker = ServerPromptMaker::create(options);
  if (!maker) return std::unexpected(maker.error());
  return maker->make(order);
}

}  // namespace ix::bench
