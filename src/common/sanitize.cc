#include "common/sanitize.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "common/utf8.h"

namespace ix {
namespace {

struct SecretList {
  std::mutex mutex;
  std::atomic<bool> any{false};     // read without the lock: most processes register none
  std::vector<std::string> values;  // longest first, so a secret containing another wins
};

SecretList& secrets() {
  static SecretList list;
  return list;
}

constexpr size_t kMinSecretLength = 4;

// Cuts `text` to at most `limit` bytes at a UTF-8 boundary, saying how much was left out.
std::string capped(std::string text, size_t limit) {
  if (text.size() <= limit) return text;
  size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  const size_t dropped = text.size() - cut;
  text.resize(cut);
  text += fmt::format("...({} more bytes)", dropped);
  return text;
}

void append_escape(unsigned char byte, std::string& out) {
  switch (byte) {
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    default: out += fmt::format("\\x{:02x}", byte);
  }
}

}  // namespace

void register_secret(std::string_view secret) {
  if (secret.size() < kMinSecretLength) return;
  auto& list = secrets();
  std::lock_guard lock(list.mutex);
  if (std::find(list.values.begin(), list.values.end(), secret) != list.values.end()) return;
  list.values.emplace_back(secret);
  list.any.store(true);
  std::stable_sort(list.values.begin(), list.values.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

void clear_secrets() {
  auto& list = secrets();
  std::lock_guard lock(list.mutex);
  list.values.clear();
  list.any.store(false);
}

std::string redact(std::string_view text) {
  auto& list = secrets();
  if (!list.any.load()) return std::string(text);
  std::lock_guard lock(list.mutex);
  std::string out(text);
  for (const std::string& secret : list.values) {
    size_t pos = 0;
    while ((pos = out.find(secret, pos)) != std::string::npos) {
      out.replace(pos, secret.size(), kRedacted);
      pos += kRedacted.size();
    }
  }
  return out;
}

namespace {

// printable()'s escapes; `keep_newlines` leaves '\n' as it is.
std::string escaped(std::string_view text, size_t limit, bool keep_newlines) {
  const std::string clean = redact(text);
  std::string out;
  out.reserve(clean.size());
  size_t pos = 0;
  while (pos < clean.size()) {
    const auto byte = static_cast<unsigned char>(clean[pos]);
    size_t bad = 0;
    const size_t len = utf8::valid_sequence_length(clean, pos, &bad);
    if (len == 0) {
      for (size_t i = 0; i < bad; ++i) append_escape(static_cast<unsigned char>(clean[pos + i]), out);
      pos += bad;
      continue;
    }
    if (len == 1) {
      if ((byte < 0x20 && !(keep_newlines && byte == '\n')) || byte == 0x7F) {
        append_escape(byte, out);
      } else {
        out += static_cast<char>(byte);
      }
    } else if (len == 2 && byte == 0xC2 && static_cast<unsigned char>(clean[pos + 1]) < 0xA0) {
      // C1 controls (U+0080..U+009F): some terminals act on them as on ESC sequences.
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(clean[pos + 1]));
    } else {
      out.append(clean, pos, len);
    }
    pos += len;
  }
  return capped(std::move(out), limit);
}

}  // namespace

std::string printable(std::string_view text, size_t limit) {
  return escaped(text, limit, false);
}

std::string printable_lines(std::string_view text, size_t limit) {
  return escaped(text, limit, true);
}

std::string storable(std::string_view text, size_t limit) {
  return capped(utf8::to_valid(redact(text)), limit);
}

}  // namespace ix
