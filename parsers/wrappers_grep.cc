// grep's prefixes (parsers/wrappers.cc tries them among the other wrapper
// kinds): "path:", "path:123:", "123:" and context lines "path-123-".
#include "parsers/text_util.h"
#include "parsers/wrappers_internal.h"

namespace ncclscan::wrappers_internal {
namespace {

bool HasLogExtension(std::string_view base) {
  // Rotated and compressed names keep the extension before ".1" / ".gz".
  for (int strip = 0; strip < 2; ++strip) {
    size_t dot = base.rfind('.');
    if (dot == std::string_view::npos) return false;
    std::string_view ext = base.substr(dot);
    static const char* kExt[] = {".log", ".txt", ".out", ".err", ".stdout", ".stderr"};
    for (const char* e : kExt) {
      if (ext == e) return true;
    }
    bool digits = ext.size() > 1;
    for (size_t i = 1; i < ext.size(); ++i) digits &= IsDigit(ext[i]);
    if (!(digits || ext == ".gz" || ext == ".zst" || ext == ".bz2" || ext == ".xz")) return false;
    base = base.substr(0, dot);
  }
  return false;
}

// A source file: "ibgda.cpp:2234: NULL value …" (NVSHMEM), "c10d_logger.py:83: UserWarning"
// (Python's warnings) and "init.cc:1204:" (assertions) are where the program
// printed from, not a log file grep matched in.
bool IsSourceFile(std::string_view t) {
  static const char* kExt[] = {".cpp", ".cc", ".cu", ".cuh", ".c", ".h", ".hpp", ".py"};
  for (const char* e : kExt) {
    if (EndsWith(t, e)) return true;
  }
  return false;
}

bool IsFileLikeToken(std::string_view t) {
  if (t.empty() || t.size() > 512 || IsSourceFile(t)) return false;
  for (char c : t) {
    if (c == ' ' || c == '\t' || c == '[' || c == '<' || c == '(') return false;
  }
  if (t.find('/') != std::string_view::npos) return true;
  return HasLogExtension(t);
}

// grep context lines "path-123-": the longest file-like prefix followed by -digits-.
bool StripGrepContext(std::string_view* s, ParsedLine* out) {
  std::string_view t = *s;
  size_t sp = t.find_first_of(" \t");
  std::string_view head = t.substr(0, sp);
  for (size_t k = head.find('-'); k != std::string_view::npos; k = head.find('-', k + 1)) {
    std::string_view left = head.substr(0, k);
    if (left.find(':') != std::string_view::npos) break;
    std::string_view v = t.substr(k + 1);
    int64_t n;
    if (!ConsumeInt(&v, &n) || !ConsumePrefix(&v, "-")) continue;
    if (!IsFileLikeToken(left)) continue;
    out->src_file = left;
    out->src_line = n;
    *s = v;
    return true;
  }
  return false;
}

}  // namespace

// grep -H / -n: "path-123-" (context), "path:", "path:123:" and "123:" (grep -n alone).
Strip StripGrepPrefix(std::string_view* s, ParsedLine* out) {
  if (StripGrepContext(s, out)) return Strip::kStripped;
  std::string_view t = *s;
  size_t colon = t.find(':');
  if (colon == std::string_view::npos || colon == 0) return Strip::kNotThis;
  std::string_view tok = t.substr(0, colon);
  // bash names the script it runs the same way: "./run.sh: line 48: 28 Killed
  // python3 …" is the shell's own message, not a grep match.
  if (StartsWith(t.substr(colon + 1), " line ") && colon + 7 < t.size() && IsDigit(t[colon + 7]))
    return Strip::kNotThis;
  if (IsFileLikeToken(tok)) {
    std::string_view u = t.substr(colon + 1);
    int64_t n;
    std::string_view v = u;
    if (ConsumeInt(&v, &n) && ConsumePrefix(&v, ":")) {
      out->src_line = n;
      u = v;
    }
    out->src_file = tok;
    *s = u;
    return Strip::kStripped;
  }
  bool digits = colon <= 9;
  for (char c : tok) digits &= IsDigit(c);
  if (!(digits && colon + 1 < t.size() && t[colon + 1] != ' ' && StartsLikeHeader(t.substr(colon + 1))))
    return Strip::kNotThis;
  std::string_view v = tok;
  int64_t n;
  if (ConsumeInt(&v, &n)) out->src_line = n;
  s->remove_prefix(colon + 1);
  return Strip::kStripped;
}

}  // namespace ncclscan::wrappers_internal
