// Wrappers of log platforms and exporters (docs/formats.md): ISO time stamps
// (shippers, kubectl --timestamps, CRI), an export's severity column before
// its time (Google Cloud Logging), a bracketed ISO time (Buildkite),
// Determined's allocation id with the worker's rank, and the actor prefixes of
// Ray and vLLM's worker processes.
#include "parsers/text_util.h"
#include "parsers/wrappers_internal.h"

namespace ncclscan::wrappers_internal {

// ISO timestamps (shippers, kubectl --timestamps, CRI files "… stdout F ").
Strip StripIsoTimestamp(std::string_view* s, ParsedLine* out) {
  std::string_view t = *s;
  if (!(t.size() >= 19 && IsDigit(t[0]) && t[4] == '-')) return Strip::kNotThis;
  std::string_view u = t;
  int16_t year = 0;
  double ts = ConsumeIsoTimestamp(&u, &year);
  if (!(ts >= 0 && !u.empty() && (u[0] == ' ' || u[0] == '\t' || u[0] == ']'))) return Strip::kNotThis;
  // One separator only: what follows is the line as printed, and an indented
  // block (ibstat's "\t\tState: Down", nvidia-smi's "\t Link 0") keeps its
  // indentation.
  if (u[0] != ']') u.remove_prefix(1);
  if (ConsumePrefix(&u, "stdout ") || ConsumePrefix(&u, "stderr ")) {
    if (ConsumePrefix(&u, "F ") || ConsumePrefix(&u, "P ")) {
    }
  }
  out->KeepTime(ts, year);
  *s = u;
  StripHostKernel(s, out);
  return Strip::kStripped;
}

// A log export's severity column before its ISO timestamp: Google Cloud Logging
// "ERROR 2025-04-05T00:01:19.509514570Z ", shippers' "INFO 2025-04-05 00:01:19 ".
// The severity is the exporter's, not the line's: it is dropped with the time.
// vLLM's logger header after its level: "08-10 23:02:36 [multiproc_executor.py:898] "
// (month-day, no year; the source file and line).
bool StripVllmLoggerHeader(std::string_view* s, ParsedLine* out) {
  std::string_view t = *s;
  int64_t month, day, hh, mm, ss;
  if (!(ConsumeIntBelow(&t, 13, &month) == IntParse::kOk && ConsumePrefix(&t, "-") &&
        ConsumeIntBelow(&t, 32, &day) == IntParse::kOk && ConsumePrefix(&t, " ") &&
        ConsumeIntBelow(&t, 24, &hh) == IntParse::kOk && ConsumePrefix(&t, ":") &&
        ConsumeIntBelow(&t, 60, &mm) == IntParse::kOk && ConsumePrefix(&t, ":") &&
        ConsumeIntBelow(&t, 61, &ss) == IntParse::kOk && ConsumePrefix(&t, " [")))
    return false;
  const size_t close = t.substr(0, 80).find("] ");
  if (close == std::string_view::npos) return false;
  const size_t colon = t.substr(0, close).rfind(':');
  if (colon == std::string_view::npos || colon + 1 == close) return false;
  for (size_t i = colon + 1; i < close; ++i) {
    if (!IsDigit(t[i])) return false;
  }
  const double ts = SecondsOfYear(static_cast<int>(month), static_cast<int>(day), static_cast<int>(hh),
                                  static_cast<int>(mm), static_cast<double>(ss));
  if (ts < 0) return false;
  out->KeepTime(ts, 0);
  *s = t.substr(close + 2);
  return true;
}

Strip StripSeverityTimestamp(std::string_view* s, ParsedLine* out) {
  static constexpr std::string_view kSeverities[] = {"DEFAULT ", "DEBUG ", "INFO ",  "NOTICE ",   "WARNING ",
                                                     "WARN ",    "ERROR ", "ALERT ", "CRITICAL ", "EMERGENCY "};
  if (s->size() < 25 || (*s)[0] < 'A' || (*s)[0] > 'W') return Strip::kNotThis;
  for (std::string_view sev : kSeverities) {
    if (!StartsWith(*s, sev)) continue;
    std::string_view t = s->substr(sev.size());
    if (StripVllmLoggerHeader(&t, out)) {
      *s = t;
      return Strip::kStripped;
    }
    if (StripIsoTimestamp(&t, out) != Strip::kStripped) return Strip::kNotThis;
    *s = t;
    return Strip::kStripped;
  }
  return Strip::kNotThis;
}

// A bracketed ISO timestamp with its 'T' "[2024-02-27T21:35:28.705869Z] "
// (Determined): the whole bracket is the time. The space-separated form
// "[2024-07-25 06:36:18,293] " is torchrun's logger header, which the elastic
// parser reads whole.
bool StripBracketedIsoTime(std::string_view* s, size_t close, ParsedLine* out) {
  std::string_view t = *s;
  if (!(close >= 20 && close + 1 < t.size() && t[close + 1] == ' ' && IsDigit(t[1]) && t[11] == 'T')) return false;
  std::string_view inner = t.substr(1, close - 1);
  int16_t year = 0;
  const double ts = ConsumeIsoTimestamp(&inner, &year);
  if (!(ts >= 0 && inner.empty())) return false;
  out->KeepTime(ts, year);
  s->remove_prefix(close + 2);
  return true;
}

// Determined's trial logs: after the time, the allocation's id, the rank of a
// worker's line and "|| ": "fa88a9df [rank=2] || ", "fa88a9df || " (the agent).
Strip StripDeterminedId(std::string_view* s, ParsedLine* out) {
  std::string_view t = *s;
  size_t k = 0;
  while (k < t.size() && k < 64 && IsHexDigit(t[k])) ++k;
  if (k < 8 || k >= t.size() || t[k] != ' ') return Strip::kNotThis;
  std::string_view r = t.substr(k + 1);
  int rank = -1;
  if (ConsumePrefix(&r, "[rank=")) {
    int64_t v;
    if (ConsumeIntBelow(&r, kMaxRanks, &v) != IntParse::kOk || !ConsumePrefix(&r, "] ")) return Strip::kNotThis;
    rank = static_cast<int>(v);
  }
  if (!ConsumePrefix(&r, "|| ") && r != "||") return Strip::kNotThis;
  if (rank >= 0 && out->rank_hint < 0) {
    out->rank_hint = rank;
    out->rank_hint_is_label = false;
  }
  *s = r == "||" ? r.substr(2) : r;
  return Strip::kStripped;
}

// Ray "(RayWorkerWrapper pid=270291, ip=10.1.2.3) " and "(pid=123) "; vLLM's
// worker processes "(VllmWorker rank=2 pid=55723) ", whose rank is the
// worker's global rank; a line that starts with '(' has this wrapper or none.
Strip StripRayPrefix(std::string_view* s, ParsedLine* out) {
  std::string_view t = *s;
  if (t[0] != '(') return Strip::kNotThis;
  size_t close = t.find(')');
  if (!(close != std::string_view::npos && close < 160 && close + 1 < t.size() && t[close + 1] == ' '))
    return Strip::kNoWrapper;
  std::string_view inner = t.substr(1, close - 1);
  size_t pid = FindLiteral(inner, "pid=");
  if (!(pid != std::string_view::npos && (pid == 0 || inner[pid - 1] == ' '))) return Strip::kNoWrapper;
  size_t ip = FindLiteral(inner, "ip=");
  if (ip != std::string_view::npos) {
    std::string_view v = inner.substr(ip + 3);
    out->host_hint = v.substr(0, v.find_first_of(", "));
  }
  // The worker's global rank where a number right before " pid=" is one.
  auto rank_before_pid = [out](std::string_view r) {
    int64_t v;
    if (ConsumeIntBelow(&r, kMaxRanks, &v) == IntParse::kOk && StartsWith(r, " pid=")) {
      out->rank_hint = static_cast<int>(v);
      out->rank_hint_is_label = false;
    }
  };
  // vLLM 0.11+ names a worker by its parallel indexes: "(Worker_TP11 pid=113)" with
  // tensor parallelism alone is the engine's global rank 11 (a name with PP or DP in
  // it is not one rank number).
  if (StartsWith(inner, "Worker_TP")) rank_before_pid(inner.substr(9));
  // Only "Name rank=N pid=P": SkyPilot's "(worker1, rank=1, pid=4888, ip=…)"
  // numbers its nodes, not the job's ranks.
  if (size_t rank = FindLiteral(inner, " rank="); rank != std::string_view::npos && rank > 0 && inner[rank - 1] != ',')
    rank_before_pid(inner.substr(rank + 6));
  s->remove_prefix(close + 2);
  return Strip::kStripped;
}

}  // namespace ncclscan::wrappers_internal
