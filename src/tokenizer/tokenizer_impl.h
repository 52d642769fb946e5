// Tokenizer::Impl: the loaded pipeline (internal to src/tokenizer/; see tokenizer.h for the
// contract). Split out so chat_template.cc / prompt_synth.cc stay independent of it.
#pragma once

#include <boost/unordered/unordered_flat_map.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/regex.h"
#include "tokenizer/tokenizer.h"

namespace ix::tok {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
struct StringEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const noexcept { return a == b; }
};
using StringIdMap = boost::unordered_flat_map<std::string, int32_t, StringHash, StringEq>;

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };

struct PreTokenizerStep {
  enum class Kind { kSplit, kPrefixSpace };
  Kind kind = Kind::kSplit;
  std::optional<Regex> regex;  // kSplit with a regex
  std::string literal;         // kSplit with a string pattern
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
};

// Added tokens of one matching pass (non-normalized or normalized), as a byte trie searched
// leftmost-longest like HF's Aho-Corasick automaton.
class AddedTokenTrie {
 public:
  void insert(std::string_view pattern, int32_t token_index);
  bool empty() const { return nodes_.size() <= 1; }
  // Longest pattern starting at text[pos]: returns token index or -1, and its length.
  int32_t longest_at(std::string_view text, size_t pos, size_t& length) const;
  bool may_start(unsigned char byte) const { return first_byte_[byte]; }
  size_t max_length() const { return max_length_; }

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
    int32_t token = -1;
  };
  std::vector<Node> nodes_{Node{}};
  bool first_byte_[256] = {};
  size_t max_length_ = 0;
};

struct AddedTokenInfo {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

struct MergeInfo {
  int32_t rank;
  int32_t new_id;
};

class Tokenizer::Impl {
 public:
  // ---- loaded state ----
  std::string source;
  TokenizerConfig config;
  uint64_t serial = 0;  // distinguishes instances for the thread-local word caches

  std::vector<AddedTokenInfo> added;  // in id order
  std::vector<Tokenizer::AddedToken> added_public;
  AddedTokenTrie raw_trie;   // added tokens with normalized == false
  AddedTokenTrie norm_trie;  // added tokens with normalized == true (patterns normalized)
  StringIdMap added_by_content;

  std::vector<NormalForm> normalizers;
  std::vector<PreTokenizerStep> pre_steps;
  bool byte_level = false;  // ByteLevel pre-tokenizer: BPE units are bytes

  // BPE model
  StringIdMap vocab;      // HF vocabulary (token strings as in tokenizer.json)
  StringIdMap vocab_raw;  // byte-level: the same keyed by raw bytes (unreachable tokens omitted)
  int32_t byte_ids[256] = {};
  boost::unordered_flat_map<uint64_t, MergeInfo> merges;
  bool ignore_merges = false;
  std::optional<int32_t> unk_id;
  bool fuse_unk = false;

  // post-processor (TemplateProcessing single)
  std::vector<int32_t> prefix_ids;
  std::vector<int32_t> suffix_ids;

  // decoder
  enum class DecoderKind { kNone, kByteLevel };
  DecoderKind decoder = DecoderKind::kNone;
  std::vector<std::string> id_to_token;  // empty string + !has_token for holes
  std::vector<uint8_t> has_token;
  std::vector<uint8_t> special;
  std::string decoded_arena;  // byte-level decoded form of every id
  std::vector<uint32_t> decoded_offsets;

  // ---- operations ----
  void encode(std::string_view text, bool add_special_tokens, std::vector<int32_t>& out) const;
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const;
  size_t stable_prefix(std::string_view text, std::vector<int32_t>& out) const;

 private:
  struct WordCache;
  WordCache& cache() const;
  // HF AddedVocabulary::find_matches: calls emit(segment, token_id or -1) for each piece.
  void split_added(std::string_view text, const AddedTokenTrie& trie,
                   const std::function<void(std::string_view, int32_t)>& emit) const;
  void encode_valid(std::string_view text, std::vector<int32_t>& out, WordCache& cache) const;
  void pre_tokenize(size_t step, std::string_view piece, std::vector<int32_t>& out, WordCache& cache) const;
  void bpe(std::string_view word, std::vector<int32_t>& out, WordCache& cache) const;
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;
};

}  // namespace ix::tok
