// The Chrome trace builder of engine/reports/trace_report.h, shared by its two
// files: trace_report.cc (tracks, watchdog slices, finding instants, Flight
// Recorder slices, the culprit marker) and trace_write.cc (clock alignment,
// overlap lanes, the JSON).
#ifndef NCCLSCAN_ENGINE_REPORTS_TRACE_INTERNAL_H_
#define NCCLSCAN_ENGINE_REPORTS_TRACE_INTERNAL_H_

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/models/diagnosis.h"
#include "engine/reports/trace_report.h"
#include "engine/state/job_state.h"

namespace ncclscan {
namespace trace_detail {

constexpr int64_t kNsPerSec = 1000000000;
constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();
// Thread ids that cannot collide with a rank (tid = rank): rank-less
// subjects, Flight Recorder dumps without a rank, overlap lanes, the job track.
constexpr int64_t kTidNoRank = 20000000;
constexpr int64_t kTidLane = 30000000;
constexpr int64_t kTidJob = 40000000;
// Process ids far from any tid, so no rank's thread is taken for its host's
// main thread (viewers sort a main thread first, which would undo the
// culprit-first order).
constexpr int64_t kPidBase = 10000000;

inline std::string Q(std::string_view s) {
  std::string out = "\"";
  AppendJsonEscaped(&out, s);
  out += '"';
  return out;
}

// A JSON object of arguments, keys in the order added.
class Args {
 public:
  Args& Str(std::string_view k, std::string_view v) { return Raw(k, Q(v)); }
  Args& Int(std::string_view k, int64_t v) { return Raw(k, std::to_string(v)); }
  Args& Raw(std::string_view k, const std::string& json) {
    s_ += s_.empty() ? "{" : ",";
    s_ += Q(k) + ":" + json;
    return *this;
  }
  std::string Done() const { return s_.empty() ? "{}" : s_ + "}"; }

 private:
  std::string s_;
};

// Nanoseconds as microseconds with exactly three decimals: integer arithmetic,
// so equal times print equal and nesting survives the decimal round trip.
inline std::string Micros(int64_t ns) {
  std::string sign = ns < 0 ? "-" : "";
  uint64_t a = ns < 0 ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  return fmt::format("{}{}.{:03}", sign, a / 1000, a % 1000);
}

// Seconds since Jan 1 of an unknown year as "MM-DD HH:MM:SS" (as the reports print log times).
inline std::string YearTime(int64_t sec) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int64_t day = sec / 86400, s = sec % 86400;
  int month = 0;
  while (month < 11 && day >= kDays[month]) day -= kDays[month++];
  return fmt::format("{:02}-{:02} {:02}:{:02}:{:02}", month + 1, day + 1, s / 3600, s / 60 % 60, s % 60);
}

// Unix seconds as "YYYY-MM-DD HH:MM:SS UTC" (Howard Hinnant's civil_from_days).
inline std::string EpochTime(int64_t sec) {
  int64_t days = sec >= 0 ? sec / 86400 : -((-sec + 86399) / 86400);
  int64_t s = sec - days * 86400;
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = yoe + era * 400, doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC", y + (m <= 2), m, d, s / 3600, s / 60 % 60, s % 60);
}

// Bounds that keep every sum and difference of times below in int64 (a dump
// or a log line can say anything): dump times up to 2^62 ns (year 2116 on the
// epoch clock), log times up to 10^18 ns (log times are seconds of one year),
// durations up to 10^17 ns (about 3 years; longer ones are drawn that long
// and say so). Anything else (inf, NaN, beyond) is no time.
constexpr int64_t kMaxDumpNs = int64_t{1} << 62;
constexpr int64_t kMaxLogNs = 1000000000000000000;
constexpr int64_t kMaxDurationNs = 100000000000000000;
constexpr int64_t kMaxDurationMs = kMaxDurationNs / 1000000;

inline int64_t LogNs(double t) {
  return t >= 0 && t * 1e9 < static_cast<double>(kMaxLogNs) ? std::llround(t * 1e9) : kNoTime;
}
inline int64_t DumpNs(double t) { return t >= 0 && t < static_cast<double>(kMaxDumpNs) ? std::llround(t) : kNoTime; }
// Milliseconds as a duration in nanoseconds, capped at kMaxDurationNs.
inline int64_t DurationNs(int64_t ms) { return std::min(ms, kMaxDurationMs) * 1000000; }

// "[1024, 1024]" lists of a Flight Recorder entry's sizes.
inline std::string Shapes(const std::vector<std::vector<int64_t>>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    s += i ? ", [" : "[";
    for (size_t j = 0; j < v[i].size(); ++j) s += (j ? ", " : "") + std::to_string(v[i][j]);
    s += "]";
  }
  return s + "]";
}

inline std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

inline std::string_view BaseName(std::string_view p) {
  size_t slash = p.find_last_of('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

// A field's milliseconds ("600000"), -1 when it has none.
inline int64_t Millis(std::string_view v) {
  int64_t ms;
  return ConsumeInt(&v, &ms) && v.empty() ? ms : -1;
}

struct Track {
  std::string host;  // process; "" for the job track
  int rank = -1;
  std::string label;  // "rank 5", or a subject / dump label
  int64_t tid = 0;
  bool culprit = false;
  bool job = false;
  bool used = false;  // rank-less tracks are written only when something is on them
};

struct Event {
  int track = -1;
  char ph = 'i';    // 'X' or 'i'
  bool fr = false;  // on the Flight Recorder clock (shifted later)
  int64_t ns = kNoTime;
  int64_t dur_ns = 0;
  std::string name, cat, args;
  int lane = 0;
  // The evidence line's file and line: untimed instants go in that order.
  int file = -1;
  int64_t line = 0;
};

class TraceBuilder {
 public:
  TraceBuilder(const JobState& st, const Diagnosis& d) : st_(st), d_(d) {}

  std::string Render();

 private:
  int NewTrack(const std::string& host, int rank, const std::string& label, int64_t tid);

  int RankTrack(int rank, const std::string& host);

  int JobTrack();

  void MakeTracks();

  // The track an evidence line belongs to: the only live subject that wrote
  // its file; else the one of those the finding names; else the rank the line
  // names itself; else the finding's only rank; else the job track.
  // One file may hold every rank of a job (an interleaved log of 100k ranks),
  // and so may a finding: the candidates are looked at once, each rank found
  // by binary search in the finding's sorted ranks, so a trace stays linear.
  int TrackFor(const Evidence& e, const Finding* f);

  const std::vector<int>& SortedRanks(const Finding& f);

  std::string Cite(const Evidence& e) const { return fmt::format("{}:{}", st_.CitedPath(e, "?"), st_.CitedLine(e)); }

  void Add(Event ev);

  // Watchdog timeouts with a time, from the timeout_seq fact (rules/torch.yaml):
  // per rank and process group the collective the watchdog gave up on, with
  // its op, timeout and "ran for" (the fact's fields) and the line that said
  // so. One slice per rank and collective (two subjects of one rank, one
  // track: the earlier slice).
  void AddWatchdogSlices();

  void AddFindingInstants();

  void AddFlightRecorder();

  // An instant on each suspect's track at the primary finding's first timed
  // evidence (or the start), so the culprit is found by eye and by search.
  void AddCulpritMarker();

  // Puts both clocks on one timeline and rebases it to a whole second.
  void Align();

  // Slices on one thread must nest: each goes to the first lane of its track
  // where it starts after the open slices end or fits inside the innermost.
  // Linear in slices (times log): slices that overlap without nesting (dumps
  // of one rank read twice, a thousand process groups) can open a lane each,
  // and scanning every lane per slice would be quadratic. A lane's open ends
  // form a stack (innermost on top, the smallest); ends at or before a
  // slice's start are closed on every lane at once (a heap of the tops), so
  // the first lane that takes the slice is the first whose top is at least
  // its end (a max tree over the lanes' tops; no open slice: the maximum).
  void AssignLanes();

  std::string Write();

  const JobState& st_;
  const Diagnosis& d_;
  std::vector<Track> tracks_;
  std::map<int, int> rank_track_;
  std::map<int, int> subject_track_;
  std::map<int, std::vector<int>> file_tracks_;              // file -> tracks of the live subjects that wrote it
  std::map<const Finding*, std::vector<int>> sorted_ranks_;  // TrackFor's lookups
  std::vector<int> culprits_;
  std::vector<int> dump_track_;  // per Flight Recorder file
  int job_track_ = -1;
  std::vector<Event> events_;
  std::map<int, int> lanes_used_;
  int64_t watchdog_first_ = kNoTime;                // log clock
  int64_t fr_first_ = kNoTime, fr_last_ = kNoTime;  // dump clock
  int64_t fr_offset_ = 0, base_ = 0;
  size_t fr_omitted_ = 0;
  std::string alignment_, log_origin_, fr_origin_, dump_time_note_;
};

}  // namespace trace_detail
}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_REPORTS_TRACE_INTERNAL_H_
