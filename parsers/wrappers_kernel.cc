// Kernel-log wrappers (docs/formats.md §H): dmesg's stamps, journalctl's
// "host kernel: ", a log shipper's kernel facility prefix.
#include "parsers/text_util.h"
#include "parsers/wrappers_internal.h"

namespace ncclscan::wrappers_internal {

bool LooksLikeHostToken(std::string_view t) {
  if (t.empty() || t.size() > 64) return false;
  bool alpha = false;
  for (char c : t) {
    if (IsAlpha(c))
      alpha = true;
    else if (!IsDigit(c) && c != '-' && c != '.' && c != '_')
      return false;
  }
  return alpha;
}

// journalctl's "host kernel: " after a kernel log's time stamp (short-iso,
// short-monotonic, dmesg-style lines re-logged): the line is that host's.
void StripHostKernel(std::string_view* s, ParsedLine* out) {
  const size_t sp = s->substr(0, 65).find(' ');
  if (sp == std::string_view::npos || sp == 0 || !StartsWith(s->substr(sp + 1), "kernel: ")) return;
  const std::string_view host = s->substr(0, sp);
  if (!LooksLikeHostToken(host)) return;
  if (out->host_hint.empty()) out->host_hint = host;
  s->remove_prefix(sp + 1 + 8);
}

// dmesg's "[ 1234.567890] " (seconds since boot: no time of day is kept) and
// dmesg -T's "[Fri Nov 27 18:52:45 2026] ".
bool StripKernelStamp(std::string_view* s, size_t close, ParsedLine* out) {
  std::string_view t = *s;
  if (!(close + 1 < t.size() && t[close + 1] == ' ')) return false;
  std::string_view inner = t.substr(1, close - 1);
  while (!inner.empty() && inner[0] == ' ') inner.remove_prefix(1);
  // "12345.678901", dmesg -H's "+0.000316": microseconds, always six digits.
  size_t i = !inner.empty() && inner[0] == '+' ? 1 : 0;
  const size_t int_start = i;
  while (i < inner.size() && IsDigit(inner[i])) ++i;
  bool monotonic = false;
  if (i > int_start && i < inner.size() && inner[i] == '.') {
    const size_t f = ++i;
    while (i < inner.size() && IsDigit(inner[i])) ++i;
    monotonic = i - f == 6 && i == inner.size();
  }
  if (!monotonic) {
    std::string_view c = inner;
    ParsedLine stamp;
    if (!(IsAlpha(inner.empty() ? '0' : inner[0]) && StripSyslogOrCtime(&c, &stamp) == Strip::kStripped && c.empty() &&
          stamp.year > 0))
      return false;
    out->KeepTime(stamp.time, stamp.year);
  }
  s->remove_prefix(close + 2);
  StripHostKernel(s, out);
  return true;
}

// A log shipper's kernel facility prefix "host: kern: warning: [2026-04-22T21:25:20.45Z]: "
// (the level right-aligned: "kern:     err: "); the time in brackets is optional.
Strip StripKernFacility(std::string_view* s, ParsedLine* out) {
  std::string_view t = *s;
  const size_t colon = t.substr(0, 66).find(": kern: ");
  if (colon == std::string_view::npos || colon == 0) return Strip::kNotThis;
  const std::string_view host = t.substr(0, colon);
  // A host name, or the address the shipper knows the host by.
  const bool address = host.find_first_not_of("0123456789.") == std::string_view::npos && host.find('.') != 0;
  if (!(LooksLikeHostToken(host) || address)) return Strip::kNotThis;
  std::string_view u = t.substr(colon + 8);
  while (!u.empty() && u[0] == ' ') u.remove_prefix(1);
  size_t lv = 0;
  while (lv < u.size() && IsAlpha(u[lv])) ++lv;
  if (lv == 0 || !StartsWith(u.substr(lv), ": ")) return Strip::kNotThis;
  out->host_hint = host;
  u.remove_prefix(lv + 2);
  if (!u.empty() && u[0] == '[') {
    std::string_view v = u.substr(1);
    int16_t year = 0;
    const double ts = ConsumeIsoTimestamp(&v, &year);
    if (ts >= 0 && ConsumePrefix(&v, "]: ")) {
      out->KeepTime(ts, year);
      u = v;
    }
  }
  *s = u;
  return Strip::kStripped;
}

}  // namespace ncclscan::wrappers_internal
