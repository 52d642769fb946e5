// `ixbench tokenize`: inspect how a model's tokenizer splits text (or decodes ids), with the same
// native tokenizer the benchmark clients use to size prompts and count output tokens.
#include <fmt/format.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "common/file_io.h"
#include "common/utf8.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ix::cli {
namespace {

struct TokenizeOptions {
  std::string tokenizer;
  bool ids = false;
  bool count = false;
  bool json = false;
  bool add_special_tokens = false;
  bool decode = false;
  bool skip_special_tokens = false;
  std::string chat_template;
  std::string thinking = "default";
};

// All of stdin (capped); a read error (stdin closed, or a directory redirected to it) is an
// error, not an empty text.
Result<std::string> read_stdin() {
  auto text = files::read_text_file(files::kStdioName, files::kMaxTextInputBytes, "the text to tokenize");
  if (!text) return fail(text.error().with_context("cannot read the text from stdin (pipe or redirect a text file)"));
  return text;
}

Result<std::vector<int32_t>> parse_ids(std::string_view text) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos < text.size()) {
    const char c = text[pos];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == '[' || c == ']') {
      ++pos;
      continue;
    }
    size_t end = pos;
    while (end < text.size() && std::string_view(" \t\r\n,[]").find(text[end]) == std::string_view::npos) ++end;
    const std::string word(text.substr(pos, end - pos));
    char* stop = nullptr;
    const long long value = std::strtoll(word.c_str(), &stop, 10);
    if (stop == word.c_str() || *stop != '\0' || value < 0 || value > INT32_MAX) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--decode: '{}' (token #{}) is not a token id (an integer >= 0); give ids "
                              "separated by spaces, commas or newlines",
                              word, ids.size() + 1));
    }
    ids.push_back(static_cast<int32_t>(value));
    pos = end;
  }
  return ids;
}

// Ids the tokenizer does not have would decode to nothing (HF skips them silently): refuse them.
Result<void> check_known_ids(const tok::Tokenizer& t, const std::vector<int32_t>& ids) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!t.id_to_token(ids[i])) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--decode: token #{} is id {}, which this tokenizer does not have (its ids are 0..{})",
                              i + 1, ids[i], t.vocab_size() - 1));
    }
  }
  return {};
}

// Text is tokenized byte for byte, so bytes that are not UTF-8 are refused rather than replaced
// (an HF tokenizer takes a Python str, which cannot hold them).
Result<void> check_utf8(std::string_view text) {
  const size_t pos = utf8::first_invalid(text);
  if (pos == std::string_view::npos) return {};
  return fail(ErrorCode::kInvalidArgument,
              fmt::format("stdin byte {} (0x{:02x}) is not valid UTF-8: the text must be UTF-8 (convert it, e.g. "
                          "with iconv -f latin1 -t utf-8)",
                          pos, static_cast<unsigned char>(text[pos])));
}

int run_tokenize(const TokenizeOptions& options) {
  auto tokenizer = tok::load_tokenizer(options.tokenizer);
  if (!tokenizer) return report_error(tokenizer.error());
  const tok::Tokenizer& t = **tokenizer;
  auto read = read_stdin();
  if (!read) return report_error(read.error());
  std::string input = std::move(*read);

  if (options.decode) {
    auto ids = parse_ids(input);
    if (!ids) return report_error(ids.error());
    if (auto known = check_known_ids(t, *ids); !known) return report_error(known.error());
    const std::string text = t.decode(*ids, options.skip_special_tokens);
    if (options.json) {
      fmt::print("{}\n", boost::json::serialize(boost::json::object{{"text", text}}));
    } else {
      std::fwrite(text.data(), 1, text.size(), stdout);
    }
    return kExitOk;
  }

  if (auto valid = check_utf8(input); !valid) return report_error(valid.error());
  if (!options.chat_template.empty()) {
    auto chat = tok::ChatTemplate::from_spec(options.chat_template, t);
    if (!chat) return report_error(chat.error().with_context("--chat-template"));
    tok::ChatOptions chat_options;
    if (options.thinking == "on") chat_options.thinking = tok::Thinking::kOn;
    if (options.thinking == "off") chat_options.thinking = tok::Thinking::kOff;
    const tok::ChatMessage message{"user", input};
    auto rendered = chat->render(std::span(&message, 1), chat_options);
    if (!rendered) return report_error(rendered.error());
    input = std::move(*rendered);
  }

  const std::vector<int32_t> ids = t.encode(input, options.add_special_tokens);
  if (options.count) {
    fmt::print("{}\n", ids.size());
  } else if (options.json) {
    boost::json::array id_array;
    boost::json::array tokens;
    for (int32_t id : ids) {
      id_array.push_back(id);
      const int32_t one[] = {id};
      tokens.emplace_back(t.decode(one, false));
    }
    fmt::print("{}\n", boost::json::serialize(boost::json::object{
                           {"count", ids.size()}, {"ids", std::move(id_array)}, {"tokens", std::move(tokens)}}));
  } else if (options.ids) {
    std::string line;
    for (size_t i = 0; i < ids.size(); ++i) line += fmt::format("{}{}", i ? " " : "", ids[i]);
    fmt::print("{}\n", line);
  } else {
    // One token per line: id, then its text as a JSON string (whitespace and partial UTF-8 made
    // visible; a token that is part of a multi-byte character shows as U+FFFD).
    for (int32_t id : ids) {
      const int32_t one[] = {id};
      fmt::print("{}\t{}\n", id, boost::json::serialize(boost::json::value(t.decode(one, false))));
    }
  }
  return kExitOk;
}

void setup(CLI::App& root, CommandRegistry& registry) {
  auto* cmd = root.add_subcommand(
      "tokenize", "Tokenize stdin with a model's tokenizer (or --decode ids), exactly as HF tokenizers would");
  auto options = std::make_shared<TokenizeOptions>();
  cmd->add_option("--tokenizer", options->tokenizer,
                  "tokenizer.json, a directory holding it, or a model id found in $MODEL_PATH, /models or the "
                  "Hugging Face cache (packaged: deepseek_v3, qwen3, llama3_1, gptoss and the ids of "
                  "docs/tokenizer.md)")
      ->required();
  auto* ids = cmd->add_flag("--ids", options->ids, "print the ids on one line, space-separated");
  auto* count = cmd->add_flag("--count", options->count, "print only the number of tokens");
  auto* json = cmd->add_flag("--json", options->json, "print {count, ids, tokens} (or {text} with --decode) as JSON");
  ids->excludes(count)->excludes(json);
  count->excludes(json);
  cmd->add_flag("--add-special-tokens", options->add_special_tokens,
                "apply the tokenizer's post-processor (e.g. Llama-3's <|begin_of_text|>)");
  auto* decode = cmd->add_flag("--decode", options->decode, "read token ids from stdin and print the decoded text");
  decode->excludes(ids)->excludes(count);
  cmd->add_flag("--skip-special-tokens", options->skip_special_tokens, "with --decode: drop special tokens");
  auto* chat = cmd->add_option("--chat-template", options->chat_template,
                               "render stdin as one user message first: auto (the model's own chat template), "
                               "deepseek_v4 or harmony (native encodings), or a Jinja template file");
  chat->excludes(decode);
  cmd->add_option("--thinking", options->thinking, "with --chat-template: default, on or off")
      ->check(CLI::IsMember({"default", "on", "off"}));
  registry.on_run(cmd, [options] { return run_tokenize(*options); });
}

}  // namespace

IX_REGISTER_COMMAND(tokenize, setup);

}  // namespace ix::cli
