// The c10 / glog header parser of LineParser (line_parser.cc), the
// process-group prefix of PyTorch's messages, and the family of a line with
// no header.
#include <algorithm>
#include <cstring>
#include <vector>

#include "parsers/line_parser.h"
#include "parsers/line_parser_internal.h"
#include "parsers/nccl_fragments.h"
#include "parsers/text_util.h"
#include "parsers/wrappers.h"

namespace ncclscan {

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
  // Each field below 100 before the casts below: "4294967306:15:32" is no hour 10.
  if (ConsumeIntBelow(&u, 100, &hh) != IntParse::kOk || !ConsumePrefix(&u, ":") ||
      ConsumeIntBelow(&u, 100, &mm) != IntParse::kOk || !ConsumePrefix(&u, ":") ||
      ConsumeIntBelow(&u, 100, &ss) != IntParse::kOk) {
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

// Where a c10 / glog header "…file.cpp:N] " closes: its "] ", or a "]" that
// ends the line (an empty message, whose blank the line's end lost).
size_t HeaderClose(std::string_view u) {
  const size_t close = u.find("] ");
  if (close == std::string_view::npos && !u.empty() && u.back() == ']') return u.size() - 1;
  return close;
}

}  // namespace

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
  const IntParse got = ConsumeIntBelow(&num, kMaxRanks, &v);
  if (got == IntParse::kNone || !num.empty()) return;
  if (got == IntParse::kOutOfRange) {  // "[Rank 4294967297]": no rank, not rank 1
    line->bad_number = true;
    return;
  }
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
    size_t close = HeaderClose(u);
    if (close == std::string_view::npos || close > 200 || u.substr(0, close).find(' ') != std::string_view::npos) {
      return false;
    }
    file = u.substr(0, close);
    line->message = u.substr(std::min(close + 2, u.size()));
  } else if (IsSeverity(s[0]) && IsDigit(s[1])) {
    // glog: "E0731 10:50:08.043000 3247964 path/api.py:869] msg"
    std::string_view u = s.substr(1);
    double ts = ConsumeGlogTime(&u);
    if (ts < 0) return false;
    int64_t tid;
    if (!ConsumePrefix(&u, " ")) return false;
    while (!u.empty() && u[0] == ' ') u.remove_prefix(1);
    if (!ConsumeInt(&u, &tid) || !ConsumePrefix(&u, " ")) return false;
    size_t close = HeaderClose(u);
    if (close == std::string_view::npos || close > 300) return false;
    file = u.substr(0, close);
    line->message = u.substr(std::min(close + 2, u.size()));
    line->time = ts;
  } else if (StartsWith(s, "[20") && s.size() > 26 && s[24] == ']') {
    // torch 2.1-2.2 python logger "[2024-07-25 06:36:18,293] torch.distributed.elastic…: [WARNING] msg"
    std::string_view u = s.substr(1);
    int16_t year = 0;
    double ts = ConsumeIsoTimestamp(&u, &year);
    if (ts < 0 || !ConsumePrefix(&u, "] ")) return false;
    line->time = ts;
    line->year = year;
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
  // Most lines here are an application's own output and hold none of these:
  // the finders choose their pivots once (each line is searched for all).
  auto any_of = [t](const std::vector<LiteralFinder>& finders) {
    return std::any_of(finders.begin(), finders.end(),
                       [t](const LiteralFinder& f) { return f.Find(t) != std::string_view::npos; });
  };
  // Elastic agent output and the ChildFailedError table.
  static const std::vector<LiteralFinder> kElastic = {
      LiteralFinder("torch.distributed.elastic"), LiteralFinder("ChildFailedError"),
      LiteralFinder("Root Cause (first observed failure)"), LiteralFinder("Sending process")};
  if (any_of(kElastic)) return Family::kElastic;
  // The ChildFailedError table's rows ("  rank      : 1 (local_rank: 1)"), also when a
  // wrapper before them (a timestamp, a pod label) took their indent with its blank.
  std::string_view row = t;
  while (!row.empty() && row[0] == ' ') row.remove_prefix(1);
  if (StartsWith(row, "rank      :") || StartsWith(row, "exitcode  :") || StartsWith(row, "host      :") ||
      StartsWith(row, "traceback :") || StartsWith(row, "time      :") || StartsWith(row, "error_file:")) {
    return Family::kElastic;
  }
  static const std::vector<LiteralFinder> kTorch = {LiteralFinder("NCCL"),
                                                    LiteralFinder("ProcessGroup"),
                                                    LiteralFinder("DistBackendError"),
                                                    LiteralFinder("what():"),
                                                    LiteralFinder("[PG "),
                                                    LiteralFinder("Process group"),
                                                    LiteralFinder("Watchdog"),
                                                    LiteralFinder("c10d"),
                                                    LiteralFinder("torch.distributed"),
                                                    LiteralFinder("CUDA out of memory"),
                                                    LiteralFinder("WorkNCCL")};
  if (any_of(kTorch)) return Family::kTorch;
  return Family::kOther;
}

}  // namespace ncclscan
