// Which files are read: hygiene (SkipByName, SkipByContent, SkippedInputs:
// what is not a log), --glob (GlobFilter), and the arguments expanded into
// files (ExpandInputs: directories walked, each real file once).
#include <dirent.h>
#include <re2/re2.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "engine/io/source_internal.h"
#include "parsers/flight_recorder.h"
#include "parsers/text_util.h"

namespace ncclscan {

// A zip archive's first local file header ("PK\3\4"; "PK\5\6": an empty one).
bool IsZipHeader(std::string_view h) {
  return StartsWith(h, std::string_view("PK\x03\x04", 4)) || StartsWith(h, std::string_view("PK\x05\x06", 4));
}

// A ustar / GNU / pax tar header: "ustar" at 257 and a valid header checksum.
bool IsTarHeader(std::string_view h) {
  if (h.size() < 512 || h.compare(257, 5, "ustar") != 0) return false;
  unsigned sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
  unsigned stored = 0;
  size_t i = 148;
  while (i < 156 && h[i] == ' ') ++i;
  for (; i < 156 && h[i] >= '0' && h[i] <= '7'; ++i) stored = stored * 8 + static_cast<unsigned>(h[i] - '0');
  return stored == sum;
}

namespace {

std::string_view BaseName(std::string_view p) {
  size_t slash = p.rfind('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

// The name content hygiene looks at: the base name without a compression suffix.
std::string SniffName(std::string_view path) {
  std::string b = Lower(BaseName(path));
  for (const char* ext : {".gz", ".zst", ".bz2", ".xz"}) {
    if (EndsWith(b, ext)) {
      b.resize(b.size() - std::strlen(ext));
      break;
    }
  }
  return b;
}

// ---- Hygiene ----

const char* SkipByName(std::string_view name) {
  std::string b = Lower(BaseName(name));
  for (const char* ext : {".md", ".markdown", ".rst"}) {
    if (EndsWith(b, ext)) return kSkipNotALog;
  }
  return nullptr;
}

const char* SkipByContent(std::string_view name, std::string_view head) {
  if (head.empty()) return nullptr;
  // Formats that are never logs, by magic number. (A Python pickle, "\x80\x02",
  // is kept: PyTorch Flight Recorder dumps are pickles.)
  static const std::string_view kMagic[] = {
      std::string_view("\x89PNG", 4),
      "\xff\xd8\xff",
      "GIF8",
      "%PDF-",
      "\177ELF",
      std::string_view("PK\x03\x04", 4),  // zip: also PyTorch checkpoints, wheels
      std::string_view("SQLite format 3\0", 16),
      std::string_view("7z\xbc\xaf\x27\x1c", 6),
      "Rar!",
      std::string_view("II*\0", 4),
      std::string_view("MM\0*", 4),
      "RIFF",
      std::string_view("\0asm", 4),
  };
  for (std::string_view m : kMagic) {
    if (StartsWith(head, m)) return kSkipBinary;
  }
  // A pickle is kept when it looks like a Flight Recorder dump (the scanner
  // reads it whole, parsers/flight_recorder.h); any other pickle is binary.
  if (LooksLikePickle(head)) return LooksLikeFlightRecorder(head) ? nullptr : kSkipBinary;
  if (IsTarHeader(head)) return kSkipBinary;  // an archive inside an archive is not opened
  // Text or not: NUL, control bytes other than whitespace / ESC / BS, and bytes
  // that are not UTF-8. Long NUL runs are left out of the count: a log the
  // file system zero-filled after a crash is still a log.
  size_t counted = 0, bad = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(head.data());
  size_t n = head.size();
  for (size_t i = 0; i < n;) {
    unsigned c = p[i];
    if (c == 0) {
      size_t j = i;
      while (j < n && p[j] == 0) ++j;
      if (j - i < 64 && j < n) {
        counted += j - i;
        bad += j - i;
      }
      i = j;
      continue;
    }
    if (c < 0x80) {
      ++counted;
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != 0x1b && c != '\b') ||
          c == 0x7f) {
        ++bad;
      }
      ++i;
      continue;
    }
    size_t len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    bool ok = len != 0 && c != 0xc0 && c != 0xc1 && c <= 0xf4;
    for (size_t k = 1; ok && k < len; ++k) ok = i + k >= n || (p[i + k] & 0xc0) == 0x80;  // cut at the end: fine
    if (ok) {
      counted += len;
      i += len;
    } else {
      ++counted;
      ++bad;
      ++i;
    }
  }
  if (counted > 0 && bad * 100 > counted * 30) return kSkipBinary;

  // A .json file is a log only as docker json-file lines or a Flight Recorder dump.
  if (EndsWith(SniffName(name), ".json")) {
    std::string_view t = head;
    if (StartsWith(t, "\xef\xbb\xbf")) t.remove_prefix(3);
    size_t k = t.find_first_not_of(" \t\r\n");
    if (k == std::string_view::npos) return nullptr;
    t.remove_prefix(k);
    if (t[0] != '{' && t[0] != '[') return nullptr;  // not JSON at all: read it
    std::string_view first_line = t.substr(0, t.find('\n'));
    if (t[0] == '{' && first_line.find("\"log\":") != std::string_view::npos && first_line.back() == '}') {
      return nullptr;  // docker json-file
    }
    if (LooksLikeFlightRecorder(t)) return nullptr;  // Flight Recorder (JSON form)
    return kSkipNotALog;
  }
  return nullptr;
}

namespace {

// The kMaxPaths smallest (reason, path) pairs, sorted: the same whatever the
// order they were met in, so merged partials name what one scan names.
void KeepSkippedPath(std::vector<std::pair<std::string, std::string>>* paths, std::pair<std::string, std::string> p) {
  auto it = std::lower_bound(paths->begin(), paths->end(), p);
  if (it != paths->end() && *it == p) return;
  if (paths->size() >= SkippedInputs::kMaxPaths) {
    if (it == paths->end()) return;
    paths->pop_back();
  }
  paths->insert(it, std::move(p));
}

}  // namespace

void SkippedInputs::Add(const char* reason, const std::string& path) {
  ++count[reason];
  if (every) every->emplace_back(reason, path);
  KeepSkippedPath(&paths, {reason, path});
}

void SkippedInputs::Merge(const SkippedInputs& o) {
  for (const auto& kv : o.count) count[kv.first] += kv.second;
  for (const auto& p : o.paths) KeepSkippedPath(&paths, p);
  walk_errors += o.walk_errors;
}

uint64_t SkippedInputs::Total() const {
  uint64_t t = 0;
  for (const auto& kv : count) t += kv.second;
  return t;
}

std::string SkippedInputs::Summary() const {
  if (Total() == 0 && walk_errors == 0) return "";
  std::string out;
  auto part = [&](const char* reason, const char* one, const char* many) {
    auto it = count.find(reason);
    if (it == count.end() || it->second == 0) return;
    std::string names;
    size_t shown = 0;
    for (const auto& p : paths) {
      if (p.first != reason) continue;
      if (shown == 3) {
        names += ", ...";
        break;
      }
      names += (shown++ ? ", " : "") + std::string(BaseName(p.second));
    }
    out += (out.empty() ? "" : ", ") + std::to_string(it->second) + " " + (it->second == 1 ? one : many);
    if (!names.empty()) out += " (" + names + ")";
  };
  part(kSkipNotALog, "non-log file", "non-log files");
  part(kSkipBinary, "binary file", "binary files");
  part(kSkipDuplicate, "duplicate", "duplicates");
  part(kSkipHidden, "hidden file", "hidden files");
  std::string line = out.empty() ? "" : "skipped: " + out;
  auto not_a_log = count.find(kSkipNotALog);
  if (not_a_log != count.end())
    line += not_a_log->second == 1 ? "; use -g GLOB to include it" : "; use -g GLOB to include them";
  if (count.count(kSkipHidden)) line += "; use --hidden to read hidden files";
  if (walk_errors) {
    line += (line.empty() ? "" : "; ") + std::to_string(walk_errors) + " path" + (walk_errors == 1 ? "" : "s") +
            " could not be read (see errors)";
  }
  return line;
}

// ---- Globs ----

namespace {

// Translates a glob (without its '!') to an RE2 pattern; false on a malformed glob.
bool GlobToRegex(std::string_view g, std::string* re, std::string* err) {
  std::string out;
  int braces = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    char c = g[i];
    if (c == '*') {
      if (i + 1 < g.size() && g[i + 1] == '*') {
        bool at_start = i == 0 || g[i - 1] == '/';
        ++i;
        if (at_start && i + 1 < g.size() && g[i + 1] == '/') {
          out += "(?:.*/)?";  // "**/": zero or more directories
          ++i;
        } else {
          out += ".*";
        }
      } else {
        out += "[^/]*";
      }
    } else if (c == '?') {
      out += "[^/]";
    } else if (c == '[') {
      size_t j = i + 1;
      bool neg = j < g.size() && (g[j] == '!' || g[j] == '^');
      if (neg) ++j;
      size_t k = j;
      if (k < g.size() && g[k] == ']') ++k;  // "[]...]": a literal ']'
      while (k < g.size() && g[k] != ']') ++k;
      if (k >= g.size()) {
        *err = "unclosed '[' in glob '" + std::string(g) + "'";
        return false;
      }
      out += neg ? "[^/" : "[";
      for (size_t x = j; x < k; ++x) {
        if (g[x] == '\\' || g[x] == '[' || g[x] == ']' || (g[x] == '^' && x == j)) out += '\\';
        out += g[x];
      }
      out += ']';
      i = k;
    } else if (c == '{') {
      ++braces;
      out += "(?:";
    } else if (c == '}' && braces > 0) {
      --braces;
      out += ")";
    } else if (c == ',' && braces > 0) {
      out += "|";
    } else if (c == '\\' && i + 1 < g.size()) {
      out += RE2::QuoteMeta(std::string(1, g[++i]));
    } else {
      out += RE2::QuoteMeta(std::string(1, c));
    }
  }
  if (braces) {
    *err = "unclosed '{' in glob '" + std::string(g) + "'";
    return false;
  }
  *re = out;
  return true;
}

}  // namespace

GlobFilter::GlobFilter() = default;
GlobFilter::~GlobFilter() = default;
GlobFilter::GlobFilter(const GlobFilter&) = default;
GlobFilter& GlobFilter::operator=(const GlobFilter&) = default;

bool GlobFilter::Add(const std::string& glob, std::string* err) {
  std::string_view g = glob;
  Glob x;
  if (StartsWith(g, "!")) {
    x.exclude = true;
    g.remove_prefix(1);
  }
  while (StartsWith(g, "/")) g.remove_prefix(1);  // anchored at the walked directory
  while (g.size() > 1 && g.back() == '/') g.remove_suffix(1);
  if (g.empty()) {
    *err = "empty glob '" + glob + "'";
    return false;
  }
  x.basename = g.find('/') == std::string_view::npos && glob.find('/') == std::string::npos;
  std::string re;
  if (!GlobToRegex(g, &re, err)) return false;
  RE2::Options o;
  o.set_dot_nl(true);
  o.set_log_errors(false);
  auto compiled = std::make_shared<const RE2>(re, o);
  if (!compiled->ok()) {
    *err = "invalid glob '" + glob + "': " + compiled->error();
    return false;
  }
  x.re = std::move(compiled);
  any_include_ |= !x.exclude;
  globs_.push_back(std::move(x));
  return true;
}

GlobFilter::Verdict GlobFilter::Match(std::string_view rel) const {
  while (StartsWith(rel, "./")) rel.remove_prefix(2);
  std::string_view base = BaseName(rel);
  for (auto it = globs_.rbegin(); it != globs_.rend(); ++it) {
    re2::StringPiece subject(it->basename ? base.data() : rel.data(), it->basename ? base.size() : rel.size());
    if (RE2::FullMatch(subject, *it->re)) return it->exclude ? Verdict::kExclude : Verdict::kInclude;
  }
  return Verdict::kNone;
}

bool GlobFilter::Selects(std::string_view rel) const {
  Verdict v = Match(rel);
  return v == Verdict::kInclude || (v == Verdict::kNone && !any_include_);
}

// ---- Expansion ----

std::string WithoutDotSegments(std::string_view p) {
  std::string out;
  while (StartsWith(p, "./")) p.remove_prefix(2);
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '/' && p.substr(i + 1, 2) == "./") {
      ++i;  // drop "/." of "/./"
      continue;
    }
    out += p[i];
  }
  return out;
}

namespace {

struct Candidate {
  InputPath in;
  dev_t dev = 0;
  ino_t ino = 0;
  bool has_id = false;
  bool via_link = false;  // reached through a symbolic link
};

class Walker {
 public:
  Walker(const GlobFilter& globs, ExpandedInputs* out, std::vector<Candidate>* found, std::vector<std::string>* errors)
      : globs_(globs), out_(out), found_(found), errors_(errors) {}

  void Walk(const std::string& dir, const std::string& rel, bool via_link, std::set<std::pair<dev_t, ino_t>>* active,
            int depth) {
    if (depth > 64) {
      Error(dir, "directory nesting too deep");
      return;
    }
    DIR* d = opendir(dir.c_str());
    if (!d) {
      Error(dir, strerror(errno));
      return;
    }
    std::vector<std::string> names;
    while (dirent* e = readdir(d)) {
      const std::string_view n = e->d_name;
      if (n == "." || n == "..") continue;
      if (n[0] == '.' && !globs_.hidden()) {
        // Hidden, as in ripgrep: counted (a directory once), not read; --hidden reads it.
        out_->skipped.Add(kSkipHidden, dir + (dir.back() == '/' ? "" : "/") + std::string(n));
        continue;
      }
      names.push_back(e->d_name);
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      std::string p = dir + (dir.back() == '/' ? "" : "/") + n;
      std::string r = rel.empty() ? n : rel + "/" + n;
      struct stat lst, st;
      bool link = lstat(p.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode);
      if (stat(p.c_str(), &st) != 0) {
        int e = errno;
        Error(p, link && e == ENOENT ? "dangling symbolic link (its target does not exist)"
                 : e == ELOOP        ? "symbolic link loop"
                                     : strerror(e));
        continue;
      }
      if (S_ISDIR(st.st_mode)) {
        if (!globs_.Walks(r)) continue;
        auto key = std::make_pair(st.st_dev, st.st_ino);
        if (active->count(key)) {
          Error(p, "symbolic link loop (directory already being scanned)");
          continue;
        }
        active->insert(key);
        Walk(p, r, via_link || link, active, depth + 1);
        active->erase(key);
      } else if (S_ISREG(st.st_mode)) {
        GlobFilter::Verdict v = globs_.Match(r);
        if (!globs_.Selects(r)) continue;  // the user's choice: not counted
        bool globbed = v == GlobFilter::Verdict::kInclude;
        if (!globbed) {
          if (const char* why = SkipByName(n)) {
            out_->skipped.Add(why, p);
            continue;
          }
        }
        Candidate c;
        c.in = InputPath{p, true, globbed};
        c.dev = st.st_dev;
        c.ino = st.st_ino;
        c.has_id = true;
        c.via_link = via_link || link;
        found_->push_back(std::move(c));
      }
      // FIFOs, sockets and devices inside directories are skipped: reading them could block.
    }
  }

  void Error(const std::string& path, const std::string& why) {
    errors_->push_back("cannot read " + path + ": " + why);
    out_->skipped.walk_errors++;
  }

 private:
  const GlobFilter& globs_;
  ExpandedInputs* out_;
  std::vector<Candidate>* found_;
  std::vector<std::string>* errors_;
};

}  // namespace

ExpandedInputs ExpandInputs(const std::vector<std::string>& args, const GlobFilter& globs,
                            std::vector<std::string>* errors, std::vector<std::pair<std::string, std::string>>* every) {
  ExpandedInputs out;
  out.skipped.every = every;
  std::vector<Candidate> found;
  Walker walker(globs, &out, &found, errors);
  for (const auto& a : args) {
    if (a == "-") {
      Candidate c;
      c.in.path = a;
      found.push_back(std::move(c));
      continue;
    }
    struct stat st;
    if (stat(a.c_str(), &st) != 0) {
      walker.Error(a, strerror(errno));
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      std::set<std::pair<dev_t, ino_t>> active{{st.st_dev, st.st_ino}};
      std::string d = a;
      while (d.size() > 1 && d.back() == '/') d.pop_back();
      struct stat lst;
      bool link = lstat(d.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode);
      walker.Walk(d, "", link, &active, 0);
    } else {
      // Regular files, and FIFOs/devices named explicitly: always read.
      Candidate c;
      c.in.path = a;
      c.dev = st.st_dev;
      c.ino = st.st_ino;
      c.has_id = true;
      found.push_back(std::move(c));
    }
  }
  // Each real file once. Of the paths that reach it, the one kept is: named
  // on the command line (no hygiene) before walked, reached without a link
  // before through one, then the first in path order ("./" aside).
  auto better = [](const Candidate& x, const Candidate& y) {
    if (x.in.walked != y.in.walked) return !x.in.walked;
    if (x.via_link != y.via_link) return !x.via_link;
    std::string a = WithoutDotSegments(x.in.path), b = WithoutDotSegments(y.in.path);  // "a.log" before "./a.log"
    if (a != b) return a < b;
    return x.in.path.size() < y.in.path.size();
  };
  std::sort(found.begin(), found.end(), [&](const Candidate& x, const Candidate& y) {
    if (x.has_id != y.has_id) return x.has_id < y.has_id;
    if (!x.has_id) return x.in.path < y.in.path;
    if (x.dev != y.dev) return x.dev < y.dev;
    if (x.ino != y.ino) return x.ino < y.ino;
    return better(x, y);
  });
  std::vector<Candidate> dups;
  for (size_t i = 0; i < found.size(); ++i) {
    const Candidate& c = found[i];
    bool dup = i > 0 && (c.has_id ? found[i - 1].has_id && found[i - 1].dev == c.dev && found[i - 1].ino == c.ino
                                  : !found[i - 1].has_id && found[i - 1].in.path == c.in.path);
    if (dup) {
      dups.push_back(c);
    } else {
      out.files.push_back(c.in);
    }
  }
  std::sort(out.files.begin(), out.files.end(), [](const InputPath& x, const InputPath& y) { return x.path < y.path; });
  std::sort(dups.begin(), dups.end(), [](const Candidate& x, const Candidate& y) { return x.in.path < y.in.path; });
  for (const auto& d : dups) out.skipped.Add(kSkipDuplicate, d.in.path);
  out.skipped.every = nullptr;  // the caller's list, not the result's
  return out;
}

std::vector<std::string> ExpandInputs(const std::vector<std::string>& args, std::vector<std::string>* errors) {
  std::vector<std::string> paths;
  for (auto& f : ExpandInputs(args, GlobFilter(), errors).files) paths.push_back(std::move(f.path));
  return paths;
}

}  // namespace ncclscan
