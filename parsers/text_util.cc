#include "parsers/text_util.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace ncclscan {

bool ConsumeInt(std::string_view* s, int64_t* out) {
  size_t i = 0;
  int64_t v = 0;
  while (i < s->size() && IsDigit((*s)[i])) {
    if (v > (INT64_MAX - 9) / 10) return false;
    v = v * 10 + ((*s)[i] - '0');
    ++i;
  }
  if (i == 0) return false;
  *out = v;
  s->remove_prefix(i);
  return true;
}

bool ParseInt(std::string_view s, int64_t* out) { return ConsumeInt(&s, out) && s.empty(); }

IntParse ConsumeIntBelow(std::string_view* s, int64_t limit, int64_t* out) {
  size_t i = 0;
  int64_t v = 0;
  bool too_big = false;
  while (i < s->size() && IsDigit((*s)[i])) {
    if (!too_big) {
      v = v * 10 + ((*s)[i] - '0');
      too_big = v >= limit;  // limit <= INT64_MAX / 10 keeps this from overflowing
    }
    ++i;
  }
  if (i == 0) return IntParse::kNone;
  s->remove_prefix(i);
  if (too_big) return IntParse::kOutOfRange;
  *out = v;
  return IntParse::kOk;
}

#ifdef __SSE2__
namespace {
// Bit j set: p[j] is a blank (space or tab), for the 16 bytes at p.
uint32_t BlankMask(const char* p) {
  __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return static_cast<uint32_t>(
      _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(' ')), _mm_cmpeq_epi8(x, _mm_set1_epi8('\t')))));
}
}  // namespace
#endif

size_t BlankAt(std::string_view s, size_t from) {
  const size_t n = s.size();
  size_t i = from;
#ifdef __SSE2__
  const char* base = s.data();
  auto blanks = [base](size_t at) { return BlankMask(base + at); };
  for (; i + 16 <= n; i += 16) {
    if (uint32_t mask = blanks(i)) return i + static_cast<size_t>(__builtin_ctz(mask));
  }
  if (i < n && n >= 16) {  // the last bytes: a vector overlapping the ones before
    const size_t j = n - 16;
    uint32_t mask = blanks(j) >> (i - j) << (i - j);
    return mask ? j + static_cast<size_t>(__builtin_ctz(mask)) : n;
  }
#endif
  while (i < n && !IsSpace(s[i])) ++i;
  return i;
}

size_t TokenBegin(std::string_view s, size_t to) {
  size_t i = to;
#ifdef __SSE2__
  const char* base = s.data();
  auto blanks = [base](size_t at) { return BlankMask(base + at); };
  for (; i >= 16; i -= 16) {  // the 16 bytes before i
    if (uint32_t mask = blanks(i - 16)) return i - 16 + static_cast<size_t>(32 - __builtin_clz(mask));
  }
  if (i > 0 && s.size() >= 16) {  // the first bytes: a vector from 0, positions >= i masked off
    uint32_t mask = blanks(0) & ((1u << i) - 1);
    return mask ? static_cast<size_t>(32 - __builtin_clz(mask)) : 0;
  }
#endif
  while (i > 0 && !IsSpace(s[i - 1])) --i;
  return i;
}

bool ConsumePrefix(std::string_view* s, std::string_view p) {
  if (!StartsWith(*s, p)) return false;
  s->remove_prefix(p.size());
  return true;
}

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (IsSpace(s.front()) || s.front() == '\r' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (IsSpace(s.back()) || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

bool LooksLikeIpv4(std::string_view s) {
  int parts = 0, digits = 0, value = 0;
  for (char c : s) {
    if (IsDigit(c)) {
      value = value * 10 + (c - '0');
      if (++digits > 3 || value > 255) return false;
    } else if (c == '.' && digits > 0) {
      ++parts;
      digits = value = 0;
    } else {
      return false;
    }
  }
  return digits > 0 && parts == 3;
}

bool ParseNumber(std::string_view s, bool hex, long double* out) {
  s = TrimSpace(s);
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (StartsWith(s, "0x") || StartsWith(s, "0X")) {
    hex = true;
    s.remove_prefix(2);
  }
  if (s.empty() || s.size() > 40) return false;
  long double v = 0;
  for (char c : s) {
    int d;
    if (IsDigit(c))
      d = c - '0';
    else if (hex && c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (hex && c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return false;
    v = v * (hex ? 16 : 10) + d;
  }
  *out = neg ? -v : v;
  return true;
}

namespace {

// Plain digit strings of up to 16 digits (the COLL opCount case, once a line)
// compare without parsing: drop leading zeros, then by length, then by digit.
// Returns false when either is anything else.
bool CompareDigits(std::string_view a, std::string_view b, bool hex, int* out) {
  // Digit values, -1 for anything else; [1] accepts hex letters.
  static const auto kValue = [] {
    std::array<std::array<int8_t, 256>, 2> t;
    for (auto& row : t) row.fill(-1);
    for (int h = 0; h < 2; ++h) {
      for (int c = '0'; c <= '9'; ++c) t[h][c] = static_cast<int8_t>(c - '0');
    }
    for (int c = 0; c < 6; ++c) t[1]['a' + c] = t[1]['A' + c] = static_cast<int8_t>(10 + c);
    return t;
  }();
  const int8_t* value = kValue[hex ? 1 : 0].data();
  if (a.empty() || b.empty() || a.size() > 16 || b.size() > 16) return false;
  if (a.size() == b.size()) {
    // Digit strings of one length (leading zeros or not) order as their first
    // differing digit: one pass checks and compares.
    int8_t bad = 0;
    int diff = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      const int8_t x = value[static_cast<uint8_t>(a[i])], y = value[static_cast<uint8_t>(b[i])];
      bad |= x | y;
      if (diff == 0 && x != y) diff = x < y ? -1 : 1;
    }
    if (bad < 0) return false;
    *out = diff;
    return true;
  }
  int8_t bad = 0;
  for (char c : a) bad |= value[static_cast<uint8_t>(c)];
  for (char c : b) bad |= value[static_cast<uint8_t>(c)];
  if (bad < 0) return false;
  while (a.size() > 1 && a[0] == '0') a.remove_prefix(1);
  while (b.size() > 1 && b[0] == '0') b.remove_prefix(1);
  if (a.size() != b.size()) {
    *out = a.size() < b.size() ? -1 : 1;
    return true;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    int x = value[static_cast<uint8_t>(a[i])], y = value[static_cast<uint8_t>(b[i])];
    if (x != y) {
      *out = x < y ? -1 : 1;
      return true;
    }
  }
  *out = 0;
  return true;
}

}  // namespace

int CompareNumeric(std::string_view a, std::string_view b, bool hex) {
  int fast;
  if (CompareDigits(a, b, hex, &fast)) return fast;
  long double x, y;
  bool ok_a = ParseNumber(a, hex, &x), ok_b = ParseNumber(b, hex, &y);
  if (ok_a && ok_b) return x < y ? -1 : (x > y ? 1 : 0);
  if (ok_a != ok_b) return ok_a ? 1 : -1;  // numbers beat junk
  return a.compare(b);
}

namespace {
// Days of the year before the first of month m (1-based; not a leap year).
constexpr int kDaysBefore[13] = {0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
}  // namespace

std::string FormatSecondsOfYear(double t) {
  int64_t ms = static_cast<int64_t>(t * 1000 + 0.5);
  int64_t day = ms / 86400000;
  ms %= 86400000;
  int month = 12;
  while (month > 1 && day < kDaysBefore[month]) --month;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d-%02d %02d:%02d:%02d.%03d", month, static_cast<int>(day - kDaysBefore[month] + 1),
                static_cast<int>(ms / 3600000), static_cast<int>(ms / 60000 % 60), static_cast<int>(ms / 1000 % 60),
                static_cast<int>(ms % 1000));
  return buf;
}

double SecondsOfYear(int month, int day, int hour, int minute, double second) {
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 || minute < 0 || minute > 59 ||
      !(second >= 0 && second < 62)) {
    return -1;
  }
  return (((kDaysBefore[month] + day - 1) * 24.0 + hour) * 60 + minute) * 60 + second;
}

namespace {
bool Fixed(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (!IsDigit(s[i])) return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}
}  // namespace

std::string FormatTime(double t, int year) {
  if (year <= 0 || year > 9999) return FormatSecondsOfYear(t);
  std::string md = FormatSecondsOfYear(t);  // "MM-DD HH:MM:SS.mmm"
  md[5] = 'T';
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04d-", year);
  return buf + md;
}

double ConsumeIsoTimestamp(std::string_view* s, int16_t* year) {
  // YYYY-MM-DD[T ]HH:MM:SS
  int y, mo, d, h, mi, se;
  const std::string_view t = *s;
  if (t.size() < 19 || t[4] != '-' || t[7] != '-' || (t[10] != 'T' && t[10] != ' ') || t[13] != ':' || t[16] != ':') {
    return -1;
  }
  if (!Fixed(t, 0, 4, &y) || !Fixed(t, 5, 2, &mo) || !Fixed(t, 8, 2, &d) || !Fixed(t, 11, 2, &h) ||
      !Fixed(t, 14, 2, &mi) || !Fixed(t, 17, 2, &se)) {
    return -1;
  }
  size_t i = 19;
  double frac = 0;
  if (i < t.size() && (t[i] == '.' || t[i] == ',')) {
    ++i;
    double scale = 0.1;
    while (i < t.size() && IsDigit(t[i])) {
      frac += (t[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
  }
  if (i < t.size() && t[i] == 'Z')
    ++i;
  else if (i + 5 < t.size() && (t[i] == '+' || t[i] == '-') && IsDigit(t[i + 1]) && IsDigit(t[i + 2])) {
    i += 3;
    if (i < t.size() && t[i] == ':') ++i;
    while (i < t.size() && IsDigit(t[i])) ++i;
  }
  double v = SecondsOfYear(mo, d, h, mi, se + frac);
  if (v < 0) return -1;
  s->remove_prefix(i);
  if (year) *year = static_cast<int16_t>(y);
  return v;
}

size_t DecodeUtf8(std::string_view s, size_t i, uint32_t* cp_out) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t cp;
  if (c < 0x80) {
    *cp_out = c;
    return 1;
  }
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    unsigned char cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  *cp_out = cp;
  return n;
}

std::string_view CutUtf8(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  auto continuation = [&](size_t i) { return (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80; };
  size_t n = max_bytes;
  // s[n] is the first byte left out: while it continues a character, that
  // character started before the cut and goes too (at most 3 bytes back).
  for (int k = 0; k < 3 && n > 0 && continuation(n); ++k) --n;
  if (continuation(n)) n = max_bytes;  // 4+ continuation bytes: not UTF-8 anyway
  return s.substr(0, n);
}

bool IsUnsafeCodePoint(uint32_t cp) {
  if (cp < 0x20) return cp != '\t';
  if (cp < 0x7F) return false;
  if (cp <= 0x9F) return true;  // DEL and C1 (U+009B is CSI)
  if (cp < 0x61C) return false;
  return cp == 0x61C || cp == 0x200E || cp == 0x200F || (cp >= 0x2028 && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

namespace {
const char kHex[] = "0123456789abcdef";

void AppendHexByte(std::string* out, const char* prefix, unsigned char c) {
  out->append(prefix);
  out->push_back(kHex[c >> 4]);
  out->push_back(kHex[c & 15]);
}

void AppendU4(std::string* out, uint32_t cp) {
  out->append("\\u");
  for (int shift = 12; shift >= 0; shift -= 4) out->push_back(kHex[(cp >> shift) & 15]);
}
}  // namespace

void AppendJsonEscaped(std::string* out, std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      uint32_t cp;
      size_t n = DecodeUtf8(s, i, &cp);
      if (n == 0) {
        out->append("\xEF\xBF\xBD");
        ++i;
      } else {
        if (IsUnsafeCodePoint(cp))
          AppendU4(out, cp);
        else
          out->append(s.data() + i, n);
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < 0x20 || c == 0x7f)
          AppendHexByte(out, "\\u00", c);
        else
          out->push_back(static_cast<char>(c));
    }
    ++i;
  }
}

std::string SanitizeForTerminal(std::string_view s, size_t max_bytes) {
  static constexpr std::string_view kCutMark = "...";
  std::string out;
  out.reserve(std::min(s.size(), max_bytes));
  // Where the output may be cut: the end of the last whole unit that leaves
  // room for the mark.
  size_t fits = 0;
  const size_t room = max_bytes < kCutMark.size() ? 0 : max_bytes - kCutMark.size();
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    uint32_t cp = c;
    size_t n = c < 0x80 ? 1 : DecodeUtf8(s, i, &cp);
    if (n == 0) {
      AppendHexByte(&out, "\\x", c);  // one byte of invalid UTF-8
      n = 1;
    } else if (!IsUnsafeCodePoint(cp)) {
      out.append(s.data() + i, n);
    } else if (cp < 0x80) {
      AppendHexByte(&out, "\\x", c);
    } else {
      AppendU4(&out, cp);
    }
    i += n;
    if (out.size() <= room) fits = out.size();
    if (out.size() > max_bytes) {
      out.resize(fits);
      out.append(kCutMark);
      return out;
    }
  }
  return out;
}

}  // namespace ncclscan
