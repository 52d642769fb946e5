// Recipes: how one matrix row's engine server is started (SPEC §7, §13). A recipe is data
// (recipes/<framework>.yaml, rendered through src/jinja/) or a shell script using InferenceX's
// environment contract. Rendering is pure: no process is started here.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "sweep/sweep_row.h"

namespace ix::run {

// What the orchestrator knows when it renders a job's server.
struct RecipeInputs {
  const sweep::SweepRow* row = nullptr;  // the matrix row (never null)
  int64_t conc = 0;                      // the concurrency being run (multi-node: the first of the list)
  std::string runner;                    // concrete runner name (e.g. h200-cw_00) or the label
  std::string hardware;                  // hardware type for the row's runner label (e.g. h200)
  int port = 0;                          // the port the server must listen on (chosen free by the caller)
  std::filesystem::path ixbench;         // this ixbench binary (the sim recipe starts `ixbench sim serve`)
  std::filesystem::path job_dir;         // the job's artifact folder
  bool eval_run = false;                 // an eval-only job: never force the golden acceptance length
  std::filesystem::path golden_al_dir;   // golden_al_distribution/ (empty: none given)
  std::string recipe;                    // the recipe to render with (empty: the row's framework), e.g. "sim"
  bool evaluates = false;                // the job runs an eval against this server (run-eval or eval-only)
  std::filesystem::path gsm8k_dir;       // GSM8K's test.jsonl (the sim answers GSM8K from it when it evaluates)
};

// A rendered server: exactly what the orchestrator execs, and how it knows it is ready.
struct ServerLaunch {
  std::vector<std::string> argv;                         // argv[0] is the program
  std::vector<std::pair<std::string, std::string>> env;  // added to the inherited environment
  std::string health_url;                                // e.g. http://127.0.0.1:8000/health
  std::string base_url;                                  // e.g. http://127.0.0.1:8000
  std::string bench_backend;                             // `bench serve --backend` (vllm, sglang, trt, atom, openai)
  std::string served_model;                              // `--model` the benchmark sends
  std::string tokenizer;                                 // `--tokenizer` for bench/eval (empty: the model's own)
  std::optional<double> forced_acceptance_length;        // the golden AL injected, if any
  // Files to write before exec (absolute paths under job_dir): e.g. TensorRT-LLM's options file.
  std::vector<std::pair<std::filesystem::path, std::string>> files;
  std::string command_line() const;  // env + argv, shell-quoted, for the artifact
};

class RecipeBook;  // recipes loaded from a folder; cheap to copy (shared immutable state)

class RecipeBook {
 public:
  struct State;
  RecipeBook() = default;
  explicit RecipeBook(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  // The folder the recipes came from.
  const std::filesystem::path& dir() const;
  // Recipe names (file stems: "sim", "vllm", a script's name), sorted.
  std::vector<std::string> names() const;
  // The row framework values the book serves, sorted.
  std::vector<std::string> frameworks() const;
  const State& state() const { return *state_; }

 private:
  std::shared_ptr<const State> state_;
};

// Loads every recipe in `dir` (recipes/*.yaml and *.sh). Errors name file:line.
Result<RecipeBook> load_recipe_book(const std::filesystem::path& dir);

// Renders the row's server. Errors (kInvalidArgument) name the framework, the recipe file and,
// for model-variant lookups, every key tried.
Result<ServerLaunch> render_server(const RecipeBook& book, const RecipeInputs& inputs);

// The `models:` keys a row's lookup tries, most specific first: <model-prefix>-<precision>-<hardware>,
// <model-prefix>-<precision>, <model-prefix>, each with the row kind's suffix: none (single-node
// fixed-seq-len), -agentic (single-node agentic), -disagg (multi-node fixed-seq-len),
// -agentic-disagg (multi-node agentic). The suffix is never dropped: an agentic row never takes
// the fixed-seq-len entry (the wrong-entry fallback InferenceX's models.yaml lookup had).
std::vector<std::string> model_entry_keys(const sweep::SweepRow& row, std::string_view hardware);

// The recipes folder: `given` when not empty, else $IXBENCH_RECIPES_DIR, else the first of
// <dir>/recipes and <dir>/share/ixbench/recipes holding sim.yaml, for <dir> the executable's
// folder and its ancestors (a build tree finds the source tree's recipes/, an install its
// share/ixbench/recipes). `executable` is this program (empty: /proc/self/exe). kNotFound lists
// every folder tried.
Result<std::filesystem::path> find_recipe_dir(const std::filesystem::path& given,
                                              const std::filesystem::path& executable = {});

// Shell words of a rendered command: blanks and newlines separate words; '...' is literal,
// "..." keeps \" \\ \$ \` escapes, a backslash outside quotes escapes the next character and
// backslash-newline joins lines. No expansion: an unquoted $ ` ; | & < > ( ) is refused
// (kInvalidArgument naming the character and its line), so no recipe mistakes this for a shell.
Result<std::vector<std::string>> split_shell_words(std::string_view text);

// `word` as a POSIX shell reads it back: bare when it holds only [A-Za-z0-9_@%+=:,./-], else in
// single quotes (a ' becomes '\'').
std::string shell_quote(std::string_view word);

}  // namespace ix::run
