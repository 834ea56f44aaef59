#include "engine/reports/markdown_escape.h"

#include <algorithm>

#include "parsers/text_util.h"

namespace ncclscan {

namespace {

bool IsWordByte(char c) { return IsAlpha(c) || IsDigit(c) || c == '_'; }

// The longest run of backticks in s.
size_t LongestBacktickRun(std::string_view s) {
  size_t best = 0, run = 0;
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    best = std::max(best, run);
  }
  return best;
}

}  // namespace

std::string MarkdownText(std::string_view s, size_t max_bytes) {
  const std::string safe = SanitizeForTerminal(s, max_bytes);
  std::string out;
  out.reserve(safe.size() + safe.size() / 8);
  for (size_t i = 0; i < safe.size(); ++i) {
    char c = safe[i];
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      // Parentheses stay: a link or image needs a ']' right before them.
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '#':
      case '|':
      case '~':
      case '$':
        out += '\\';
        out += c;
        break;
      case '@':
        out += c;
        // A mention starts at a word boundary (an e-mail address is not one).
        if ((i == 0 || !IsWordByte(safe[i - 1])) && i + 1 < safe.size() && IsWordByte(safe[i + 1])) {
          out += "\xE2\x80\x8B";  // U+200B ZERO WIDTH SPACE
        }
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string MarkdownCodeSpan(std::string_view s, bool in_table_cell) {
  std::string body = SanitizeForTerminal(s);
  if (in_table_cell) {
    std::string t;
    for (char c : body) {
      if (c == '|') t += '\\';
      t += c;
    }
    body = std::move(t);
  }
  if (body.empty()) return "` `";
  const std::string tick(LongestBacktickRun(body) + 1, '`');
  // A renderer strips one space from each end when both ends have one, and a
  // backtick at an end would join the delimiter: pad with a space then.
  bool pad = body.front() == '`' || body.back() == '`' || (body.front() == ' ' && body.back() == ' ');
  return pad ? tick + " " + body + " " + tick : tick + body + tick;
}

std::string MarkdownFence(const std::vector<std::string>& lines) {
  size_t run = 0;
  for (const auto& l : lines) run = std::max(run, LongestBacktickRun(l));
  return std::string(std::max<size_t>(3, run + 1), '`');
}

}  // namespace ncclscan
