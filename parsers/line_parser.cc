#include "parsers/line_parser.h"

#include <simdjson.h>

#include <array>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <cstring>

#include "parsers/text_util.h"

namespace ncclscan {

const char* FamilyName(Family f) {
  switch (f) {
    case Family::kNccl: return "nccl";
    case Family::kTorch: return "torch";
    case Family::kElastic: return "elastic";
    case Family::kOther: return "other";
  }
  return "other";
}

struct LineParser::Json {
  simdjson::ondemand::parser parser;
  std::string buf;
};

LineParser::LineParser() : json_(new Json) {}
LineParser::~LineParser() = default;

namespace {

size_t Find(std::string_view s, std::string_view needle, size_t from = 0) {
  return FindLiteral(s, needle, from);
}

bool Contains(std::string_view s, std::string_view needle) { return Find(s, needle) != std::string_view::npos; }

// ANSI SGR sequences, with or without the ESC byte ("\x1b[36m" or a stray "[0m").
size_t AnsiLenAt(std::string_view s, size_t i) {
  size_t j = i;
  if (s[j] == '\x1b') ++j;
  if (j >= s.size() || s[j] != '[') return 0;
  ++j;
  size_t digits = 0;
  while (j < s.size() && (IsDigit(s[j]) || s[j] == ';')) { ++j; ++digits; }
  if (j >= s.size() || (s[j] != 'm' && !(s[i] == '\x1b' && (s[j] == 'K' || s[j] == 'A')))) return 0;
  if (s[i] != '\x1b' && (digits == 0 || digits > 8)) return 0;  // "[m" alone is too ambiguous
  return j + 1 - i;
}

// One pass over the line classifying the bytes the unwrapper cares about.
struct ByteScan {
  bool nul = false, cr = false, ansi = false;
  size_t control = 0;  // control bytes in the first 256 (binary detection)
};

ByteScan ScanBytes(std::string_view s) {
  // 1 = control byte, 2 = NUL, 4 = CR, 8 = ESC, 16 = '['
  static const auto kClass = [] {
    std::array<uint8_t, 256> t{};
    for (int c = 0; c < 0x20; ++c) t[c] = 1;
    t['\t'] = 0;
    t[0] = 1 | 2;
    t['\r'] = 1 | 4;
    t[0x1b] = 8;
    t['['] = 16;
    return t;
  }();
  ByteScan r;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  uint8_t all = 0;
  auto one = [&](size_t i) {
    uint8_t k = kClass[p[i]];
    if (!k) return;
    all |= k;
    if ((k & 1) && i < 256) ++r.control;
    if ((k & 16) && !r.ansi && i + 1 < n && IsDigit(s[i + 1]) && AnsiLenAt(s, i)) r.ansi = true;
  };
  size_t i = 0;
#ifdef __SSE2__
  // Most lines have no control byte at all and only a few '[': skip 16 bytes at
  // a time unless one of them is a control byte (<= 0x1f) or '['.
  const __m128i kMaxCtl = _mm_set1_epi8(0x1f), kBracket = _mm_set1_epi8('[');
  for (; i + 16 <= n; i += 16) {
    __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    __m128i ctl = _mm_cmpeq_epi8(_mm_min_epu8(x, kMaxCtl), x);
    __m128i br = _mm_cmpeq_epi8(x, kBracket);
    if (_mm_movemask_epi8(_mm_or_si128(ctl, br)) == 0) continue;
    for (size_t k = i; k < i + 16; ++k) one(k);
  }
#endif
  for (; i < n; ++i) one(i);
  r.nul = all & 2;
  r.cr = all & 4;
  r.ansi |= (all & 8) != 0;
  return r;
}

std::string_view StripAnsi(std::string_view s, Arena* arena) {
  char* out = arena->Allocate(s.size());
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '\x1b' || s[i] == '[') {
      size_t len = AnsiLenAt(s, i);
      if (len) { i += len; continue; }
    }
    if (s[i] != '\x1b') out[n++] = s[i];
    ++i;
  }
  return std::string_view(out, n);
}

bool LooksLikeHostToken(std::string_view t) {
  if (t.empty() || t.size() > 64) return false;
  bool alpha = false;
  for (char c : t) {
    if (IsAlpha(c)) alpha = true;
    else if (!IsDigit(c) && c != '-' && c != '.' && c != '_') return false;
  }
  return alpha;
}

// Does `s` start like an inner header we know (so a preceding "x: " is a wrapper)?
bool StartsLikeHeader(std::string_view s) {
  if (StartsWith(s, "[rank") || StartsWith(s, "NCCL ") || StartsWith(s, "[default")) return true;
  if (s.size() > 2 && s[0] == '[' && std::strchr("FEWIV", s[1]) && (s[2] == ' ' || IsDigit(s[2]))) return true;
  // host:pid:tid
  size_t sp = s.find(' ');
  std::string_view tok = s.substr(0, sp);
  size_t c2 = tok.rfind(':');
  if (c2 == std::string_view::npos || c2 == 0) return false;
  size_t c1 = tok.rfind(':', c2 - 1);
  if (c1 == std::string_view::npos) return false;
  std::string_view pid = tok.substr(c1 + 1, c2 - c1 - 1), tid = tok.substr(c2 + 1);
  if (pid.empty() || tid.empty()) return false;
  for (char c : pid) if (!IsDigit(c)) return false;
  for (char c : tid) if (!IsDigit(c)) return false;
  return true;
}

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
    if (!(digits || ext == ".gz" || ext == ".zst")) return false;
    base = base.substr(0, dot);
  }
  return false;
}

bool IsFileLikeToken(std::string_view t) {
  if (t.empty() || t.size() > 512) return false;
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

// "host:pid:tid " at the very start (host without blanks, '/' or ':').
bool StartsWithNcclProcess(std::string_view s) {
  size_t i = 0, n = std::min<size_t>(s.size(), 96);
  while (i < n && s[i] != ':' && s[i] != ' ' && s[i] != '/' && s[i] != '\t') ++i;
  if (i == 0 || i >= n || s[i] != ':') return false;
  for (int part = 0; part < 2; ++part) {
    size_t d = ++i;
    while (i < n && IsDigit(s[i])) ++i;
    if (i == d || i >= n || s[i] != (part == 0 ? ':' : ' ')) return false;
  }
  return true;
}

// One wrapper layer at the front of *s. Returns true if something was removed.
bool StripOneWrapper(std::string_view* s, ParsedLine* out) {
  std::string_view t = *s;
  if (t.empty()) return false;

  // Markdown quoting.
  if (StartsWith(t, "> ")) { s->remove_prefix(2); return true; }

  // ISO timestamps (shippers, kubectl --timestamps, CRI files "… stdout F ").
  if (t.size() >= 19 && IsDigit(t[0]) && t[4] == '-') {
    std::string_view u = t;
    double ts = ConsumeIsoTimestamp(&u);
    if (ts >= 0 && !u.empty() && (u[0] == ' ' || u[0] == '\t' || u[0] == ']')) {
      while (!u.empty() && (u[0] == ' ' || u[0] == '\t')) u.remove_prefix(1);
      if (ConsumePrefix(&u, "stdout ") || ConsumePrefix(&u, "stderr ")) {
        if (ConsumePrefix(&u, "F ") || ConsumePrefix(&u, "P ")) {}
      }
      if (out->time < 0) out->time = ts;
      *s = u;
      return true;
    }
  }

  // Kaggle "<secs>s\t<lineno>\t".
  if (IsDigit(t[0])) {
    size_t i = 0;
    while (i < t.size() && (IsDigit(t[i]) || t[i] == '.')) ++i;
    if (i < t.size() && t[i] == 's' && i + 1 < t.size() && t[i + 1] == '\t') {
      size_t j = i + 2;
      while (j < t.size() && IsDigit(t[j])) ++j;
      if (j < t.size() && t[j] == '\t' && j > i + 2) { s->remove_prefix(j + 1); return true; }
    }
  }

  // srun --label: right-aligned task id; het jobs "P0 3: ".
  {
    size_t i = 0;
    if (t[0] == 'P' && t.size() > 2 && IsDigit(t[1])) {
      i = 1;
      while (i < t.size() && IsDigit(t[i])) ++i;
      if (i >= t.size() || t[i] != ' ') i = 0;
    }
    while (i < t.size() && t[i] == ' ') ++i;
    size_t d = i;
    while (i < t.size() && IsDigit(t[i])) ++i;
    if (i > d && i - d <= 6 && i + 1 < t.size() && t[i] == ':' && t[i + 1] == ' ') {
      std::string_view num = t.substr(d, i - d);
      int64_t v;
      if (ConsumeInt(&num, &v) && out->rank_hint < 0) out->rank_hint = static_cast<int>(v);
      s->remove_prefix(i + 2);
      return true;
    }
  }

  if (t[0] == '[') {
    // MPI --tag-output "[1,3]<stdout>:", SageMaker "[1,mpirank:0,algo-1]<stdout>:", Horovod "[3]<stdout>:".
    size_t close = t.find(']');
    if (close != std::string_view::npos && close < 64) {
      std::string_view inner = t.substr(1, close - 1);
      std::string_view after = t.substr(close + 1);
      if (StartsWith(after, "<stdout>:") || StartsWith(after, "<stderr>:") || StartsWith(after, "<stddiag>:")) {
        size_t comma = inner.find(',');
        std::string_view r = comma == std::string_view::npos ? inner : inner.substr(comma + 1);
        ConsumePrefix(&r, "mpirank:");
        int64_t v;
        if (ConsumeInt(&r, &v) && out->rank_hint < 0) out->rank_hint = static_cast<int>(v);
        size_t colon = after.find(':');
        s->remove_prefix(close + 1 + colon + 1);
        return true;
      }
      if (close + 1 < t.size() && t[close + 1] == ':') {
        // "[rank3]:" (global rank) or torchrun "[default3]:" (role + local rank).
        if (StartsWith(inner, "rank")) {
          std::string_view r = inner.substr(4);
          int64_t v;
          if (ConsumeInt(&r, &v) && r.empty()) {
            out->rank_hint = static_cast<int>(v);
            s->remove_prefix(close + 2);
            if (!s->empty() && (*s)[0] == ' ') s->remove_prefix(1);
            return true;
          }
        }
        size_t k = 0;
        while (k < inner.size() && (IsAlpha(inner[k]) || inner[k] == '_')) ++k;
        if (k > 0 && k < inner.size()) {
          std::string_view r = inner.substr(k);
          int64_t v;
          if (ConsumeInt(&r, &v) && r.empty()) {
            out->local_rank_hint = static_cast<int>(v);
            s->remove_prefix(close + 2);
            return true;
          }
        }
      }
      // kubectl --prefix "[pod/name/container] ", "[node/name] ".
      if ((StartsWith(inner, "pod/") || StartsWith(inner, "node/")) && close + 1 < t.size() &&
          t[close + 1] == ' ') {
        std::string_view name = inner.substr(inner.find('/') + 1);
        size_t slash = name.find('/');
        out->host_hint = name.substr(0, slash);
        s->remove_prefix(close + 2);
        return true;
      }
      // Tool line numbers "[1830] " (three or more digits; "[3] NCCL" is a cut NCCL header).
      if (inner.size() >= 3 && close + 1 < t.size() && t[close + 1] == ' ') {
        bool digits = true;
        for (char c : inner) digits &= IsDigit(c);
        if (digits && !StartsWith(t.substr(close + 2), "NCCL")) {
          s->remove_prefix(close + 2);
          return true;
        }
      }
    }
    return false;
  }

  // Ray "(RayWorkerWrapper pid=270291, ip=10.1.2.3) " and "(pid=123) ".
  if (t[0] == '(') {
    size_t close = t.find(')');
    if (close != std::string_view::npos && close < 160 && close + 1 < t.size() && t[close + 1] == ' ') {
      std::string_view inner = t.substr(1, close - 1);
      size_t pid = Find(inner, "pid=");
      if (pid != std::string_view::npos && (pid == 0 || inner[pid - 1] == ' ')) {
        size_t ip = Find(inner, "ip=");
        if (ip != std::string_view::npos) {
          std::string_view v = inner.substr(ip + 3);
          out->host_hint = v.substr(0, v.find_first_of(", "));
        }
        s->remove_prefix(close + 2);
        return true;
      }
    }
    return false;
  }

  // Syslog "Nov 22 10:15:32 host app[123]: " and ctime "Thu Jan 23 11:55:50 2025".
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  static const char* kDays[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
  if (t.size() > 20 && IsAlpha(t[0]) && t[3] == ' ') {
    std::string_view u = t;
    for (const char* d : kDays) {
      if (StartsWith(u, d) && u[3] == ' ') { u.remove_prefix(4); break; }
    }
    int month = 0;
    for (int m = 0; m < 12; ++m) {
      if (StartsWith(u, kMonths[m]) && u.size() > 4 && u[3] == ' ') { month = m + 1; break; }
    }
    if (month) {
      u.remove_prefix(4);
      while (!u.empty() && u[0] == ' ') u.remove_prefix(1);
      int64_t day, hh, mm, ss;
      if (ConsumeInt(&u, &day) && ConsumePrefix(&u, " ") && ConsumeInt(&u, &hh) && ConsumePrefix(&u, ":") &&
          ConsumeInt(&u, &mm) && ConsumePrefix(&u, ":") && ConsumeInt(&u, &ss)) {
        double ts = SecondsOfYear(month, static_cast<int>(day), static_cast<int>(hh), static_cast<int>(mm),
                                  static_cast<double>(ss));
        if (ts >= 0) {
          if (out->time < 0) out->time = ts;
          int64_t year;
          std::string_view y = u;
          if (ConsumePrefix(&y, " ") && ConsumeInt(&y, &year)) u = y;  // ctime year
          if (!u.empty() && u[0] == ' ') {
            // syslog "host app[123]: "
            std::string_view v = u.substr(1);
            size_t sp = v.find(' ');
            size_t colon = v.find(": ");
            if (sp != std::string_view::npos && colon != std::string_view::npos && colon > sp && colon < 96 &&
                LooksLikeHostToken(v.substr(0, sp))) {
              out->host_hint = v.substr(0, sp);
              u = v.substr(colon + 2);
            } else {
              u = v;
            }
          }
          *s = u;
          return true;
        }
      }
    }
  }

  // grep -H / -n: "path-123-" (context), "path:", "path:123:" and "123:" (grep -n alone).
  if (StripGrepContext(s, out)) return true;
  {
    size_t colon = t.find(':');
    if (colon != std::string_view::npos && colon > 0) {
      std::string_view tok = t.substr(0, colon);
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
        return true;
      }
      bool digits = colon <= 9;
      for (char c : tok) digits &= IsDigit(c);
      if (digits && colon + 1 < t.size() && t[colon + 1] != ' ' && StartsLikeHeader(t.substr(colon + 1))) {
        std::string_view v = tok;
        int64_t n;
        if (ConsumeInt(&v, &n)) out->src_line = n;
        s->remove_prefix(colon + 1);
        return true;
      }
    }
  }

  // pdsh "host: " in front of a known header.
  {
    size_t colon = t.substr(0, 66).find(": ");
    if (colon != std::string_view::npos && LooksLikeHostToken(t.substr(0, colon))) {
      std::string_view tok = t.substr(0, colon);
      bool has_digit_or_dash = tok.find_first_of("0123456789-") != std::string_view::npos;
      if (has_digit_or_dash && StartsLikeHeader(t.substr(colon + 2))) {
        out->host_hint = tok;
        s->remove_prefix(colon + 2);
        return true;
      }
    }
  }
  return false;
}

}  // namespace

bool LineParser::UnwrapDockerJson(std::string_view s, Arena* arena, ParsedLine* out) {
  Json& j = *json_;
  j.buf.assign(s.data(), s.size());
  j.buf.append(simdjson::SIMDJSON_PADDING, '\0');
  simdjson::ondemand::document doc;
  if (j.parser.iterate(j.buf.data(), s.size(), j.buf.size()).get(doc) != simdjson::SUCCESS) return false;
  simdjson::ondemand::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) return false;
  std::string_view log, time;
  bool have_log = false;
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return false;
    if (key == "log") {
      if (field.value().get_string().get(log) != simdjson::SUCCESS) return false;
      have_log = true;
    } else if (key == "time") {
      if (field.value().get_string().get(time) != simdjson::SUCCESS) time = {};
    }  // other fields ("stream") are skipped by the iterator
  }
  if (!have_log) return false;
  while (!log.empty() && (log.back() == '\n' || log.back() == '\r')) log.remove_suffix(1);
  out->text = arena->Store(log);
  if (!time.empty()) {
    double ts = ConsumeIsoTimestamp(&time);
    if (ts >= 0 && out->time < 0) out->time = ts;
  }
  return true;
}

void LineParser::Unwrap(std::string_view raw, Arena* arena, ParsedLine* out) {
  std::string_view s = raw;
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  ByteScan scan = ScanBytes(s);
  // tqdm-style "\r" redraws: keep the text after the last '\r'.
  if (scan.cr) {
    if (const void* cr = memrchr(s.data(), '\r', s.size())) {
      s.remove_prefix(static_cast<const char*>(cr) - s.data() + 1);
      scan = ScanBytes(s);
    }
  }
  // NUL bytes inside a line: dropped so the text can still be matched.
  if (scan.nul) {
    out->had_nul = true;
    char* buf = arena->Allocate(s.size());
    size_t n = 0;
    for (char c : s) {
      if (c != '\0') buf[n++] = c;
    }
    s = std::string_view(buf, n);
    scan = ScanBytes(s);
  }
  // Mostly binary: count, do not match.
  if (scan.control * 4 > std::min<size_t>(s.size(), 256)) {
    out->binary = true;
    out->text = s;
    return;
  }
  if (scan.ansi) s = StripAnsi(s, arena);

  for (int layer = 0; layer < 12; ++layer) {
    // Fast path: a bare NCCL line ("host:pid:tid ...") carries no outer wrapper.
    if (StartsWithNcclProcess(s)) break;
    if (!s.empty() && s[0] == '{' && Contains(s.substr(0, 16), "\"log\"")) {
      ParsedLine tmp = *out;
      if (UnwrapDockerJson(s, arena, &tmp)) {
        *out = tmp;
        s = out->text;
        if (ScanBytes(s).ansi) s = StripAnsi(s, arena);
        continue;
      }
    }
    if (!StripOneWrapper(&s, out)) break;
  }
  out->text = s;
}

// ---------------------------------------------------------------------------
// NCCL header: "[ts] host:pid:tid [dev] (file:line (func) |time func:line )NCCL LEVEL msg"

namespace {

struct LevelWord {
  std::string_view word;
  NcclLevel level;
};
constexpr LevelWord kLevels[] = {{"INFO ", NcclLevel::kInfo},   {"WARN ", NcclLevel::kWarn},
                                 {"TRACE ", NcclLevel::kTrace}, {"CALL ", NcclLevel::kCall},
                                 {"ABORT ", NcclLevel::kAbort}};

// The token ending just before position `end` (exclusive, end points at a space
// or the string end). Returns start index.
size_t TokenStart(std::string_view s, size_t end) {
  size_t i = end;
  while (i > 0 && s[i - 1] != ' ') --i;
  return i;
}

bool ParseHostPidTid(std::string_view tok, ParsedLine* line) {
  size_t c2 = tok.rfind(':');
  if (c2 == std::string_view::npos || c2 == 0) return false;
  size_t c1 = tok.rfind(':', c2 - 1);
  if (c1 == std::string_view::npos || c1 == 0) return false;
  std::string_view pid = tok.substr(c1 + 1, c2 - c1 - 1), tid = tok.substr(c2 + 1);
  int64_t p, t;
  if (!ConsumeInt(&pid, &p) || !pid.empty() || !ConsumeInt(&tid, &t) || !tid.empty()) return false;
  std::string_view host = tok.substr(0, c1);
  // A grep prefix glued in front ("rank3.log:12:host") leaves colons: keep the last part.
  size_t c0 = host.rfind(':');
  if (c0 != std::string_view::npos) host = host.substr(c0 + 1);
  if (host.empty()) return false;
  line->host = host;
  line->pid = p;
  line->tid = t;
  return true;
}

bool ParseDevToken(std::string_view tok, int* dev) {
  if (tok.size() < 3 || tok.front() != '[' || tok.back() != ']') return false;
  std::string_view d = tok.substr(1, tok.size() - 2);
  int64_t v;
  if (!ConsumeInt(&d, &v) || !d.empty()) return false;
  *dev = static_cast<int>(v);
  return true;
}

// NCCL 2.26+ "[2025-05-02 14:03:11] " (or any custom text) before the host.
void ParseNcclTimestamp(std::string_view pre, ParsedLine* line) {
  pre = TrimSpace(pre);
  if (pre.size() >= 2 && pre.front() == '[' && pre.back() == ']') pre = pre.substr(1, pre.size() - 2);
  size_t k = pre.find_first_of("0123456789");
  while (k != std::string_view::npos && k + 19 <= pre.size()) {
    std::string_view u = pre.substr(k);
    double ts = ConsumeIsoTimestamp(&u);
    if (ts >= 0) {
      line->time = ts;
      return;
    }
    k = pre.find_first_of("0123456789", pre.find_first_not_of("0123456789", k));
  }
}

// Finds the start of a "host:pid:tid [dev] " header that ends right before the
// "NCCL" keyword at `kw` (skipping an optional "file:line (func) " or TRACE
// "time func:line "). Returns npos if the tokens do not fit.
size_t HeaderStart(std::string_view s, size_t kw, ParsedLine* line) {
  if (kw == 0) return 0;
  if (s[kw - 1] != ' ') return std::string_view::npos;
  size_t end = kw - 1;
  size_t start = TokenStart(s, end);
  std::string_view tok = s.substr(start, end - start);
  // Optional "(func)" (2.30+).
  if (tok.size() >= 2 && tok.front() == '(' && tok.back() == ')') {
    if (start == 0) return std::string_view::npos;
    end = start - 1;
    start = TokenStart(s, end);
    tok = s.substr(start, end - start);
  }
  // Optional "file:line" (WARN) or "func:line" preceded by a TRACE time.
  if (!tok.empty() && tok.front() != '[' && tok.find(':') != std::string_view::npos) {
    size_t c = tok.rfind(':');
    std::string_view num = tok.substr(c + 1);
    int64_t v;
    if (ConsumeInt(&num, &v) && num.empty() && c > 0) {
      // Could be the host:pid:tid itself (CALL lines have no [dev]).
      if (ParseHostPidTid(tok, line) && tok.find(':') != c) {
        return start;
      }
      line->src_loc = tok;
      if (start == 0) return 0;  // cut-down line: "file:line NCCL WARN"
      end = start - 1;
      start = TokenStart(s, end);
      tok = s.substr(start, end - start);
      // TRACE "1523.041870"
      if (!tok.empty() && IsDigit(tok[0]) && tok.find('.') != std::string_view::npos &&
          tok.find(':') == std::string_view::npos) {
        if (start == 0) return 0;
        end = start - 1;
        start = TokenStart(s, end);
        tok = s.substr(start, end - start);
      }
    }
  }
  int dev;
  if (ParseDevToken(tok, &dev)) {
    line->dev = dev;
    if (start == 0) return 0;  // "[3] NCCL INFO …": prefix cut down
    end = start - 1;
    start = TokenStart(s, end);
    tok = s.substr(start, end - start);
  }
  if (ParseHostPidTid(tok, line)) return start;
  // Prefix removed or mangled: accept if the keyword directly follows [dev] or file:line.
  if (line->dev >= 0 || !line->src_loc.empty()) return end + 1;
  return std::string_view::npos;
}

}  // namespace

bool ParseNcclHeader(ParsedLine* line, std::string_view* rest) {
  std::string_view s = line->text;
  *rest = {};
  if (StartsWith(s, "NCCL version ")) {
    line->family = Family::kNccl;
    line->level = NcclLevel::kVersion;
    line->message = s;
    return true;
  }
  size_t kw = Find(s, "NCCL ");
  NcclLevel level = NcclLevel::kNone;
  size_t msg_start = 0;
  size_t hdr = std::string_view::npos;
  while (kw != std::string_view::npos) {
    std::string_view after = s.substr(kw + 5);
    for (const LevelWord& lw : kLevels) {
      if (StartsWith(after, lw.word)) {
        ParsedLine tmp = *line;
        size_t h = HeaderStart(s, kw, &tmp);
        if (h != std::string_view::npos) {
          *line = tmp;
          level = lw.level;
          msg_start = kw + 5 + lw.word.size();
          hdr = h;
        }
        break;
      }
    }
    if (level != NcclLevel::kNone) break;
    kw = Find(s, "NCCL ", kw + 1);
  }
  if (level == NcclLevel::kNone) {
    // Pre-2.4 lines have no NCCL keyword: "host:pid:tid [dev] INFO msg".
    for (std::string_view w : {std::string_view("] INFO "), std::string_view("] WARN ")}) {
      size_t k = Find(s, w);
      if (k == std::string_view::npos) continue;
      ParsedLine tmp = *line;
      size_t dev_start = TokenStart(s, k + 1);
      int dev;
      if (!ParseDevToken(s.substr(dev_start, k + 1 - dev_start), &dev) || dev_start == 0) continue;
      size_t hs = TokenStart(s, dev_start - 1);
      if (!ParseHostPidTid(s.substr(hs, dev_start - 1 - hs), &tmp)) continue;
      tmp.dev = dev;
      *line = tmp;
      level = w[2] == 'I' ? NcclLevel::kInfo : NcclLevel::kWarn;
      msg_start = k + w.size();
      hdr = hs;
      break;
    }
    if (level == NcclLevel::kNone) return false;
  }
  if (hdr > 0) ParseNcclTimestamp(s.substr(0, hdr), line);
  line->family = Family::kNccl;
  line->level = level;
  std::string_view msg = s.substr(msg_start);
  // Two lines glued together: a second "host:pid:tid [dev] NCCL INFO|WARN" inside.
  for (size_t n = Find(msg, "NCCL "); n != std::string_view::npos; n = Find(msg, "NCCL ", n + 1)) {
    if (n == 0 || msg[n - 1] != ' ') continue;
    size_t k = n - 1;
    std::string_view after = msg.substr(k + 6);
    if (!StartsWith(after, "INFO ") && !StartsWith(after, "WARN ")) continue;
    ParsedLine tmp;
    size_t h = HeaderStart(msg, k + 1, &tmp);
    if (h != std::string_view::npos && h > 0 && !tmp.host.empty()) {
      *rest = msg.substr(h);
      msg = TrimSpace(msg.substr(0, h));
      break;
    }
  }
  line->message = msg;
  return true;
}

// ---------------------------------------------------------------------------
// c10 / glog header and the process-group prefix.

namespace {

bool IsSeverity(char c) { return c == 'F' || c == 'E' || c == 'W' || c == 'I' || c == 'V'; }

// "MMDD HH:MM:SS(.frac)" at the front of *s.
double ConsumeGlogTime(std::string_view* s) {
  std::string_view u = *s;
  size_t i = 0;
  while (i < u.size() && IsDigit(u[i])) ++i;
  if (i < 3 || i > 4 || i + 9 > u.size() || u[i] != ' ') return -1;
  int mmdd = 0;
  for (size_t k = 0; k < i; ++k) mmdd = mmdd * 10 + (u[k] - '0');
  u.remove_prefix(i + 1);
  int64_t hh, mm, ss;
  if (!ConsumeInt(&u, &hh) || !ConsumePrefix(&u, ":") || !ConsumeInt(&u, &mm) || !ConsumePrefix(&u, ":") ||
      !ConsumeInt(&u, &ss)) {
    return -1;
  }
  double frac = 0;
  if (ConsumePrefix(&u, ".")) {
    double scale = 0.1;
    while (!u.empty() && IsDigit(u[0])) {
      frac += (u[0] - '0') * scale;
      scale /= 10;
      u.remove_prefix(1);
    }
  }
  double ts = SecondsOfYear(mmdd / 100, mmdd % 100, static_cast<int>(hh), static_cast<int>(mm), ss + frac);
  if (ts < 0) return -1;
  *s = u;
  return ts;
}

// "[PG ID 0 PG GUID 0(default_pg) Rank 3] ", "[PG 1 Rank 0] ", "[Rank 3] ".
void ParsePgPrefix(std::string_view msg, ParsedLine* line) {
  if (msg.empty() || msg[0] != '[') return;
  size_t close = msg.find(']');
  if (close == std::string_view::npos || close > 128) return;
  std::string_view inner = msg.substr(1, close - 1);
  size_t r = inner.rfind("Rank ");
  if (r == std::string_view::npos) return;
  std::string_view num = inner.substr(r + 5);
  int64_t v;
  if (!ConsumeInt(&num, &v) || !num.empty()) return;
  if (StartsWith(inner, "PG ")) {
    std::string_view id = inner.substr(3);
    ConsumePrefix(&id, "ID ");
    size_t e = 0;
    while (e < id.size() && IsDigit(id[e])) ++e;
    line->pg_id = id.substr(0, e);
  } else if (r != 0) {
    return;
  }
  line->pg_rank = static_cast<int>(v);
}

}  // namespace

bool ParseTorchHeader(ParsedLine* line) {
  std::string_view s = line->text;
  if (s.size() < 4) return false;
  std::string_view file;
  if (s[0] == '[' && IsSeverity(s[1])) {
    // "[E ProcessGroupNCCL.cpp:474] " / "[E1122 10:15:32.123456789 ProcessGroupNCCL.cpp:616] "
    std::string_view u = s.substr(2);
    if (!u.empty() && IsDigit(u[0])) {
      double ts = ConsumeGlogTime(&u);
      if (ts < 0) return false;
      line->time = ts;
    }
    if (!ConsumePrefix(&u, " ")) return false;
    size_t close = u.find("] ");
    if (close == std::string_view::npos || close > 200 || u.substr(0, close).find(' ') != std::string_view::npos) {
      return false;
    }
    file = u.substr(0, close);
    line->message = u.substr(close + 2);
  } else if (IsSeverity(s[0]) && IsDigit(s[1])) {
    // glog: "E0731 10:50:08.043000 3247964 path/api.py:869] msg"
    std::string_view u = s.substr(1);
    double ts = ConsumeGlogTime(&u);
    if (ts < 0) return false;
    int64_t tid;
    if (!ConsumePrefix(&u, " ")) return false;
    while (!u.empty() && u[0] == ' ') u.remove_prefix(1);
    if (!ConsumeInt(&u, &tid) || !ConsumePrefix(&u, " ")) return false;
    size_t close = u.find("] ");
    if (close == std::string_view::npos || close > 300) return false;
    file = u.substr(0, close);
    line->message = u.substr(close + 2);
    line->time = ts;
  } else if (StartsWith(s, "[20") && s.size() > 26 && s[24] == ']') {
    // torch 2.1-2.2 python logger "[2024-07-25 06:36:18,293] torch.distributed.elastic…: [WARNING] msg"
    std::string_view u = s.substr(1);
    double ts = ConsumeIsoTimestamp(&u);
    if (ts < 0 || !ConsumePrefix(&u, "] ")) return false;
    line->time = ts;
    size_t colon = u.find(": ");
    if (colon == std::string_view::npos) return false;
    file = u.substr(0, colon);
    std::string_view m = u.substr(colon + 2);
    if (!m.empty() && m[0] == '[') {
      size_t e = m.find("] ");
      if (e != std::string_view::npos && e < 12) m.remove_prefix(e + 2);
    }
    line->message = m;
    line->severity = 'I';
  } else {
    // stdlib logging "WARNING:torch.distributed.elastic.multiprocessing.api:msg"
    static const std::string_view kLevelsPy[] = {"WARNING:", "ERROR:", "INFO:", "CRITICAL:", "DEBUG:"};
    for (std::string_view lv : kLevelsPy) {
      if (StartsWith(s, lv) && StartsWith(s.substr(lv.size()), "torch.")) {
        std::string_view u = s.substr(lv.size());
        size_t colon = u.find(':');
        if (colon == std::string_view::npos) return false;
        file = u.substr(0, colon);
        line->message = u.substr(colon + 1);
        line->severity = lv[0];
        line->family = Family::kElastic;
        return true;
      }
    }
    return false;
  }
  if (!line->severity) line->severity = s[0] == '[' ? s[1] : s[0];
  line->family = (Contains(file, "elastic") || Contains(file, "torchrun") || Contains(file, "run.py"))
                     ? Family::kElastic
                     : Family::kTorch;
  ParsePgPrefix(line->message, line);
  return true;
}

Family ClassifyHeaderless(std::string_view t) {
  // Elastic agent output and the ChildFailedError table.
  if (Contains(t, "torch.distributed.elastic") || Contains(t, "ChildFailedError") ||
      Contains(t, "Root Cause (first observed failure)") || Contains(t, "Sending process") ) {
    return Family::kElastic;
  }
  if (StartsWith(t, "  rank      :") || StartsWith(t, "  exitcode  :") || StartsWith(t, "  host      :") ||
      StartsWith(t, "  traceback :") || StartsWith(t, "  time      :") || StartsWith(t, "  error_file:")) {
    return Family::kElastic;
  }
  if (Contains(t, "NCCL") || Contains(t, "ProcessGroup") || Contains(t, "DistBackendError") ||
      Contains(t, "what():") || Contains(t, "[PG ") || Contains(t, "Process group") ||
      Contains(t, "Watchdog") || Contains(t, "c10d") || Contains(t, "torch.distributed") ||
      Contains(t, "CUDA out of memory") || Contains(t, "WorkNCCL")) {
    return Family::kTorch;
  }
  return Family::kOther;
}

void LineParser::Parse(std::string_view raw, Arena* arena, ParsedLine* out, std::string_view* rest) {
  *out = ParsedLine();
  *rest = {};
  Unwrap(raw, arena, out);
  if (out->binary) return;
  if (ParseNcclHeader(out, rest)) return;
  if (ParseTorchHeader(out)) return;
  out->family = ClassifyHeaderless(out->text);
  out->message = out->text;
  if (out->family == Family::kTorch) {
    // "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 2] Process group watchdog …": the
    // process-group prefix after other prefixes still names the rank.
    size_t k = Find(out->text, "[PG ");
    if (k == std::string_view::npos) k = Find(out->text, "[Rank ");
    if (k != std::string_view::npos) ParsePgPrefix(out->text.substr(k), out);
  }
  // A traceback line "[rank3]: torch.distributed.DistBackendError: …" has its hint already.
}

}  // namespace ncclscan
