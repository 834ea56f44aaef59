#include "parsers/wrappers.h"

#include <array>
#include <cstring>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "parsers/text_util.h"
#include "parsers/wrappers_internal.h"

namespace ncclscan {

using wrappers_internal::LooksLikeHostToken;
using wrappers_internal::StartsLikeHeader;
using wrappers_internal::Strip;
using wrappers_internal::StripGrepPrefix;
using wrappers_internal::StripRayPrefix;
using wrappers_internal::StripSyslogOrCtime;

namespace {

// ANSI SGR sequences, with or without the ESC byte ("\x1b[36m" or a stray "[0m").
size_t AnsiLenAt(std::string_view s, size_t i) {
  size_t j = i;
  if (s[j] == '\x1b') ++j;
  if (j >= s.size() || s[j] != '[') return 0;
  ++j;
  size_t digits = 0;
  while (j < s.size() && (IsDigit(s[j]) || s[j] == ';')) {
    ++j;
    ++digits;
  }
  if (j >= s.size() || (s[j] != 'm' && !(s[i] == '\x1b' && (s[j] == 'K' || s[j] == 'A')))) return 0;
  if (s[i] != '\x1b' && (digits == 0 || digits > 8)) return 0;  // "[m" alone is too ambiguous
  return j + 1 - i;
}

}  // namespace

namespace {

ByteScan ScanBytesImpl(std::string_view s, bool simd) {
  static_cast<void>(simd);  // unused without SSE2
  // 1 = control byte, 2 = NUL, 4 = CR, 8 = ESC, 16 = '[', 32 = 'N'
  static const auto kClass = [] {
    std::array<uint8_t, 256> t{};
    for (int c = 0; c < 0x20; ++c) t[c] = 1;
    t['\t'] = 0;
    t[0] = 1 | 2;
    t['\r'] = 1 | 4;
    t[0x1b] = 8;
    t['['] = 16;
    t['N'] = 32;
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
    if ((k & 32) && !r.nccl_keyword && n - i >= 5 && std::memcmp(p + i, "NCCL ", 5) == 0) r.nccl_keyword = true;
  };
  size_t i = 0;
#ifdef __SSE2__
  const size_t vn = simd ? n : 0;  // the reference does every byte in the loop at the end
  // Most lines have no control byte at all and only a few '[' and 'N': skip 16
  // bytes at a time unless one of them is a control byte (<= 0x1f), '[' or 'N'.
  const __m128i kMaxCtl = _mm_set1_epi8(0x1f), kBracket = _mm_set1_epi8('['), kN = _mm_set1_epi8('N');
  auto flags = [&](size_t at) {
    __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
    return _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(x, kMaxCtl), x),
                        _mm_or_si128(_mm_cmpeq_epi8(x, kBracket), _mm_cmpeq_epi8(x, kN)));
  };
  for (; i + 32 <= vn; i += 32) {  // two vectors per branch
    __m128i a = flags(i), b = flags(i + 16);
    if (_mm_movemask_epi8(_mm_or_si128(a, b)) == 0) continue;
    uint32_t mask = static_cast<uint32_t>(_mm_movemask_epi8(a)) | static_cast<uint32_t>(_mm_movemask_epi8(b)) << 16;
    for (; mask; mask &= mask - 1) one(i + static_cast<size_t>(__builtin_ctz(mask)));
  }
  for (; i + 16 <= vn; i += 16) {
    unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(flags(i)));
    for (; mask; mask &= mask - 1) one(i + static_cast<size_t>(__builtin_ctz(mask)));
  }
  if (i < vn && vn >= 16) {
    // The last bytes: one vector overlapping the ones before, with the
    // positions already seen masked off (each byte is counted once).
    const size_t j = vn - 16;
    unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(flags(j))) >> (i - j) << (i - j);
    for (; mask; mask &= mask - 1) one(j + static_cast<size_t>(__builtin_ctz(mask)));
    i = vn;
  }
#endif
  for (; i < n; ++i) one(i);
  r.nul = all & 2;
  r.cr = all & 4;
  r.ansi |= (all & 8) != 0;
  return r;
}

}  // namespace

ByteScan ScanBytes(std::string_view s) { return ScanBytesImpl(s, true); }
ByteScan ScanBytesReference(std::string_view s) { return ScanBytesImpl(s, false); }

std::string_view StripAnsi(std::string_view s, Arena* arena) {
  char* out = arena->Allocate(s.size());
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '\x1b' || s[i] == '[') {
      size_t len = AnsiLenAt(s, i);
      if (len) {
        i += len;
        continue;
      }
    }
    if (s[i] != '\x1b') out[n++] = s[i];
    ++i;
  }
  return std::string_view(out, n);
}

namespace wrappers_internal {
// Does `s` start like an inner header we know (so a preceding "x: " is a wrapper)?
bool StartsLikeHeader(std::string_view s) {
  if (StartsWith(s, "[rank") || StartsWith(s, "NCCL ") || StartsWith(s, "[default")) return true;
  // NCCL's own time stamp before its header ("[2025-08-12 01:37:03] host:pid:tid"; 2.23+,
  // NCCL_DEBUG_TIMESTAMP_FORMAT).
  // Python logging's bracketed time and level, DeepSpeed's launcher and runtime
  // ("[2024-03-01 10:00:05,000] [INFO] [launch.py:316:sigkill_handler] …").
  if (s.size() > 1 && s[0] == '[' && IsDigit(s[1])) {
    const size_t close = s.substr(0, 48).find("] ");
    if (close == std::string_view::npos) return false;
    const std::string_view rest = s.substr(close + 2);
    for (std::string_view level : {"[INFO] ", "[WARNING] ", "[ERROR] ", "[DEBUG] ", "[CRITICAL] "}) {
      if (StartsWith(rest, level)) return true;
    }
    return StartsLikeHeader(rest);
  }
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
  for (char c : pid)
    if (!IsDigit(c)) return false;
  for (char c : tid)
    if (!IsDigit(c)) return false;
  return true;
}

}  // namespace wrappers_internal

// "host:pid:tid " at the very start (host without blanks, '/' or ':').

bool MatchNcclProcess(std::string_view s, NcclProcess* np) {
  const size_t n = std::min<size_t>(s.size(), 96);
  size_t i = 0;
#ifdef __SSE2__
  // The host ends at the first ':' (or a blank or '/', which rule it out);
  // host names are short, so 16 bytes at a time usually find it at once.
  for (; i + 16 <= n; i += 16) {
    __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i));
    __m128i stop =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(':')), _mm_cmpeq_epi8(x, _mm_set1_epi8(' '))),
                     _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('/')), _mm_cmpeq_epi8(x, _mm_set1_epi8('\t'))));
    unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(stop));
    if (mask) {
      i += static_cast<size_t>(__builtin_ctz(mask));
      break;
    }
  }
#endif
  while (i < n && s[i] != ':' && s[i] != ' ' && s[i] != '/' && s[i] != '\t') ++i;
  if (i == 0 || i >= n || s[i] != ':') return false;
  const size_t host_len = i;
  // A host name is letters, digits, '.', '-' and '_': anything else is the end
  // of a line glued in front, for the general parse (ParseHostPidTid) to cut.
  for (size_t k = 0; k < host_len; ++k) {
    const char ch = s[k];
    if (!IsHostChar(ch)) return false;
  }
  int64_t num[2];
  for (int part = 0; part < 2; ++part) {
    size_t d = ++i;
    int64_t v = 0;
    const size_t digits_end = std::min(n, d + 18);
    while (i < digits_end && IsDigit(s[i])) v = v * 10 + (s[i++] - '0');
    if (i == digits_end && i < n && IsDigit(s[i])) {  // more than 18 digits: no number
      v = -1;
      while (i < n && IsDigit(s[i])) ++i;
    }
    if (i == d || i >= n || s[i] != (part == 0 ? ':' : ' ')) return false;
    num[part] = v;
  }
  np->host_len = host_len;
  np->len = i;
  np->pid = num[0];
  np->tid = num[1];
  return true;
}

namespace {

using wrappers_internal::StripBracketedIsoTime;
using wrappers_internal::StripDeterminedId;
using wrappers_internal::StripIsoTimestamp;
using wrappers_internal::StripKernelStamp;
using wrappers_internal::StripKernFacility;
using wrappers_internal::StripSeverityTimestamp;

// Markdown quoting.
Strip StripMarkdownQuote(std::string_view* s, ParsedLine*) {
  if (!StartsWith(*s, "> ")) return Strip::kNotThis;
  s->remove_prefix(2);
  return Strip::kStripped;
}

// A bare time of day "18:11:06.680 " (console loggers, `ts`): no date, so no
// time is kept. Without a fraction "HH:MM:SS " could be a numeric host's
// "host:pid:tid [dev]" NCCL header, so then it must not be followed by '['.
Strip StripTimeOfDay(std::string_view* s, ParsedLine*) {
  std::string_view t = *s;
  if (!(t.size() > 9 && IsDigit(t[0]) && IsDigit(t[1]) && t[2] == ':' && IsDigit(t[3]) && IsDigit(t[4]) &&
        t[5] == ':' && IsDigit(t[6]) && IsDigit(t[7])))
    return Strip::kNotThis;
  size_t i = 8;
  bool frac = false;
  if (t[i] == '.' || t[i] == ',') {
    size_t f = ++i;
    while (i < t.size() && IsDigit(t[i])) ++i;
    frac = i > f;
  }
  if (!(i + 1 < t.size() && t[i] == ' ' && (frac || t[i + 1] != '['))) return Strip::kNotThis;
  s->remove_prefix(i + 1);
  return Strip::kStripped;
}

// Kaggle "<secs>s\t<lineno>\t".
Strip StripKaggleTiming(std::string_view* s, ParsedLine*) {
  std::string_view t = *s;
  if (!IsDigit(t[0])) return Strip::kNotThis;
  size_t i = 0;
  while (i < t.size() && (IsDigit(t[i]) || t[i] == '.')) ++i;
  if (!(i < t.size() && t[i] == 's' && i + 1 < t.size() && t[i + 1] == '\t')) return Strip::kNotThis;
  size_t j = i + 2;
  while (j < t.size() && IsDigit(t[j])) ++j;
  if (!(j < t.size() && t[j] == '\t' && j > i + 2)) return Strip::kNotThis;
  s->remove_prefix(j + 1);
  return Strip::kStripped;
}

// srun --label: right-aligned task id; het jobs "P0 3: ".
Strip StripSrunLabel(std::string_view* s, ParsedLine* out) {
  std::string_view t = *s;
  size_t i = 0;
  if (t[0] == 'P' && t.size() > 2 && IsDigit(t[1])) {
    i = 1;
    while (i < t.size() && IsDigit(t[i])) ++i;
    if (i >= t.size() || t[i] != ' ') i = 0;
  }
  while (i < t.size() && t[i] == ' ') ++i;
  size_t d = i;
  while (i < t.size() && IsDigit(t[i])) ++i;
  if (!(i > d && i - d <= 6 && i + 1 < t.size() && t[i] == ':' && t[i + 1] == ' ')) return Strip::kNotThis;
  std::string_view num = t.substr(d, i - d);
  int64_t v;
  if (ConsumeInt(&num, &v) && out->rank_hint < 0) {
    out->rank_hint = static_cast<int>(v);
    out->rank_hint_is_label = true;
    out->label = static_cast<int>(v);
  }
  s->remove_prefix(i + 2);
  return Strip::kStripped;
}

// The forms of "[inner]" at the front of *s, `close` the index of its ']'
// (below 64). Each returns true if it removed the wrapper.

// MPI --tag-output "[1,3]<stdout>:", SageMaker "[1,mpirank:0,algo-1]<stdout>:", Horovod "[3]<stdout>:".
bool StripMpiTagOutput(std::string_view* s, size_t close, ParsedLine* out) {
  std::string_view t = *s;
  std::string_view inner = t.substr(1, close - 1);
  std::string_view after = t.substr(close + 1);
  if (!(StartsWith(after, "<stdout>:") || StartsWith(after, "<stderr>:") || StartsWith(after, "<stddiag>:")))
    return false;
  size_t comma = inner.find(',');
  std::string_view r = comma == std::string_view::npos ? inner : inner.substr(comma + 1);
  ConsumePrefix(&r, "mpirank:");
  int64_t v;
  const IntParse got = ConsumeIntBelow(&r, kMaxRanks, &v);
  if (got == IntParse::kOutOfRange) out->bad_number = true;  // dropped, never wrapped
  if (got == IntParse::kOk && out->rank_hint < 0) out->rank_hint = static_cast<int>(v);
  size_t colon = after.find(':');
  s->remove_prefix(close + 1 + colon + 1);
  return true;
}

// "[rank3]:" (global rank) or torchrun "[default3]:" (role + local rank).
bool StripRankPrefix(std::string_view* s, size_t close, ParsedLine* out) {
  std::string_view t = *s;
  if (!(close + 1 < t.size() && t[close + 1] == ':')) return false;
  std::string_view inner = t.substr(1, close - 1);
  if (StartsWith(inner, "rank")) {
    std::string_view r = inner.substr(4);
    int64_t v;
    const IntParse got = ConsumeIntBelow(&r, kMaxRanks, &v);
    if (got != IntParse::kNone && r.empty()) {
      // "[rank4294967297]:" is a rank prefix still, but its number is no
      // rank: the line keeps no hint (a cast would make it rank 1).
      if (got == IntParse::kOk) {
        out->rank_hint = static_cast<int>(v);
        out->rank_hint_is_label = false;
      } else {
        out->bad_number = true;
      }
      s->remove_prefix(close + 2);
      if (!s->empty() && (*s)[0] == ' ') s->remove_prefix(1);
      return true;
    }
  }
  size_t k = 0;
  while (k < inner.size() && (IsAlpha(inner[k]) || inner[k] == '_')) ++k;
  if (!(k > 0 && k < inner.size())) return false;
  std::string_view r = inner.substr(k);
  int64_t v;
  const IntParse got = ConsumeIntBelow(&r, kMaxRanks, &v);
  if (!(got != IntParse::kNone && r.empty())) return false;
  if (got == IntParse::kOk)
    out->local_rank_hint = static_cast<int>(v);
  else
    out->bad_number = true;
  s->remove_prefix(close + 2);
  return true;
}

// kubectl --prefix "[pod/name/container] ", "[node/name] ".
bool StripKubectlPrefix(std::string_view* s, size_t close, ParsedLine* out) {
  std::string_view t = *s;
  std::string_view inner = t.substr(1, close - 1);
  if (!((StartsWith(inner, "pod/") || StartsWith(inner, "node/")) && close + 1 < t.size() && t[close + 1] == ' '))
    return false;
  std::string_view name = inner.substr(inner.find('/') + 1);
  size_t slash = name.find('/');
  out->host_hint = name.substr(0, slash);
  s->remove_prefix(close + 2);
  return true;
}

// Tool line numbers "[1830] " (three or more digits; "[3] NCCL" is a cut NCCL header).
bool StripToolLineNumber(std::string_view* s, size_t close, ParsedLine*) {
  std::string_view t = *s;
  std::string_view inner = t.substr(1, close - 1);
  if (!(inner.size() >= 3 && close + 1 < t.size() && t[close + 1] == ' ')) return false;
  bool digits = true;
  for (char c : inner) digits &= IsDigit(c);
  if (!digits || StartsWith(t.substr(close + 2), "NCCL")) return false;
  s->remove_prefix(close + 2);
  return true;
}

// A line that starts with '[' has one of the bracketed forms or no wrapper.
Strip StripBracketed(std::string_view* s, ParsedLine* out) {
  std::string_view t = *s;
  if (t[0] != '[') return Strip::kNotThis;
  size_t close = t.find(']');
  if (close == std::string_view::npos || close >= 64) return Strip::kNoWrapper;
  using BracketForm = bool (*)(std::string_view*, size_t, ParsedLine*);
  static constexpr BracketForm kForms[] = {StripMpiTagOutput,   StripRankPrefix,  StripKubectlPrefix,
                                           StripToolLineNumber, StripKernelStamp, StripBracketedIsoTime};
  for (BracketForm strip : kForms) {
    if (strip(s, close, out)) return Strip::kStripped;
  }
  return Strip::kNoWrapper;
}

}  // namespace

// Syslog "Nov 22 10:15:32 host app[123]: " and ctime "Thu Jan 23 11:55:50 2025".
Strip wrappers_internal::StripSyslogOrCtime(std::string_view* s, ParsedLine* out) {
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  static const char* kDays[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
  std::string_view t = *s;
  if (!(t.size() > 20 && IsAlpha(t[0]) && t[3] == ' ')) return Strip::kNotThis;
  std::string_view u = t;
  for (const char* d : kDays) {
    if (StartsWith(u, d) && u[3] == ' ') {
      u.remove_prefix(4);
      break;
    }
  }
  int month = 0;
  for (int m = 0; m < 12; ++m) {
    if (StartsWith(u, kMonths[m]) && u.size() > 4 && u[3] == ' ') {
      month = m + 1;
      break;
    }
  }
  if (!month) return Strip::kNotThis;
  u.remove_prefix(4);
  while (!u.empty() && u[0] == ' ') u.remove_prefix(1);
  int64_t day, hh, mm, ss;
  // Each field below 100 before the casts: "4294967306:15" must not read as hour 10.
  if (!(ConsumeIntBelow(&u, 100, &day) == IntParse::kOk && ConsumePrefix(&u, " ") &&
        ConsumeIntBelow(&u, 100, &hh) == IntParse::kOk && ConsumePrefix(&u, ":") &&
        ConsumeIntBelow(&u, 100, &mm) == IntParse::kOk && ConsumePrefix(&u, ":") &&
        ConsumeIntBelow(&u, 100, &ss) == IntParse::kOk))
    return Strip::kNotThis;
  double ts =
      SecondsOfYear(month, static_cast<int>(day), static_cast<int>(hh), static_cast<int>(mm), static_cast<double>(ss));
  if (ts < 0) return Strip::kNotThis;
  const bool first_time = out->time < 0;
  if (first_time) out->time = ts;
  int64_t year;
  std::string_view y = u;
  if (ConsumePrefix(&y, " ") && ConsumeInt(&y, &year)) {  // ctime year
    u = y;
    if (first_time && year >= 1970 && year <= 9999) out->year = static_cast<int16_t>(year);
  }
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
  return Strip::kStripped;
}

namespace {

// pdsh "host: " in front of a known header (DeepSpeed's multi-node launcher
// prefixes each worker's lines with its address, "10.1.2.3: "), and a log
// collector's "host >> " (also before a header whose own host field is empty,
// ":pid:tid").
Strip StripPdshHost(std::string_view* s, ParsedLine* out) {
  std::string_view t = *s;
  // The host token is host characters up to the separator: scanned, not searched for.
  size_t colon = 0;
  while (colon < t.size() && colon <= 64 && IsHostChar(t[colon])) ++colon;
  const std::string_view after = t.substr(colon);
  const size_t sep_len = StartsWith(after, ": ") ? 2 : StartsWith(after, " >> ") ? 4 : 0;
  if (sep_len == 0 || !(LooksLikeHostToken(t.substr(0, colon)) || LooksLikeIpv4(t.substr(0, colon))))
    return Strip::kNotThis;
  std::string_view tok = t.substr(0, colon);
  bool has_digit_or_dash = tok.find_first_of("0123456789-") != std::string_view::npos;
  if (!(has_digit_or_dash && StartsLikeHeader(t.substr(colon + sep_len)))) return Strip::kNotThis;
  out->host_hint = tok;
  s->remove_prefix(colon + sep_len);
  return Strip::kStripped;
}

// The wrapper kinds in the order they are tried: the order matters, as a
// line may look like the start of more than one (a time of day before srun's
// "3: ", a path before pdsh's "host: ").
using WrapperStripper = Strip (*)(std::string_view*, ParsedLine*);
constexpr WrapperStripper kWrapperKinds[] = {
    StripMarkdownQuote, StripIsoTimestamp, StripSeverityTimestamp, StripTimeOfDay, StripKaggleTiming,
    StripSrunLabel,     StripBracketed,    StripDeterminedId,      StripRayPrefix, StripSyslogOrCtime,
    StripKernFacility,  StripGrepPrefix,   StripPdshHost,
};

}  // namespace

std::string_view WithoutRayRepeatSuffix(std::string_view s) {
  static constexpr std::string_view kHead = " [repeated ", kTail = "x across cluster]";
  // (The last byte first: nearly every line a scan reads has no such ending.)
  if (s.size() < kHead.size() + 1 + kTail.size() || s.back() != ']' || !EndsWith(s, kTail)) return s;
  size_t i = s.size() - kTail.size();
  const size_t digits_end = i;
  while (i > 0 && IsDigit(s[i - 1])) --i;
  if (i == digits_end || i < kHead.size() || s.substr(i - kHead.size(), kHead.size()) != kHead) return s;
  return s.substr(0, i - kHead.size());
}

std::string_view PasteIndent(std::string_view head) {
  const size_t last_nl = head.rfind('\n');
  head = last_nl == std::string_view::npos ? std::string_view() : head.substr(0, last_nl + 1);
  std::string_view indent;
  int lines = 0;
  while (!head.empty()) {
    size_t nl = head.find('\n');
    const std::string_view line = head.substr(0, nl);
    head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
    if (TrimSpace(line).empty()) continue;
    size_t i = 0;
    while (IsSpace(line[i])) ++i;  // (the line holds a non-blank)
    if (lines++ == 0) {
      indent = line.substr(0, i);
    } else {
      size_t k = 0;
      while (k < indent.size() && k < i && line[k] == indent[k]) ++k;
      indent = indent.substr(0, k);
    }
    if (indent.empty()) return {};
  }
  return lines >= kMinIndentedLines ? indent : std::string_view();
}

bool StripOneWrapper(std::string_view* s, ParsedLine* out) {
  if (s->empty()) return false;
  for (WrapperStripper strip : kWrapperKinds) {
    switch (strip(s, out)) {
      case Strip::kStripped:
        return true;
      case Strip::kNoWrapper:
        return false;
      case Strip::kNotThis:
        break;
    }
  }
  return false;
}

}  // namespace ncclscan
