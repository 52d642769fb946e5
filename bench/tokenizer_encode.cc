// Native tokenizer vs the HF tokenizers core (oracle), side by side in one run.
//
// Builds a deterministic ~10 MB mixed corpus (tests/oracle/corpus.json prose/code/CJK/emoji/
// whitespace samples interleaved with random character soup and synthetic words), then for each
// tokenizer: load time, single-threaded encode throughput of every document, and the same for
// tests/oracle/bench_oracle.js (node + @anush008/tokenizers), checking that both produced the same
// ids (count and FNV-1a hash).
//
// Usage: bench_tokenizer_encode [--mb 10] [--tokenizers deepseek_v3,qwen3,llama3_1,gptoss]
//                               [--no-oracle] [--repeat 3]
#include <fmt/format.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/json_io.h"
#include "common/rng.h"
#include "common/utf8.h"
#include "tokenizer/prompt_synth.h"
#include "tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<std::string> corpus_samples() {
  std::vector<std::string> texts;
  auto value = ix::json::read_file(std::string(IXBENCH_SOURCE_DIR) + "/tests/oracle/corpus.json");
  if (!value || !value->is_object() || !value->as_object().contains("texts")) {
    std::fprintf(stderr, "bench_tokenizer_encode: tests/oracle/corpus.json unreadable: %s\n",
                 value ? "no 'texts' array" : value.error().message().c_str());
    std::exit(1);
  }
  for (const auto& t : value->at("texts").as_array()) texts.emplace_back(t.as_string());
  return texts;
}

// Documents of ~32 KB until `total_bytes`: mostly real-text samples (which repeat, like real
// corpora repeat words), one part in eight random soup that defeats the word cache.
std::vector<std::string> build_corpus(size_t total_bytes) {
  const auto samples = corpus_samples();
  std::vector<std::string> soup_pool;
  for (char c = 32; c < 127; ++c) soup_pool.emplace_back(1, c);
  for (char32_t cp : {0x4E00u, 0x4E8Cu, 0x6587u, 0x3042u, 0x30A2u, 0xAC00u, 0x430u, 0x3B1u, 0x1F600u, 0xE9u, 0xA0u,
                      0x3000u, 0x301u, 0x2014u}) {
    std::string s;
    ix::utf8::append_code_point(cp, s);
    soup_pool.push_back(s);
  }
  const char* syllables[] = {"ka", "lo", "mi", "ter", "son", "ble", "qua", "zor", "ith", "pre", "ex", "ul"};
  ix::Rng rng = ix::Rng::stream(2026, "bench.tokenizer.corpus");
  std::vector<std::string> documents;
  size_t bytes = 0;
  while (bytes < total_bytes) {
    std::string doc;
    while (doc.size() < 32 * 1024) {
      const int64_t kind = rng.uniform_int(0, 7);
      if (kind == 0) {
        for (int i = 0; i < 200; ++i) {
          doc += soup_pool[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(soup_pool.size()) - 1))];
        }
      } else if (kind == 1) {
        for (int w = 0; w < 60; ++w) {
          doc += ' ';
          for (int64_t s = rng.uniform_int(1, 4); s > 0; --s) doc += syllables[rng.uniform_int(0, 11)];
          if (rng.uniform_int(0, 9) == 0) doc += fmt::format(" {}", rng.uniform_int(0, 99999));
        }
      } else {
        doc += samples[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(samples.size()) - 1))];
        doc += "\n\n";
      }
    }
    bytes += doc.size();
    documents.push_back(std::move(doc));
  }
  return documents;
}

uint64_t fnv1a_ids(const std::vector<std::vector<int32_t>>& all) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const auto& ids : all) {
    for (int32_t id : ids) {
      const auto u = static_cast<uint32_t>(id);
      for (int k = 0; k < 4; ++k) {
        hash ^= (u >> (8 * k)) & 0xFF;
        hash *= 0x100000001b3ULL;
      }
    }
  }
  return hash;
}

}  // namespace

int main(int argc, char** argv) {
  double mb = 10.0;
  int repeat = 3;
  bool oracle = true;
  std::vector<std::string> families = {"deepseek_v3", "qwen3", "llama3_1", "gptoss"};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--mb" && i + 1 < argc) {
      mb = std::atof(argv[++i]);
    } else if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--no-oracle") {
      oracle = false;
    } else if (arg == "--tokenizers" && i + 1 < argc) {
      families.clear();
      std::stringstream list(argv[++i]);
      std::string item;
      while (std::getline(list, item, ',')) families.push_back(item);
    } else {
      fmt::print(stderr, "usage: bench_tokenizer_encode [--mb N] [--repeat N] [--tokenizers a,b] [--no-oracle]\n");
      return 2;
    }
  }
  const auto documents = build_corpus(static_cast<size_t>(mb * 1024 * 1024));
  size_t total_bytes = 0;
  for (const auto& d : documents) total_bytes += d.size();
  const auto corpus_path = std::filesystem::temp_directory_path() / fmt::format("ixbench_tok_corpus_{}.json", getpid());
  {
    boost::json::array array;
    for (const auto& d : documents) array.emplace_back(d);
    std::ofstream(corpus_path) << boost::json::serialize(array);
  }
  fmt::print("corpus: {} documents, {:.2f} MB; single-threaded encode, best of {}\n", documents.size(),
             static_cast<double>(total_bytes) / 1e6, repeat);
  fmt::print("{:<12} {:>9} {:>10} {:>11} {:>12} | {:>9} {:>10} {:>11} | {:>7} {:>9}\n", "tokenizer", "load_ms", "MB/s",
             "Mtok/s", "tokens", "o.load_ms", "o.MB/s", "o.Mtok/s", "speedup", "identical");
  int status = 0;
  std::vector<std::string> stream_notes;
  for (const auto& family : families) {
    auto path = ix::tok::resolve_tokenizer(family);
    if (!path) {
      fmt::print(stderr, "{}\n", path.error().to_string());
      return 1;
    }
    const auto load_start = Clock::now();
    auto tokenizer = ix::tok::Tokenizer::load(*path);
    const double load_ms = seconds_since(load_start) * 1e3;
    if (!tokenizer) {
      fmt::print(stderr, "{}\n", tokenizer.error().to_string());
      return 1;
    }
    std::vector<std::vector<int32_t>> all(documents.size());
    double best = 1e30;
    for (int r = 0; r < repeat; ++r) {
      // Each run starts from a fresh tokenizer so its word cache starts cold, like the oracle's.
      auto fresh = ix::tok::Tokenizer::load(*path);
      const auto start = Clock::now();
      for (size_t i = 0; i < documents.size(); ++i) all[i] = (*fresh)->encode(documents[i], false);
      best = std::min(best, seconds_since(start));
    }
    size_t tokens = 0;
    for (const auto& ids : all) tokens += ids.size();
    const uint64_t hash = fnv1a_ids(all);
    const double mbps = static_cast<double>(total_bytes) / 1e6 / best;
    const double mtps = static_cast<double>(tokens) / 1e6 / best;
    // Streamed output counting (StreamingTokenCounter): the first MB in 4-byte deltas with a
    // count() after every delta, as a client counting tokens per SSE chunk would.
    double stream_us_per_delta = 0;
    {
      std::string text;
      for (const auto& d : documents) {
        if (text.size() >= 1024 * 1024) break;
        text += d;
      }
      ix::tok::StreamingTokenCounter counter(**tokenizer);
      size_t deltas = 0;
      size_t last = 0;
      const auto start = Clock::now();
      for (size_t pos = 0; pos < text.size();) {
        size_t end = std::min(text.size(), pos + 4);
        while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
        counter.append(std::string_view(text).substr(pos, end - pos));
        last = counter.count();
        ++deltas;
        pos = end;
      }
      stream_us_per_delta = seconds_since(start) * 1e6 / static_cast<double>(deltas);
      if (last != (*tokenizer)->count_tokens(text)) {
        fmt::print(stderr, "{}: streaming count {} differs from count_tokens\n", family, last);
        status = 1;
      }
    }
    stream_notes.push_back(fmt::format("{}: {:.2f} us per 4-byte delta (append + count)", family, stream_us_per_delta));
    if (!oracle) {
      fmt::print("{:<12} {:>9.1f} {:>10.2f} {:>11.3f} {:>12} | {:>9} {:>10} {:>11} | {:>7} {:>9}\n", family, load_ms,
                 mbps, mtps, tokens, "-", "-", "-", "-", "-");
      continue;
    }
    const std::string command = fmt::format("node '{}/tests/oracle/bench_oracle.js' '{}' '{}'", IXBENCH_SOURCE_DIR,
                                            path->string(), corpus_path.string());
    double oracle_best = 1e30;
    double oracle_load_ms = 0;
    bool identical = true;
    for (int r = 0; r < repeat; ++r) {
      FILE* pipe = popen(command.c_str(), "r");
      std::string output;
      char buffer[4096];
      while (pipe != nullptr && std::fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
      if (pipe == nullptr || pclose(pipe) != 0 || output.empty()) {
        fmt::print(stderr, "oracle failed (node and node_modules needed: run scripts/bootstrap.sh)\n");
        return 1;
      }
      const auto result = boost::json::parse(output).as_object();
      oracle_best = std::min(oracle_best, result.at("encode_s").to_number<double>());
      oracle_load_ms = result.at("load_ms").to_number<double>();
      identical = identical && result.at("tokens").to_number<uint64_t>() == tokens &&
                  std::string(result.at("ids_fnv1a").as_string()) == fmt::format("{:x}", hash);
    }
    if (!identical) status = 1;
    fmt::print("{:<12} {:>9.1f} {:>10.2f} {:>11.3f} {:>12} | {:>9.1f} {:>10.2f} {:>11.3f} | {:>6.2f}x {:>9}\n", family,
               load_ms, mbps, mtps, tokens, oracle_load_ms, static_cast<double>(total_bytes) / 1e6 / oracle_best,
               static_cast<double>(tokens) / 1e6 / oracle_best, oracle_best / best, identical ? "yes" : "NO");
  }
  std::filesystem::remove(corpus_path);
  fmt::print("streaming count:\n");
  for (const auto& note : stream_notes) fmt::print("  {}\n", note);
  return status;
}
