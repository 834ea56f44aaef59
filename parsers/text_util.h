// Small allocation-free helpers over std::string_view used by every parser.
//
// Thread-safety: pure functions.
#ifndef NCCLSCAN_PARSERS_TEXT_UTIL_H_
#define NCCLSCAN_PARSERS_TEXT_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace ncclscan {

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
inline bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool IsSpace(char c) { return c == ' ' || c == '\t'; }
// Fibonacci hashing: the key's bits spread over all 64; the top k bits pick
// one of 2^k slots of a table (a hash set of atoms, a cache by pid).
inline uint64_t SpreadBits(uint64_t key) { return key * 0x9E3779B97F4A7C15ull; }
// A character of a host name as NCCL prints it: letters, digits, '.', '-', '_'.
inline bool IsHostChar(char c) { return IsAlpha(c) || IsDigit(c) || c == '.' || c == '-' || c == '_'; }
inline bool StartsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}
inline bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// memcmp(p, q, m) == 0, inline: overlapping word loads from both ends (SSE2
// vectors past 16 bytes) instead of a library call, for short keys.
bool EqualBytes(const char* p, const char* q, size_t m);

// a == b for short texts (hosts, keys), without a library call.
inline bool SameText(std::string_view a, std::string_view b) {
  return a.size() == b.size() && (a.data() == b.data() || EqualBytes(a.data(), b.data(), a.size()));
}

// Finds a literal in text. memchr pivots on a byte of the literal that is rare
// in logs (upper case, punctuation); a literal of only lower-case letters,
// digits and blanks is filtered 16 positions at a time on its first and last
// non-blank bytes (SSE2). The pivots are chosen once, at construction.
class LiteralFinder {
 public:
  explicit LiteralFinder(std::string_view lit);
  // Position of the literal in s at or after `from`, or npos.
  size_t Find(std::string_view s, size_t from = 0) const;
  const std::string& literal() const { return lit_; }

 private:
  std::string lit_;
  size_t rare_, b0_, b1_;
};

// One-off search (pivots chosen per call): LiteralFinder(lit).Find(s, from).
size_t FindLiteral(std::string_view s, std::string_view lit, size_t from = 0);

// Whether s may hold `lower` (ASCII, lower case) whatever the case of its
// letters: bytes are compared with bit 0x20 set on both sides, so it never
// misses an occurrence and rarely reports one that is not there (a byte that
// differs from the atom's in bit 0x20 alone, such as '@' for '`'). For a
// prefilter: a false "yes" only costs the regex that follows.
bool MayContainFolded(std::string_view s, std::string_view lower);

// The first blank (space or tab) at or after `from`, or s.size(): where the
// token at `from` ends.
size_t BlankAt(std::string_view s, size_t from);
// Where the token that ends at `to` (exclusive) begins: one past the last blank
// before `to`, or 0.
size_t TokenBegin(std::string_view s, size_t to);

// Parses a run of decimal digits at the front of *s (consuming it). Returns false
// if there is none or it overflows int64.
bool ConsumeInt(std::string_view* s, int64_t* out);
// The whole of s as a run of decimal digits (ConsumeInt with nothing after):
// false for "", "12x" or an overflow.
bool ParseInt(std::string_view s, int64_t* out);
// Like ConsumeInt for a number that must stay below `limit` (a rank, a device,
// a count stored in an int): a longer or larger run of digits is consumed too
// and reported as kOutOfRange, so that callers reject the value instead of
// casting it ("[rank4294967297]:" would otherwise become rank 1).
enum class IntParse { kNone, kOk, kOutOfRange };
IntParse ConsumeIntBelow(std::string_view* s, int64_t limit, int64_t* out);
// Consumes `p` from the front of *s if present.
bool ConsumePrefix(std::string_view* s, std::string_view p);
std::string_view TrimSpace(std::string_view s);

// Parses a whole string as a signed decimal, or hex with 0x prefix (or when
// hex is true). Returns false on junk.
bool ParseNumber(std::string_view s, bool hex, long double* out);
// "10.0.0.1": four dot-separated numbers below 256, of at most three digits each.
bool LooksLikeIpv4(std::string_view s);
// Orders two values as numbers (ParseNumber); a number sorts above junk, junk
// compares as text. Returns <0, 0 or >0.
int CompareNumeric(std::string_view a, std::string_view b, bool hex);

// Seconds since January 1 00:00 of an unknown year (not a leap year); used only for ordering.
double SecondsOfYear(int month, int day, int hour, int minute, double second);
// The inverse, for reports: "MM-DD HH:MM:SS.mmm" (log timestamps rarely carry
// the year; the month and day do).
std::string FormatSecondsOfYear(double t);

// Timestamps recognised at the front of *s (consumed with trailing spaces):
//   2024-11-22T10:15:32.123456789Z / 2024-11-22 10:15:32,293 / with offset
// Returns seconds-of-year, or -1 when *s does not start with one; *year (when
// not null) gets the year it names.
double ConsumeIsoTimestamp(std::string_view* s, int16_t* year = nullptr);
// "YYYY-MM-DDTHH:MM:SS.mmm" (ISO 8601, the log's local time) for seconds-of-year t
// in `year`; FormatSecondsOfYear's form when year is 0.
std::string FormatTime(double t, int year);

// Length of the valid UTF-8 sequence at s[i] (1-4) with its code point in
// *cp, or 0 when the bytes there are not valid UTF-8 (overlong, surrogate,
// truncated, stray continuation byte).
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t* cp);

// The longest prefix of s of at most max_bytes that does not end inside a
// UTF-8 character: every cut of input text goes through it, so a cut never
// leaves half a character for the outputs to replace.
std::string_view CutUtf8(std::string_view s, size_t max_bytes);

// Code points that must not reach any output raw: C0 controls (except tab),
// DEL, C1 controls (U+0080-U+009F), the bidirectional overrides, embeddings,
// isolates and marks (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C:
// "Trojan Source" reordering) and the line / paragraph separators U+2028 and
// U+2029 (line breaks to some viewers).
bool IsUnsafeCodePoint(uint32_t cp);

// JSON: escapes for a JSON string (without quotes); invalid UTF-8 becomes
// U+FFFD, unsafe code points (IsUnsafeCodePoint) are written \uXXXX, so the
// document is plain printable UTF-8 whatever the input.
void AppendJsonEscaped(std::string* out, std::string_view s);

// Terminal (the text report; also the first step of the markdown escapes):
// unsafe code points are shown escaped, never passed through: bytes below 0x80
// as \xNN (ESC -> \x1b, newline -> \x0a, DEL -> \x7f), others as \uXXXX
// (CSI U+009B -> \u009b, RLO U+202E -> \u202e), and each byte of invalid UTF-8
// as \xNN (a raw 0x9b -> \x9b). Tab is kept. A backslash of the input is kept
// as is. At most max_bytes are returned: a longer result is cut between two
// characters (never inside one or inside an escape) and ends with "...".
std::string SanitizeForTerminal(std::string_view s, size_t max_bytes = std::string::npos);

}  // namespace ncclscan

#endif  // NCCLSCAN_PARSERS_TEXT_UTIL_H_
