// Laying out text for a terminal (engine/reports/report_internal.h): columns,
// wrapping at blanks and between tokens, one-row cuts.
#include <algorithm>
#include <string>

#include "engine/reports/report_internal.h"

namespace ncclscan {

// Columns a line of (sanitized) text takes at a terminal: one per character.
size_t Columns(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

namespace {

// The bytes of the first `cols` characters of s (all of s when it is shorter).
size_t BytesOfColumns(std::string_view s, size_t cols) {
  size_t i = 0;
  for (size_t c = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && c++ == cols) break;
  }
  return i;
}

}  // namespace

// Declared in report_internal.h: breaks at blanks; a word wider than a line
// after its last ',', '/', ';' or ':' that fits, else between two characters.
std::string WrapColumns(std::string_view text, size_t first_col, size_t indent, int width) {
  if (width <= 0) return std::string(text);
  const size_t w = std::max(static_cast<size_t>(width), indent + 20);
  std::string out;
  size_t col = first_col;
  bool line_start = true;  // nothing written on this line yet
  auto newline = [&] {
    out += '\n';
    out.append(indent, ' ');
    col = indent;
    line_start = true;
  };
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view word = text.substr(pos, end - pos);
    size_t cols = Columns(word);
    if (!line_start) {
      if (col + 1 + cols > w && cols > 0)
        newline();
      else {
        out += ' ';
        ++col;
      }
    }
    while (col + cols > w) {  // only a word wider than a whole line gets here
      // No room left after a long prefix, or the word fits a line of its own.
      if (col >= w || (col > indent && cols <= w - indent)) {
        newline();
        continue;
      }
      size_t take = w - col, i = BytesOfColumns(word, take);
      // Between two tokens of the word where it has any (after a ',', '/',
      // ';' or ':'): never inside a number or a host name when it can be helped.
      size_t token_end = i;
      while (token_end > 0 && std::string_view(",/;:").find(word[token_end - 1]) == std::string_view::npos) --token_end;
      if (token_end > 0) {
        take = Columns(word.substr(0, token_end));
        i = token_end;
      }
      out.append(word.substr(0, i));
      word.remove_prefix(i);
      cols -= take;
      newline();
    }
    out.append(word);
    col += cols;
    line_start = line_start && word.empty();
    pos = end + 1;
  }
  return out;
}

// `text` (one line, already made safe) cut to the columns left on a row that
// starts at `first_col`, ending in "..." when cut; unchanged when width is 0.
std::string OneRow(std::string_view text, size_t first_col, int width) {
  if (width <= 0) return std::string(text);
  const size_t room = static_cast<size_t>(width) > first_col + 8 ? static_cast<size_t>(width) - first_col : 8;
  if (Columns(text) <= room) return std::string(text);
  return std::string(text.substr(0, BytesOfColumns(text, room - 3))) + "...";
}

// The column where text laid out by WrapColumns from `first_col` ends.
size_t EndColumn(const std::string& wrapped, size_t first_col) {
  size_t nl = wrapped.rfind('\n');
  return nl == std::string::npos ? first_col + Columns(wrapped) : Columns(std::string_view(wrapped).substr(nl + 1));
}

}  // namespace ncclscan
