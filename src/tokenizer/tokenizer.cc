#include "tokenizer/tokenizer.h"

#include <fmt/format.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/uversion.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <boost/unordered/unordered_flat_set.hpp>
#include <fstream>
#include <sstream>

#include "common/file_io.h"
#include "common/json_io.h"
#include "common/sanitize.h"
#include "common/utf8.h"
#include "tokenizer/tokenizer_impl.h"

namespace ix::tok {
namespace {

namespace bj = boost::json;

// GPT-2's byte-to-unicode table: printable Latin-1 bytes map to themselves, the other 68 bytes
// to U+0100.. in byte order, so every byte is one visible character.
struct ByteAlphabet {
  char32_t byte_to_cp[256];
  boost::unordered_flat_map<char32_t, uint8_t> cp_to_byte;
  std::string byte_to_utf8[256];
  ByteAlphabet() {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      byte_to_cp[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      cp_to_byte[byte_to_cp[b]] = static_cast<uint8_t>(b);
      utf8::append_code_point(byte_to_cp[b], byte_to_utf8[b]);
    }
  }
  // Raw bytes of a byte-level token string; false when a character is outside the alphabet.
  bool unmap(std::string_view token, std::string& out) const {
    out.clear();
    size_t pos = 0;
    while (pos < token.size()) {
      if (utf8::valid_sequence_length(token, pos) == 0) return false;
      const char32_t cp = utf8::next_code_point(token, pos);
      auto it = cp_to_byte.find(cp);
      if (it == cp_to_byte.end()) return false;
      out.push_back(static_cast<char>(it->second));
    }
    return true;
  }
};

const ByteAlphabet& byte_alphabet() {
  static const ByteAlphabet alphabet;
  return alphabet;
}

std::atomic<uint64_t> g_next_serial{1};

Error unsupported(std::string_view source, std::string message) {
  return Error(ErrorCode::kUnsupported, fmt::format("{}: {}", source, message));
}
Error invalid(std::string_view source, std::string message) {
  return Error(ErrorCode::kInvalidArgument, fmt::format("{}: {}", source, message));
}

std::string_view type_of(const bj::object& o) {
  if (auto* t = o.if_contains("type"); t != nullptr && t->is_string()) return t->get_string();
  return {};
}

bool get_flag(const bj::object& o, std::string_view key, bool fallback = false) {
  if (auto* v = o.if_contains(key); v != nullptr && v->is_bool()) return v->get_bool();
  return fallback;
}

const icu::Normalizer2* icu_normalizer(NormalForm form) {
  UErrorCode status = U_ZERO_ERROR;
  switch (form) {
    case NormalForm::kNfc: return icu::Normalizer2::getNFCInstance(status);
    case NormalForm::kNfd: return icu::Normalizer2::getNFDInstance(status);
    case NormalForm::kNfkc: return icu::Normalizer2::getNFKCInstance(status);
    case NormalForm::kNfkd: return icu::Normalizer2::getNFKDInstance(status);
  }
  return nullptr;
}

// Applies the normalizers in order; returns a view of `text` itself when nothing changes.
// HF normalizes with the unicode-normalization-alignments crate, whose tables are Unicode 9.0
// (probed through the oracle: combining marks from Unicode 10 on are neither reordered nor
// composed). Canonical data of a character never changes once assigned, so the only difference
// from ICU is that characters assigned after 9.0 are opaque starters for HF.
bool unknown_to_hf_normalizer(char32_t cp) {
  if (cp < 0x0300) return false;  // all assigned by Unicode 9.0
  UVersionInfo age;
  u_charAge(static_cast<UChar32>(cp), age);
  return age[0] > 9;
}

void icu_normalize(const std::vector<NormalForm>& forms, std::string& text) {
  for (NormalForm form : forms) {
    const icu::Normalizer2* normalizer = icu_normalizer(form);
    UErrorCode status = U_ZERO_ERROR;
    const icu::StringPiece piece(text.data(), static_cast<int32_t>(text.size()));
    if (normalizer->isNormalizedUTF8(piece, status) && U_SUCCESS(status)) continue;
    status = U_ZERO_ERROR;
    std::string next;
    icu::StringByteSink<std::string> sink(&next);
    normalizer->normalizeUTF8(0, piece, sink, nullptr, status);
    if (U_SUCCESS(status)) text = std::move(next);
  }
}

// Applies the normalizers in order; returns a view of `text` itself when nothing changes.
std::string_view normalize(const std::vector<NormalForm>& forms, std::string_view text, std::string& buffer) {
  if (forms.empty()) return text;
  // ASCII is invariant under every normal form.
  bool ascii = true;
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii) return text;
  // Characters HF's normalizer does not know split the text into independently normalized runs
  // (a starter that never composes blocks every interaction across it) and are kept as they are.
  std::string result;
  size_t run_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t at = pos;
    const char32_t cp = utf8::next_code_point(text, pos);
    if (!unknown_to_hf_normalizer(cp)) continue;
    std::string run(text.substr(run_start, at - run_start));
    icu_normalize(forms, run);
    result += run;
    result.append(text.substr(at, pos - at));
    run_start = pos;
  }
  std::string run(text.substr(run_start));
  icu_normalize(forms, run);
  result += run;
  if (result == text) return text;
  buffer = std::move(result);
  return buffer;
}

Result<void> parse_normalizer(const bj::value& value, std::string_view source, std::vector<NormalForm>& out) {
  if (value.is_null()) return {};
  if (!value.is_object()) return fail(invalid(source, "normalizer must be an object or null"));
  const auto& o = value.get_object();
  const std::string_view type = type_of(o);
  if (type == "Sequence") {
    const auto* list = o.if_contains("normalizers");
    if (list == nullptr || !list->is_array()) return fail(invalid(source, "Sequence normalizer without 'normalizers'"));
    for (const auto& child : list->get_array()) {
      if (auto r = parse_normalizer(child, source, out); !r) return r;
    }
    return {};
  }
  if (type == "NFC")
    out.push_back(NormalForm::kNfc);
  else if (type == "NFD")
    out.push_back(NormalForm::kNfd);
  else if (type == "NFKC")
    out.push_back(NormalForm::kNfkc);
  else if (type == "NFKD")
    out.push_back(NormalForm::kNfkd);
  else
    return fail(unsupported(source, fmt::format("normalizer type '{}' is not supported (supported: Sequence, NFC, "
                                                "NFD, NFKC, NFKD)",
                                                type)));
  return {};
}

Result<SplitBehavior> parse_behavior(std::string_view name, std::string_view source) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return fail(unsupported(source, fmt::format("Split behavior '{}' is not supported", name)));
}

// The regex GPT-2's ByteLevel pre-tokenizer uses when use_regex is true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

Result<void> parse_pre_tokenizer(const bj::value& value, std::string_view source, Tokenizer::Impl& impl) {
  if (value.is_null()) return {};
  if (!value.is_object()) return fail(invalid(source, "pre_tokenizer must be an object or null"));
  const auto& o = value.get_object();
  const std::string_view type = type_of(o);
  if (type == "Sequence") {
    const auto* list = o.if_contains("pretokenizers");
    if (list == nullptr || !list->is_array()) {
      return fail(invalid(source, "Sequence pre_tokenizer without 'pretokenizers'"));
    }
    for (const auto& child : list->get_array()) {
      if (auto r = parse_pre_tokenizer(child, source, impl); !r) return r;
    }
    return {};
  }
  // Byte-level mapping is implicit in the BPE units, so nothing may follow ByteLevel.
  if (impl.byte_level) {
    return fail(unsupported(source, fmt::format("pre_tokenizer '{}' after ByteLevel is not supported", type)));
  }
  if (type == "ByteLevel") {
    impl.byte_level = true;
    if (get_flag(o, "add_prefix_space")) {
      PreTokenizerStep step;
      step.kind = PreTokenizerStep::Kind::kPrefixSpace;
      impl.pre_steps.push_back(std::move(step));
    }
    if (get_flag(o, "use_regex", true)) {
      auto regex = Regex::compile(kGpt2Pattern);
      if (!regex) return fail(regex.error());
      PreTokenizerStep step;
      step.regex = std::move(*regex);
      impl.pre_steps.push_back(std::move(step));
    }
    return {};
  }
  if (type == "Digits") {
    auto regex = Regex::compile(get_flag(o, "individual_digits") ? "\\p{N}" : "\\p{N}+");
    if (!regex) return fail(regex.error());
    PreTokenizerStep step;
    step.regex = std::move(*regex);
    impl.pre_steps.push_back(std::move(step));
    return {};
  }
  if (type == "Split") {
    PreTokenizerStep step;
    const auto* pattern = o.if_contains("pattern");
    if (pattern == nullptr || !pattern->is_object())
      return fail(invalid(source, "Split pre_tokenizer without 'pattern'"));
    const auto& p = pattern->get_object();
    if (const auto* r = p.if_contains("Regex"); r != nullptr && r->is_string()) {
      auto regex = Regex::compile(r->get_string());
      if (!regex) return fail(regex.error().with_context(source));
      step.regex = std::move(*regex);
    } else if (const auto* s = p.if_contains("String"); s != nullptr && s->is_string()) {
      step.literal = std::string(s->get_string());
      if (step.literal.empty()) return fail(unsupported(source, "Split with an empty String pattern"));
    } else {
      return fail(invalid(source, "Split pattern must be {\"Regex\": ...} or {\"String\": ...}"));
    }
    const auto* behavior = o.if_contains("behavior");
    auto parsed = parse_behavior(behavior != nullptr && behavior->is_string() ? std::string_view(behavior->get_string())
                                                                              : std::string_view("Isolated"),
                                 source);
    if (!parsed) return fail(parsed.error());
    step.behavior = *parsed;
    step.invert = get_flag(o, "invert");
    impl.pre_steps.push_back(std::move(step));
    return {};
  }
  return fail(unsupported(
      source,
      fmt::format("pre_tokenizer type '{}' is not supported (supported: Sequence, Split, ByteLevel, Digits)", type)));
}

Result<void> parse_post_processor(const bj::value& value, std::string_view source, Tokenizer::Impl& impl,
                                  const StringIdMap& all_tokens) {
  if (value.is_null()) return {};
  if (!value.is_object()) return fail(invalid(source, "post_processor must be an object or null"));
  const auto& o = value.get_object();
  const std::string_view type = type_of(o);
  if (type == "Sequence") {
    const auto* list = o.if_contains("processors");
    if (list == nullptr || !list->is_array())
      return fail(invalid(source, "Sequence post_processor without 'processors'"));
    for (const auto& child : list->get_array()) {
      if (auto r = parse_post_processor(child, source, impl, all_tokens); !r) return r;
    }
    return {};
  }
  if (type == "ByteLevel") return {};  // only adjusts offsets
  if (type == "TemplateProcessing") {
    if (!impl.prefix_ids.empty() || !impl.suffix_ids.empty()) {
      return fail(unsupported(source, "more than one TemplateProcessing post_processor"));
    }
    const auto* single = o.if_contains("single");
    const auto* specials = o.if_contains("special_tokens");
    if (single == nullptr || !single->is_array()) return fail(invalid(source, "TemplateProcessing without 'single'"));
    bool seen_sequence = false;
    for (const auto& item : single->get_array()) {
      if (!item.is_object()) return fail(invalid(source, "TemplateProcessing item must be an object"));
      const auto& io = item.get_object();
      if (io.contains("Sequence")) {
        if (seen_sequence) return fail(unsupported(source, "TemplateProcessing 'single' with two sequences"));
        seen_sequence = true;
        continue;
      }
      const auto* sp = io.if_contains("SpecialToken");
      if (sp == nullptr || !sp->is_object())
        return fail(invalid(source, "TemplateProcessing item without SpecialToken"));
      const auto* id = sp->get_object().if_contains("id");
      if (id == nullptr || !id->is_string()) return fail(invalid(source, "TemplateProcessing SpecialToken without id"));
      const bj::value* entry = nullptr;
      if (specials != nullptr && specials->is_object()) entry = specials->get_object().if_contains(id->get_string());
      if (entry == nullptr || !entry->is_object() || !entry->get_object().contains("ids")) {
        return fail(invalid(source, fmt::format("TemplateProcessing special token '{}' missing from special_tokens",
                                                std::string_view(id->get_string()))));
      }
      auto& target = seen_sequence ? impl.suffix_ids : impl.prefix_ids;
      for (const auto& v : entry->get_object().at("ids").get_array()) {
        if (!v.is_int64() || v.get_int64() < 0 || v.get_int64() > INT32_MAX)
          return fail(invalid(source, "TemplateProcessing ids must be integers in 0..2^31-1"));
        target.push_back(static_cast<int32_t>(v.get_int64()));
      }
    }
    (void)all_tokens;
    return {};
  }
  return fail(unsupported(source, fmt::format("post_processor type '{}' is not supported (supported: ByteLevel, "
                                              "TemplateProcessing, Sequence)",
                                              type)));
}

Result<void> parse_decoder(const bj::value& value, std::string_view source, Tokenizer::Impl& impl) {
  if (value.is_null()) return {};
  if (!value.is_object()) return fail(invalid(source, "decoder must be an object or null"));
  const auto& o = value.get_object();
  const std::string_view type = type_of(o);
  if (type == "Sequence") {
    const auto* list = o.if_contains("decoders");
    if (list == nullptr || !list->is_array()) return fail(invalid(source, "Sequence decoder without 'decoders'"));
    for (const auto& child : list->get_array()) {
      if (auto r = parse_decoder(child, source, impl); !r) return r;
    }
    return {};
  }
  if (type == "ByteLevel") {
    impl.decoder = Tokenizer::Impl::DecoderKind::kByteLevel;
    return {};
  }
  return fail(
      unsupported(source, fmt::format("decoder type '{}' is not supported (supported: ByteLevel, Sequence)", type)));
}

std::optional<std::string> config_token(const bj::object& config, std::string_view key) {
  const auto* v = config.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) return std::string(v->get_string());
  if (v->is_object()) {
    if (const auto* c = v->get_object().if_contains("content"); c != nullptr && c->is_string()) {
      return std::string(c->get_string());
    }
  }
  return std::nullopt;
}

Result<std::string> read_text(const std::filesystem::path& path, std::string_view what) {
  return files::read_text_file(path, files::kMaxTokenizerFileBytes, what);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// AddedTokenTrie

void AddedTokenTrie::insert(std::string_view pattern, int32_t token_index) {
  if (pattern.empty()) return;
  int32_t node = 0;
  for (char ch : pattern) {
    const auto byte = static_cast<unsigned char>(ch);
    auto& kids = nodes_[node].children;
    auto it =
        std::lower_bound(kids.begin(), kids.end(), byte,
                         [](const std::pair<unsigned char, int32_t>& kid, unsigned char b) { return kid.first < b; });
    if (it != kids.end() && it->first == byte) {
      node = it->second;
    } else {
      const auto next = static_cast<int32_t>(nodes_.size());
      kids.insert(it, {byte, next});
      nodes_.push_back(Node{});
      node = next;
    }
  }
  // The first pattern inserted wins a duplicate, like HF's first-added token.
  if (nodes_[node].token < 0) nodes_[node].token = token_index;
  first_byte_[static_cast<unsigned char>(pattern[0])] = true;
  max_length_ = std::max(max_length_, pattern.size());
}

int32_t AddedTokenTrie::longest_at(std::string_view text, size_t pos, size_t& length) const {
  int32_t node = 0;
  int32_t best = -1;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const auto& kids = nodes_[node].children;
    auto it =
        std::lower_bound(kids.begin(), kids.end(), byte,
                         [](const std::pair<unsigned char, int32_t>& kid, unsigned char b) { return kid.first < b; });
    if (it == kids.end() || it->first != byte) break;
    node = it->second;
    if (nodes_[node].token >= 0) {
      best = nodes_[node].token;
      length = i + 1 - pos;
    }
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Encoding

struct Tokenizer::Impl::WordCache {
  struct Entry {
    uint32_t offset;
    uint32_t count;
  };
  boost::unordered_flat_map<std::string, Entry, StringHash, StringEq> map;
  std::vector<int32_t> arena;
  size_t key_bytes = 0;
  // Long words (runs of spaces, long identifiers) are cached too: they recur in real text and
  // their merges cost O(n log n). The cache is dropped whole when it outgrows its budget.
  static constexpr size_t kMaxWordBytes = 16 * 1024;
  static constexpr size_t kMaxKeyBytes = 16 * 1024 * 1024;
  static constexpr size_t kMaxEntries = 1 << 17;
};

Tokenizer::Impl::WordCache& Tokenizer::Impl::cache() const {
  // One cache per (thread, tokenizer): encode never takes a lock. A thread touching many
  // tokenizers keeps the caches of the 8 most recent.
  thread_local std::vector<std::pair<uint64_t, std::unique_ptr<WordCache>>> caches;
  for (auto& [owner, c] : caches) {
    if (owner == serial) return *c;
  }
  if (caches.size() >= 8) caches.erase(caches.begin());
  caches.emplace_back(serial, std::make_unique<WordCache>());
  return *caches.back().second;
}

void Tokenizer::Impl::split_added(std::string_view text, const AddedTokenTrie& trie,
                                  const std::function<void(std::string_view, int32_t)>& emit) const {
  if (trie.empty()) {
    if (!text.empty()) emit(text, -1);
    return;
  }
  size_t start_offset = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    if (!trie.may_start(static_cast<unsigned char>(text[pos]))) {
      ++pos;
      continue;
    }
    size_t length = 0;
    const int32_t index = trie.longest_at(text, pos, length);
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedTokenInfo& token = added[static_cast<size_t>(index)];
    size_t start = pos;
    size_t stop = pos + length;
    if (token.lstrip) {
      // Absorb the whitespace before the token (not past the previous split).
      size_t s = start;
      while (s > start_offset) {
        size_t back = s - 1;
        while (back > start_offset && (static_cast<unsigned char>(text[back]) & 0xC0) == 0x80) --back;
        size_t p = back;
        if (!u_isUWhiteSpace(static_cast<UChar32>(utf8::next_code_point(text, p)))) break;
        s = back;
      }
      start = s;
    }
    if (token.rstrip) {
      while (stop < text.size()) {
        size_t p = stop;
        if (!u_isUWhiteSpace(static_cast<UChar32>(utf8::next_code_point(text, p)))) break;
        stop = p;
      }
    }
    if (start_offset < start) emit(text.substr(start_offset, start - start_offset), -1);
    emit(text.substr(start, stop - start), token.id);
    start_offset = stop;
    pos = stop;
  }
  if (start_offset < text.size()) emit(text.substr(start_offset), -1);
}

void Tokenizer::Impl::encode(std::string_view text, bool add_special_tokens, std::vector<int32_t>& out) const {
  std::string repaired;
  if (!utf8::is_valid(text)) {
    repaired = utf8::to_valid(text);
    text = repaired;
  }
  if (add_special_tokens) out.insert(out.end(), prefix_ids.begin(), prefix_ids.end());
  encode_valid(text, out, cache());
  if (add_special_tokens) out.insert(out.end(), suffix_ids.begin(), suffix_ids.end());
}

void Tokenizer::Impl::encode_valid(std::string_view text, std::vector<int32_t>& out, WordCache& word_cache) const {
  // HF AddedVocabulary::extract_and_normalize: non-normalized added tokens are split out of the
  // raw text, the rest is normalized, then normalized added tokens are split out of that.
  split_added(text, raw_trie, [&](std::string_view segment, int32_t id) {
    if (id >= 0) {
      out.push_back(id);
      return;
    }
    std::string buffer;
    const std::string_view normalized = normalize(normalizers, segment, buffer);
    split_added(normalized, norm_trie, [&](std::string_view piece, int32_t piece_id) {
      if (piece_id >= 0) {
        out.push_back(piece_id);
      } else {
        pre_tokenize(0, piece, out, word_cache);
      }
    });
  });
}

void Tokenizer::Impl::pre_tokenize(size_t step_index, std::string_view piece, std::vector<int32_t>& out,
                                   WordCache& word_cache) const {
  if (piece.empty()) return;
  if (step_index == pre_steps.size()) {
    bpe(piece, out, word_cache);
    return;
  }
  const PreTokenizerStep& step = pre_steps[step_index];
  if (step.kind == PreTokenizerStep::Kind::kPrefixSpace) {
    if (piece.front() == ' ') {
      pre_tokenize(step_index + 1, piece, out, word_cache);
    } else {
      std::string prefixed;
      prefixed.reserve(piece.size() + 1);
      prefixed.push_back(' ');
      prefixed.append(piece);
      pre_tokenize(step_index + 1, prefixed, out, word_cache);
    }
    return;
  }
  // Fast path: the common Isolated regex split recurses as it finds matches.
  if (step.regex && step.behavior == SplitBehavior::kIsolated && !step.invert) {
    size_t prev = 0;
    step.regex->for_each_match(piece, [&](size_t s, size_t e) {
      if (prev < s) pre_tokenize(step_index + 1, piece.substr(prev, s - prev), out, word_cache);
      pre_tokenize(step_index + 1, piece.substr(s, e - s), out, word_cache);
      prev = e;
    });
    if (prev < piece.size()) pre_tokenize(step_index + 1, piece.substr(prev), out, word_cache);
    return;
  }
  // General path: HF Pattern::find_matches then SplitDelimiterBehavior.
  struct Segment {
    size_t start;
    size_t end;
    bool is_match;
  };
  std::vector<Segment> matches;
  size_t prev = 0;
  auto on_match = [&](size_t s, size_t e) {
    if (prev != s) matches.push_back({prev, s, false});
    matches.push_back({s, e, true});
    prev = e;
  };
  if (step.regex) {
    step.regex->for_each_match(piece, on_match);
  } else {
    size_t at = 0;
    while ((at = piece.find(step.literal, at)) != std::string_view::npos) {
      on_match(at, at + step.literal.size());
      at += step.literal.size();
    }
  }
  if (prev != piece.size()) matches.push_back({prev, piece.size(), false});
  if (step.invert) {
    for (auto& m : matches) m.is_match = !m.is_match;
  }
  std::vector<Segment> pieces;
  switch (step.behavior) {
    case SplitBehavior::kIsolated: pieces = matches; break;
    case SplitBehavior::kRemoved:
      for (const auto& m : matches) {
        if (!m.is_match) pieces.push_back(m);
      }
      break;
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const auto& m : matches) {
        if (m.is_match && !previous_match && !pieces.empty()) {
          pieces.back().end = m.end;
        } else {
          pieces.push_back(m);
        }
        previous_match = m.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = matches.rbegin(); it != matches.rend(); ++it) {
        if (it->is_match && !previous_match && !pieces.empty()) {
          pieces.back().start = it->start;
        } else {
          pieces.push_back(*it);
        }
        previous_match = it->is_match;
      }
      std::reverse(pieces.begin(), pieces.end());
      break;
    }
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const auto& m : matches) {
        if (m.is_match == previous_match && !pieces.empty()) {
          pieces.back().end = m.end;
        } else {
          pieces.push_back(m);
        }
        previous_match = m.is_match;
      }
      break;
    }
  }
  for (const auto& p : pieces) pre_tokenize(step_index + 1, piece.substr(p.start, p.end - p.start), out, word_cache);
}

void Tokenizer::Impl::bpe(std::string_view word, std::vector<int32_t>& out, WordCache& word_cache) const {
  if (ignore_merges) {
    const auto& map = byte_level ? vocab_raw : vocab;
    if (auto it = map.find(word); it != map.end()) {
      out.push_back(it->second);
      return;
    }
  }
  if (byte_level && word.size() == 1) {
    const int32_t id = byte_ids[static_cast<unsigned char>(word[0])];
    if (id >= 0) {
      out.push_back(id);
    } else if (unk_id) {
      out.push_back(*unk_id);
    }
    return;
  }
  const bool cacheable = word.size() <= WordCache::kMaxWordBytes;
  if (cacheable) {
    if (auto it = word_cache.map.find(word); it != word_cache.map.end()) {
      const auto* begin = word_cache.arena.data() + it->second.offset;
      out.insert(out.end(), begin, begin + it->second.count);
      return;
    }
  }
  const size_t before = out.size();
  merge_word(word, out);
  if (cacheable) {
    if (word_cache.map.size() >= WordCache::kMaxEntries || word_cache.key_bytes >= WordCache::kMaxKeyBytes) {
      word_cache.map.clear();
      word_cache.arena.clear();
      word_cache.key_bytes = 0;
    }
    word_cache.key_bytes += word.size();
    const auto offset = static_cast<uint32_t>(word_cache.arena.size());
    word_cache.arena.insert(word_cache.arena.end(), out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
    word_cache.map.emplace(std::string(word), WordCache::Entry{offset, static_cast<uint32_t>(out.size() - before)});
  }
}

void Tokenizer::Impl::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  // HF models/bpe/word.rs merge_all, step for step (including its stale-entry check by new id),
  // so ties and duplicate results resolve exactly as in HF.
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    bool alive;
  };
  struct Merge {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator<(const Merge& other) const {
      // The heap pops the largest: invert to pop the lowest (rank, pos).
      if (rank != other.rank) return rank > other.rank;
      return pos > other.pos;
    }
  };
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Merge> heap_storage;
  symbols.clear();

  std::optional<int32_t> pending_unk;
  auto push_symbol = [&](int32_t id) {
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, -1, true});
  };
  auto unit = [&](std::string_view s) {
    int32_t id = -1;
    if (byte_level && s.size() == 1) {
      id = byte_ids[static_cast<unsigned char>(s[0])];
    } else if (auto it = vocab.find(s); it != vocab.end()) {
      id = it->second;
    }
    if (id >= 0) {
      if (pending_unk) {
        push_symbol(*pending_unk);
        pending_unk.reset();
      }
      push_symbol(id);
    } else if (unk_id) {
      if (pending_unk && !fuse_unk) push_symbol(*pending_unk);
      pending_unk = *unk_id;
    }
  };
  if (byte_level) {
    for (size_t i = 0; i < word.size(); ++i) unit(word.substr(i, 1));
  } else {
    size_t pos = 0;
    while (pos < word.size()) {
      const size_t start = pos;
      utf8::next_code_point(word, pos);
      unit(word.substr(start, pos - start));
    }
  }
  if (pending_unk) push_symbol(*pending_unk);
  const auto n = static_cast<int32_t>(symbols.size());
  for (int32_t i = 0; i < n; ++i) symbols[static_cast<size_t>(i)].next = (i + 1 < n) ? i + 1 : -1;

  auto pair_key = [](int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  };
  // A binary heap on a reused thread-local vector (std::priority_queue would own and free it).
  std::vector<Merge>& queue = heap_storage;
  queue.clear();
  auto push = [&queue](const Merge& m) {
    queue.push_back(m);
    std::push_heap(queue.begin(), queue.end());
  };
  for (int32_t i = 0; i + 1 < n; ++i) {
    auto it = merges.find(pair_key(symbols[static_cast<size_t>(i)].id, symbols[static_cast<size_t>(i + 1)].id));
    if (it != merges.end()) push({it->second.rank, i, it->second.new_id});
  }
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end());
    const Merge top = queue.back();
    queue.pop_back();
    Symbol& current = symbols[static_cast<size_t>(top.pos)];
    if (!current.alive || current.next < 0) continue;
    Symbol& right = symbols[static_cast<size_t>(current.next)];
    auto it = merges.find(pair_key(current.id, right.id));
    if (it == merges.end() || it->second.new_id != top.new_id) continue;
    current.id = top.new_id;
    right.alive = false;
    current.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = top.pos;
    if (current.prev >= 0) {
      const Symbol& prev = symbols[static_cast<size_t>(current.prev)];
      auto p = merges.find(pair_key(prev.id, current.id));
      if (p != merges.end()) push({p->second.rank, current.prev, p->second.new_id});
    }
    if (current.next >= 0) {
      const Symbol& next = symbols[static_cast<size_t>(current.next)];
      auto p = merges.find(pair_key(current.id, next.id));
      if (p != merges.end()) push({p->second.rank, top.pos, p->second.new_id});
    }
  }
  for (const Symbol& s : symbols) {
    if (s.alive) out.push_back(s.id);
  }
  // The scratch of a huge word (a 4 MB prompt without spaces: ~110 MB) is not kept per thread.
  constexpr size_t kKeptScratch = 64 * 1024;
  if (symbols.capacity() > kKeptScratch) std::vector<Symbol>().swap(symbols);
  if (heap_storage.capacity() > kKeptScratch) std::vector<Merge>().swap(heap_storage);
}

std::string Tokenizer::Impl::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string bytes;
  const auto table_size = static_cast<int64_t>(id_to_token.size());
  bool first = true;
  for (int32_t id : ids) {
    if (id < 0 || id >= table_size || !has_token[static_cast<size_t>(id)]) continue;
    if (skip_special_tokens && special[static_cast<size_t>(id)]) continue;
    if (decoder == DecoderKind::kByteLevel) {
      const uint32_t begin = decoded_offsets[static_cast<size_t>(id)];
      const uint32_t end = decoded_offsets[static_cast<size_t>(id) + 1];
      bytes.append(decoded_arena, begin, end - begin);
    } else {
      if (!first) bytes.push_back(' ');
      bytes.append(id_to_token[static_cast<size_t>(id)]);
    }
    first = false;
  }
  if (utf8::is_valid(bytes)) return bytes;
  return utf8::to_valid(bytes);
}

size_t Tokenizer::Impl::stable_prefix(std::string_view text, std::vector<int32_t>& out) const {
  // Candidate cut: just before an ASCII space or newline that follows a letter, at least 8 bytes
  // (and the longest added token) before the end. Every supported pre-tokenizer regex ends a
  // letter run there after looking one character ahead and starts a new piece, normalization
  // never composes across ASCII, and no added token, now or after more text arrives, can
  // straddle it. The cut is also verified on the text at hand.
  constexpr size_t kTail = 8;
  const size_t reserve = std::max(kTail, std::max(raw_trie.max_length(), norm_trie.max_length()) + 1);
  if (text.size() <= reserve || !utf8::is_valid(text)) return 0;
  size_t cut = 0;
  for (size_t p = text.size() - reserve; p > 0; --p) {
    const char c = text[p];
    if (c != ' ' && c != '\n') continue;
    // The character before must be a letter (ASCII fast path, else any \p{L}: CJK text too).
    const auto b = static_cast<unsigned char>(text[p - 1]);
    if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')) {
      cut = p;
      break;
    }
    if (b >= 0x80) {
      size_t start = p - 1;
      while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
      size_t q = start;
      if (u_isalpha(static_cast<UChar32>(utf8::next_code_point(text, q))) && q == p) {
        cut = p;
        break;
      }
    }
  }
  if (cut == 0) return 0;
  // No added-token match may cover the cut.
  bool straddles = false;
  for (const AddedTokenTrie* trie : {&raw_trie, &norm_trie}) {
    const size_t from = cut > trie->max_length() ? cut - trie->max_length() : 0;
    for (size_t p = from; p < cut && !straddles; ++p) {
      size_t length = 0;
      if (trie->may_start(static_cast<unsigned char>(text[p])) && trie->longest_at(text, p, length) >= 0 &&
          p + length > cut) {
        straddles = true;
      }
    }
  }
  if (straddles) return 0;
  WordCache& word_cache = cache();
  std::vector<int32_t> whole;
  encode_valid(text, whole, word_cache);
  std::vector<int32_t> head;
  encode_valid(text.substr(0, cut), head, word_cache);
  if (head.size() > whole.size() || !std::equal(head.begin(), head.end(), whole.begin())) return 0;
  std::vector<int32_t> tail;
  encode_valid(text.substr(cut), tail, word_cache);
  if (head.size() + tail.size() != whole.size() ||
      !std::equal(tail.begin(), tail.end(), whole.begin() + static_cast<std::ptrdiff_t>(head.size()))) {
    return 0;
  }
  out.insert(out.end(), head.begin(), head.end());
  return cut;
}

// ---------------------------------------------------------------------------------------------
// Loading

namespace {

Result<void> load_model(const bj::object& model, std::string_view source, Tokenizer::Impl& impl) {
  const std::string_view type = type_of(model);
  if (!type.empty() && type != "BPE") {
    return fail(unsupported(source, fmt::format("model type '{}' is not supported (supported: BPE)", type)));
  }
  if (const auto* d = model.if_contains("dropout"); d != nullptr && !d->is_null()) {
    const double p = d->is_double() ? d->get_double() : (d->is_int64() ? static_cast<double>(d->get_int64()) : 1.0);
    if (p != 0.0) return fail(unsupported(source, "BPE dropout (non-deterministic) is not supported"));
  }
  if (get_flag(model, "byte_fallback")) return fail(unsupported(source, "BPE byte_fallback is not supported"));
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (const auto* v = model.if_contains(key); v != nullptr && v->is_string() && !v->get_string().empty()) {
      return fail(unsupported(source, fmt::format("BPE {} is not supported", key)));
    }
  }
  impl.ignore_merges = get_flag(model, "ignore_merges");
  impl.fuse_unk = get_flag(model, "fuse_unk");

  const auto* vocab = model.if_contains("vocab");
  if (vocab == nullptr || !vocab->is_object()) return fail(invalid(source, "model.vocab must be an object"));
  const auto& vocab_object = vocab->get_object();
  impl.vocab.reserve(vocab_object.size());
  const ByteAlphabet& alphabet = byte_alphabet();
  std::string raw;
  for (const auto& entry : vocab_object) {
    if (!entry.value().is_int64()) {
      return fail(invalid(source, fmt::format("vocab entry '{}' is not an integer", std::string_view(entry.key()))));
    }
    // Ids number the vocabulary's entries: one beyond its size is a corrupt file (an id of 4e8
    // would size the id tables at gigabytes).
    const int64_t raw_id = entry.value().get_int64();
    if (raw_id < 0 || raw_id >= static_cast<int64_t>(vocab_object.size())) {
      return fail(invalid(
          source, fmt::format("model.vocab['{}'] = {} is outside the vocabulary's {} ids (0..{}); "
                              "the file is corrupt: download it again",
                              printable(entry.key(), 80), raw_id, vocab_object.size(), vocab_object.size() - 1)));
    }
    const auto id = static_cast<int32_t>(raw_id);
    impl.vocab.insert_or_assign(std::string(entry.key()), id);
    if (impl.byte_level && alphabet.unmap(entry.key(), raw)) impl.vocab_raw.insert_or_assign(raw, id);
  }
  std::fill(std::begin(impl.byte_ids), std::end(impl.byte_ids), -1);
  for (int b = 0; b < 256; ++b) {
    if (auto it = impl.vocab.find(alphabet.byte_to_utf8[b]); it != impl.vocab.end()) impl.byte_ids[b] = it->second;
  }
  if (const auto* unk = model.if_contains("unk_token"); unk != nullptr && unk->is_string()) {
    auto it = impl.vocab.find(std::string_view(unk->get_string()));
    if (it == impl.vocab.end()) return fail(invalid(source, "unk_token is not in the vocabulary"));
    impl.unk_id = it->second;
  }

  const auto* merges = model.if_contains("merges");
  if (merges == nullptr || !merges->is_array()) return fail(invalid(source, "model.merges must be an array"));
  const auto& list = merges->get_array();
  impl.merges.reserve(list.size());
  std::string joined;
  for (size_t rank = 0; rank < list.size(); ++rank) {
    std::string_view a;
    std::string_view b;
    const auto& m = list[rank];
    if (m.is_string()) {
      const std::string_view line = m.get_string();
      const size_t space = line.find(' ');
      if (space == std::string_view::npos || line.find(' ', space + 1) != std::string_view::npos) {
        return fail(
            invalid(source, fmt::format("merge #{} '{}' is not two tokens separated by one space", rank + 1, line)));
      }
      a = line.substr(0, space);
      b = line.substr(space + 1);
    } else if (m.is_array() && m.get_array().size() == 2 && m.get_array()[0].is_string() &&
               m.get_array()[1].is_string()) {
      a = m.get_array()[0].get_string();
      b = m.get_array()[1].get_string();
    } else {
      return fail(invalid(source, fmt::format("merge #{} is neither \"a b\" nor [a, b]", rank + 1)));
    }
    auto ia = impl.vocab.find(a);
    auto ib = impl.vocab.find(b);
    joined.assign(a).append(b);
    auto in = impl.vocab.find(std::string_view(joined));
    if (ia == impl.vocab.end() || ib == impl.vocab.end() || in == impl.vocab.end()) {
      return fail(invalid(
          source, fmt::format("merge #{} ('{}' '{}') uses a token missing from the vocabulary", rank + 1, a, b)));
    }
    const uint64_t key =
        (static_cast<uint64_t>(static_cast<uint32_t>(ia->second)) << 32) | static_cast<uint32_t>(ib->second);
    impl.merges.insert_or_assign(key, MergeInfo{static_cast<int32_t>(rank), in->second});
  }
  return {};
}

}  // namespace

namespace {

// The id -> token table and the decoder's byte form of every id. kInvalidArgument when a
// post-processor id lies outside the table.
Result<void> build_id_tables(Tokenizer::Impl& impl, std::string_view source_name) {
  int32_t max_id = -1;
  for (const auto& [token, id] : impl.vocab) max_id = std::max(max_id, id);
  for (const auto& token : impl.added) max_id = std::max(max_id, token.id);
  const auto size = static_cast<size_t>(max_id + 1);
  for (const auto* ids : {&impl.prefix_ids, &impl.suffix_ids}) {
    for (const int32_t id : *ids) {
      if (id < 0 || static_cast<size_t>(id) >= size)
        return fail(
            invalid(source_name, fmt::format("post_processor special token id {} is outside the {} ids of the "
                                             "vocabulary and added tokens; the file is corrupt: download it again",
                                             id, size)));
    }
  }
  impl.id_to_token.assign(size, std::string());
  impl.has_token.assign(size, 0);
  impl.special.assign(size, 0);
  for (const auto& [token, id] : impl.vocab) {
    impl.id_to_token[static_cast<size_t>(id)] = token;
    impl.has_token[static_cast<size_t>(id)] = 1;
  }
  for (const auto& token : impl.added) {
    impl.id_to_token[static_cast<size_t>(token.id)] = token.content;
    impl.has_token[static_cast<size_t>(token.id)] = 1;
    impl.special[static_cast<size_t>(token.id)] = token.special ? 1 : 0;
  }
  if (impl.decoder == Tokenizer::Impl::DecoderKind::kByteLevel) {
    // HF's ByteLevel decoder maps a token's characters back to bytes when all of them are in
    // the byte alphabet, and keeps the token's UTF-8 otherwise (added tokens like <｜User｜>).
    const ByteAlphabet& alphabet = byte_alphabet();
    impl.decoded_offsets.assign(size + 1, 0);
    std::string raw;
    for (size_t id = 0; id < size; ++id) {
      impl.decoded_offsets[id] = static_cast<uint32_t>(impl.decoded_arena.size());
      const std::string& token = impl.id_to_token[id];
      if (alphabet.unmap(token, raw)) {
        impl.decoded_arena.append(raw);
      } else {
        impl.decoded_arena.append(token);
      }
    }
    impl.decoded_offsets[size] = static_cast<uint32_t>(impl.decoded_arena.size());
  }

  return {};
}

// What tokenizer_config.json adds: special token names, add_bos_token, the chat template(s).
Result<void> read_tokenizer_config(Tokenizer::Impl& impl, std::string_view tokenizer_config_json) {
  if (!tokenizer_config_json.empty()) {
    auto config = json::parse(tokenizer_config_json, "tokenizer_config.json");
    if (!config) return fail(config.error());
    if (config->is_object()) {
      const auto& c = config->get_object();
      impl.config.bos_token = config_token(c, "bos_token");
      impl.config.eos_token = config_token(c, "eos_token");
      impl.config.pad_token = config_token(c, "pad_token");
      impl.config.add_bos_token = get_flag(c, "add_bos_token");
      if (const auto* v = c.if_contains("tokenizer_class"); v != nullptr && v->is_string()) {
        impl.config.tokenizer_class = std::string(v->get_string());
      }
      if (const auto* v = c.if_contains("chat_template"); v != nullptr) {
        if (v->is_string()) {
          impl.config.chat_template = std::string(v->get_string());
        } else if (v->is_array()) {
          // Named templates ([{"name": "default", "template": ...}, {"name": "tool_use", ...}]):
          // transformers renders "default" unless told otherwise.
          for (const auto& entry : v->get_array()) {
            if (!entry.is_object()) continue;
            const auto* name = entry.get_object().if_contains("name");
            const auto* text = entry.get_object().if_contains("template");
            if (name == nullptr || !name->is_string() || text == nullptr || !text->is_string()) continue;
            impl.config.chat_template_names.emplace_back(name->get_string());
            if (name->get_string() == "default") impl.config.chat_template = std::string(text->get_string());
          }
        }
        if (impl.config.chat_template) impl.config.chat_template_origin = "tokenizer_config.json";
      }
    }
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_json(std::string_view tokenizer_json,
                                                        std::string_view tokenizer_config_json,
                                                        std::string_view source_name) {
  auto parsed = json::parse(tokenizer_json, source_name);
  if (!parsed) return fail(parsed.error());
  if (!parsed->is_object()) return fail(invalid(source_name, "tokenizer.json must be a JSON object"));
  const auto& root = parsed->get_object();
  auto impl = std::make_unique<Impl>();
  impl->source = std::string(source_name);
  impl->serial = g_next_serial.fetch_add(1);

  for (const char* key : {"truncation", "padding"}) {
    if (const auto* v = root.if_contains(key); v != nullptr && !v->is_null()) {
      return fail(
          unsupported(source_name, fmt::format("'{}' is set; ixbench encodes without {} (set it to null)", key, key)));
    }
  }
  if (auto r = parse_normalizer(root.contains("normalizer") ? root.at("normalizer") : bj::value(), source_name,
                                impl->normalizers);
      !r) {
    return fail(r.error());
  }
  if (auto r = parse_pre_tokenizer(root.contains("pre_tokenizer") ? root.at("pre_tokenizer") : bj::value(), source_name,
                                   *impl);
      !r) {
    return fail(r.error());
  }
  const auto* model = root.if_contains("model");
  if (model == nullptr || !model->is_object()) return fail(invalid(source_name, "missing 'model' object"));
  if (auto r = load_model(model->get_object(), source_name, *impl); !r) return fail(r.error());

  // Added tokens.
  if (const auto* list = root.if_contains("added_tokens"); list != nullptr && !list->is_null()) {
    if (!list->is_array()) return fail(invalid(source_name, "added_tokens must be an array"));
    const auto vocab_len = static_cast<int32_t>(impl->vocab.size());
    int32_t max_added = -1;
    boost::unordered_flat_set<std::string, StringHash, StringEq> seen_added;
    for (const auto& item : list->get_array()) {
      if (!item.is_object()) return fail(invalid(source_name, "added_tokens entries must be objects"));
      const auto& o = item.get_object();
      const auto* id = o.if_contains("id");
      const auto* content = o.if_contains("content");
      if (id == nullptr || !id->is_int64() || content == nullptr || !content->is_string()) {
        return fail(invalid(source_name, "added token without integer 'id' and string 'content'"));
      }
      AddedTokenInfo token;
      token.content = std::string(content->get_string());
      // HF ignores the stored id: AddedVocabulary::add_tokens gives a token its vocabulary id when
      // the model has it, else the next id after the vocabulary (or after the largest added id).
      // Real files store exactly those ids; a hand-edited one behaves as it does in HF.
      if (token.content.empty() || seen_added.contains(token.content)) continue;
      if (auto in_vocab = impl->vocab.find(std::string_view(token.content)); in_vocab != impl->vocab.end()) {
        token.id = in_vocab->second;
      } else if (max_added < 0) {
        token.id = vocab_len;
      } else {
        token.id = (max_added >= vocab_len || vocab_len == 0) ? max_added + 1 : vocab_len;
      }
      max_added = std::max(max_added, token.id);
      seen_added.insert(token.content);
      token.special = get_flag(o, "special");
      token.lstrip = get_flag(o, "lstrip");
      token.rstrip = get_flag(o, "rstrip");
      token.normalized = get_flag(o, "normalized", !token.special);
      if (get_flag(o, "single_word")) {
        return fail(unsupported(source_name, fmt::format("added token '{}' uses single_word", token.content)));
      }
      impl->added.push_back(std::move(token));
    }
  }
  std::stable_sort(impl->added.begin(), impl->added.end(),
                   [](const AddedTokenInfo& a, const AddedTokenInfo& b) { return a.id < b.id; });
  for (size_t i = 0; i < impl->added.size(); ++i) {
    const AddedTokenInfo& token = impl->added[i];
    if (token.normalized) {
      std::string buffer;
      impl->norm_trie.insert(normalize(impl->normalizers, token.content, buffer), static_cast<int32_t>(i));
    } else {
      impl->raw_trie.insert(token.content, static_cast<int32_t>(i));
    }
    impl->added_by_content.insert_or_assign(token.content, token.id);
    impl->added_public.push_back({token.id, token.content, token.special});
  }

  if (auto r = parse_post_processor(root.contains("post_processor") ? root.at("post_processor") : bj::value(),
                                    source_name, *impl, impl->vocab);
      !r) {
    return fail(r.error());
  }
  if (auto r = parse_decoder(root.contains("decoder") ? root.at("decoder") : bj::value(), source_name, *impl); !r) {
    return fail(r.error());
  }

  if (auto r = build_id_tables(*impl, source_name); !r) return fail(r.error());
  if (auto r = read_tokenizer_config(*impl, tokenizer_config_json); !r) return fail(r.error());
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::load(const std::filesystem::path& tokenizer_json_or_dir) {
  std::error_code ec;
  std::filesystem::path file = tokenizer_json_or_dir;
  if (std::filesystem::is_directory(file, ec)) file /= "tokenizer.json";
  if (!std::filesystem::is_regular_file(file, ec)) {
    return fail(
        ErrorCode::kNotFound,
        fmt::format("tokenizer file {} not found (give a tokenizer.json or a directory holding one)", file.string()));
  }
  auto text = read_text(file, "a tokenizer.json");
  if (!text) return fail(text.error());
  std::string config_text;
  const auto config_path = file.parent_path() / "tokenizer_config.json";
  if (std::filesystem::is_regular_file(config_path, ec)) {
    auto c = read_text(config_path, "a tokenizer_config.json");
    if (!c) return fail(c.error());
    config_text = std::move(*c);
  }
  auto tokenizer = from_json(*text, config_text, file.string());
  if (!tokenizer) return tokenizer;
  TokenizerConfig& config = (*tokenizer)->impl_->config;
  if (config.chat_template) config.chat_template_origin = config_path.string();
  const auto jinja_path = file.parent_path() / "chat_template.jinja";
  if (std::filesystem::is_regular_file(jinja_path, ec)) {
    auto jinja = read_text(jinja_path, "a chat template");
    if (!jinja) return fail(jinja.error());
    config.chat_template = std::move(*jinja);
    config.chat_template_origin = jinja_path.string();
  }
  return tokenizer;
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  impl_->encode(text, add_special_tokens, out);
  return out;
}

void Tokenizer::encode_into(std::string_view text, bool add_special_tokens, std::vector<int32_t>& out) const {
  impl_->encode(text, add_special_tokens, out);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  return impl_->decode(ids, skip_special_tokens);
}

size_t Tokenizer::count_tokens(std::string_view text) const {
  thread_local std::vector<int32_t> scratch;
  scratch.clear();
  impl_->encode(text, false, scratch);
  return scratch.size();
}

int32_t Tokenizer::vocab_size() const {
  return static_cast<int32_t>(impl_->id_to_token.size());
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (auto it = impl_->added_by_content.find(token); it != impl_->added_by_content.end()) return it->second;
  if (auto it = impl_->vocab.find(token); it != impl_->vocab.end()) return it->second;
  return std::nullopt;
}

std::optional<std::string_view> Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->id_to_token.size() || !impl_->has_token[static_cast<size_t>(id)]) {
    return std::nullopt;
  }
  return impl_->id_to_token[static_cast<size_t>(id)];
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->special.size() && impl_->special[static_cast<size_t>(id)] != 0;
}

const std::vector<Tokenizer::AddedToken>& Tokenizer::added_tokens() const {
  return impl_->added_public;
}
const TokenizerConfig& Tokenizer::config() const {
  return impl_->config;
}
const std::string& Tokenizer::source() const {
  return impl_->source;
}

void Tokenizer::encode_as_server(std::string_view text, bool add_special_tokens, std::vector<int32_t>& out) const {
  const size_t start = out.size();
  encode_into(text, add_special_tokens, out);
  const TokenizerConfig& c = impl_->config;
  if (!add_special_tokens || !c.add_bos_token || !c.bos_token) return;
  const auto bos = token_to_id(*c.bos_token);
  if (bos && (out.size() == start || out[start] != *bos))
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(start), *bos);
}

size_t Tokenizer::num_special_tokens_to_add() const {
  std::vector<int32_t> added;
  encode_as_server("", true, added);
  return added.size();
}

size_t Tokenizer::encode_stable_prefix(std::string_view text, std::vector<int32_t>& out) const {
  return impl_->stable_prefix(text, out);
}

}  // namespace ix::tok
