#include "engine/reports/trace_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <utility>

#include "engine/reports/report.h"
#include "parsers/text_util.h"

namespace ncclscan {
namespace {

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

std::string Q(std::string_view s) {
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
std::string Micros(int64_t ns) {
  std::string sign = ns < 0 ? "-" : "";
  uint64_t a = ns < 0 ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  return fmt::format("{}{}.{:03}", sign, a / 1000, a % 1000);
}

// Seconds since Jan 1 of an unknown year as "MM-DD HH:MM:SS" (as the reports print log times).
std::string YearTime(int64_t sec) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int64_t day = sec / 86400, s = sec % 86400;
  int month = 0;
  while (month < 11 && day >= kDays[month]) day -= kDays[month++];
  return fmt::format("{:02}-{:02} {:02}:{:02}:{:02}", month + 1, day + 1, s / 3600, s / 60 % 60, s % 60);
}

// Unix seconds as "YYYY-MM-DD HH:MM:SS UTC" (Howard Hinnant's civil_from_days).
std::string EpochTime(int64_t sec) {
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

int64_t LogNs(double t) { return t >= 0 && t * 1e9 < static_cast<double>(kMaxLogNs) ? std::llround(t * 1e9) : kNoTime; }
int64_t DumpNs(double t) { return t >= 0 && t < static_cast<double>(kMaxDumpNs) ? std::llround(t) : kNoTime; }
// Milliseconds as a duration in nanoseconds, capped at kMaxDurationNs.
int64_t DurationNs(int64_t ms) { return std::min(ms, kMaxDurationMs) * 1000000; }

// "[1024, 1024]" lists of a Flight Recorder entry's sizes.
std::string Shapes(const std::vector<std::vector<int64_t>>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    s += i ? ", [" : "[";
    for (size_t j = 0; j < v[i].size(); ++j) s += (j ? ", " : "") + std::to_string(v[i][j]);
    s += "]";
  }
  return s + "]";
}

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string_view BaseName(std::string_view p) {
  size_t slash = p.find_last_of('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

// A field's milliseconds ("600000"), -1 when it has none.
int64_t Millis(std::string_view v) {
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
};

class TraceBuilder {
 public:
  TraceBuilder(const JobState& st, const Diagnosis& d) : st_(st), d_(d) {}

  std::string Render() {
    MakeTracks();
    AddWatchdogSlices();
    AddFindingInstants();
    AddFlightRecorder();
    AddCulpritMarker();
    Align();
    AssignLanes();
    return Write();
  }

 private:
  int NewTrack(const std::string& host, int rank, const std::string& label, int64_t tid) {
    Track t;
    t.host = host;
    t.rank = rank;
    t.label = label;
    t.tid = tid;
    t.used = rank >= 0;
    tracks_.push_back(t);
    return static_cast<int>(tracks_.size()) - 1;
  }

  int RankTrack(int rank, const std::string& host) {
    auto it = rank_track_.find(rank);
    if (it != rank_track_.end()) return it->second;
    int t = NewTrack(host.empty() ? "unknown host" : host, rank, fmt::format("rank {}", rank), rank);
    rank_track_[rank] = t;
    return t;
  }

  int JobTrack() {
    if (job_track_ < 0) {
      job_track_ = NewTrack("", -1, "not tied to one rank", kTidJob);
      tracks_[job_track_].job = true;
    }
    return job_track_;
  }

  void MakeTracks() {
    const auto& subs = st_.subjects();
    for (int s : st_.LiveSubjects()) {
      const Subject& sub = subs[s];
      int t = sub.rank >= 0 ? RankTrack(sub.rank, sub.host)
                            : NewTrack(sub.host.empty() ? "unknown host" : sub.host, -1, sub.label,
                                       kTidNoRank + static_cast<int64_t>(tracks_.size()));
      subject_track_[s] = t;
      for (int f : sub.files) file_tracks_[f].push_back(t);
    }
    for (const FrFile& file : st_.flight_recorders()) {
      dump_track_.push_back(file.rank >= 0 ? RankTrack(file.rank, "")
                                           : NewTrack("unknown host", -1, "dump " + std::string(BaseName(file.path)),
                                                      kTidNoRank + static_cast<int64_t>(tracks_.size())));
    }
    if (d_.primary >= 0) {
      const Finding& p = d_.findings[d_.primary];
      for (int r : p.suspect_ranks) {
        // A suspect that never logged a line still gets its (empty) track: its absence is the evidence.
        std::string host = p.suspect_hosts.size() == 1 ? p.suspect_hosts[0] : "";
        int t = RankTrack(r, host);
        tracks_[t].culprit = true;
        culprits_.push_back(t);
      }
    }
  }

  // The track an evidence line belongs to: the only live subject that wrote
  // its file; else the one of those the finding names; else the rank the line
  // names itself; else the finding's only rank; else the job track.
  // One file may hold every rank of a job (an interleaved log of 100k ranks),
  // and so may a finding: the candidates are looked at once, each rank found
  // by binary search in the finding's sorted ranks, so a trace stays linear.
  int TrackFor(const Evidence& e, const Finding* f) {
    static const std::vector<int> kNone;
    auto it = file_tracks_.find(e.file);
    const std::vector<int>& cands = it != file_tracks_.end() ? it->second : kNone;
    if (cands.size() == 1) return cands[0];
    if (f && cands.size() > 1) {
      const std::vector<int>& ranks = SortedRanks(*f);
      int named = -1, count = 0;
      for (int t : cands) {
        if (tracks_[t].rank < 0 || !std::binary_search(ranks.begin(), ranks.end(), tracks_[t].rank)) continue;
        named = t;
        if (++count > 1) break;
      }
      if (count == 1) return named;
    }
    // A rank named by the line or by the finding gets its track even if no subject had it.
    const int r = e.rank;
    if (r >= 0 && (cands.empty() || rank_track_.count(r))) return RankTrack(r, "");
    if (f && f->ranks.size() == 1) return RankTrack(f->ranks[0], "");
    if (e.file >= 0 && e.file < static_cast<int>(st_.files().size())) {
      int pr = st_.files()[e.file].path_rank;
      if (pr >= 0 && rank_track_.count(pr)) return rank_track_[pr];
    }
    return JobTrack();
  }

  const std::vector<int>& SortedRanks(const Finding& f) {
    auto it = sorted_ranks_.find(&f);
    if (it != sorted_ranks_.end()) return it->second;
    std::vector<int> r = f.ranks;
    std::sort(r.begin(), r.end());
    return sorted_ranks_.emplace(&f, std::move(r)).first->second;
  }

  std::string Cite(const Evidence& e) const { return fmt::format("{}:{}", st_.CitedPath(e, "?"), st_.CitedLine(e)); }

  void Add(Event ev) {
    tracks_[ev.track].used = true;
    events_.push_back(std::move(ev));
  }

  // Watchdog timeouts with a time, from the timeout_seq fact (rules/torch.yaml):
  // per rank and process group the collective the watchdog gave up on, with
  // its op, timeout and "ran for" (the fact's fields) and the line that said
  // so. One slice per rank and collective (two subjects of one rank, one
  // track: the earlier slice).
  void AddWatchdogSlices() {
    const int fact = st_.rules().fact(Fact::kTimeoutSeq);
    if (fact < 0) return;
    std::map<std::tuple<int, std::string, std::string>, Event> slices;
    for (int s : st_.LiveSubjects()) {
      const int track = subject_track_[s];
      for (const auto& [pg, v] : st_.subjects()[s].keyed[fact]) {
        const Evidence& e = v.evidence;
        if (e.time < 0) continue;
        const std::string op(FieldOf(v, TimeoutField::kOp));
        const std::string& seq = v.value;
        const int64_t timeout_ms = Millis(FieldOf(v, TimeoutField::kTimeoutMs));
        const int64_t ran_ms = Millis(FieldOf(v, TimeoutField::kRanMs));
        const int64_t end = LogNs(e.time);
        if (watchdog_first_ == kNoTime || end < watchdog_first_) watchdog_first_ = end;
        auto key = std::make_tuple(track, op, seq);
        auto it = slices.find(key);
        if (it != slices.end() && it->second.ns + it->second.dur_ns <= end) continue;
        const int64_t ms = ran_ms >= 0 ? ran_ms : timeout_ms;
        Event ev;
        ev.track = track;
        ev.ph = 'X';
        ev.dur_ns = ms >= 0 ? DurationNs(ms) : 0;
        ev.ns = end - ev.dur_ns;
        ev.name = op + (seq.empty() ? "" : " #" + seq) + " timed out";
        ev.cat = "watchdog";
        Args a;
        a.Str("op", op);
        if (!seq.empty()) a.Str("seq", seq);
        if (timeout_ms >= 0) a.Int("timeout_ms", timeout_ms);
        if (ran_ms >= 0)
          a.Int("ran_ms", ran_ms);
        else
          a.Str("note",
                ms >= 0 ? "no \"ran for\" on the line: the slice spans the timeout" : "no duration on the line");
        if (ms > kMaxDurationMs) {
          a.Str("capped", fmt::format("the slice is drawn {} ms long, not {} ms", kMaxDurationMs, ms));
        }
        a.Str("text", e.text).Str("at", Cite(e));
        ev.args = a.Done();
        slices[key] = std::move(ev);
      }
    }
    for (auto& kv : slices) Add(std::move(kv.second));
  }

  void AddFindingInstants() {
    for (size_t i = 0; i < d_.findings.size(); ++i) {
      const Finding& f = d_.findings[i];
      auto instant = [&](int track, const Evidence* e) {
        Event ev;
        ev.track = track;
        ev.ns = e ? LogNs(e->time) : kNoTime;
        ev.name = f.rule_id;
        ev.cat = SeverityName(f.severity);
        Args a;
        a.Str("title", f.title).Str("severity", SeverityName(f.severity)).Str("role", RoleName(f.role));
        if (static_cast<int>(i) == d_.primary) a.Raw("primary", "true");
        if (!f.ranks.empty()) a.Str("ranks", CompactRanks(f.ranks));
        if (e) a.Str("text", e->text).Str("at", Cite(*e));
        if (ev.ns == kNoTime) {
          a.Str("note", e ? "the line carries no timestamp: placed at the start of the track"
                          : "no evidence line: placed at the start of the track");
        }
        ev.args = a.Done();
        Add(std::move(ev));
      };
      if (f.evidence.empty()) {
        int track = !f.suspect_ranks.empty() ? RankTrack(f.suspect_ranks[0], "")
                    : !f.ranks.empty()       ? RankTrack(f.ranks[0], "")
                                             : JobTrack();
        instant(track, nullptr);
      }
      for (const Evidence& e : f.evidence) instant(TrackFor(e, &f), &e);
    }
  }

  void AddFlightRecorder() {
    // A dump carries no time of its own. Every rank dumps at about the same
    // moment: when the first watchdog fires (the others on its signal), which is
    // the enqueue time of the first work to time out plus its timeout (the
    // watchdog measures from the work's creation). Nothing is recorded while a
    // job hangs, so the latest time in the dumps is only a lower bound. Work that
    // never completed is drawn up to this estimate.
    int64_t latest = kNoTime, fired = kNoTime;
    for (const FrFile& file : st_.flight_recorders()) {
      for (const FrEntry& e : file.dump.entries) {
        for (double t : {e.time_created_ns, e.time_started_ns, e.time_completed_ns}) {
          latest = std::max(latest, DumpNs(t));
        }
        int64_t created = DumpNs(e.time_created_ns);
        if (DumpNs(e.time_completed_ns) == kNoTime && e.state != "completed" && created != kNoTime &&
            e.timeout_ms > 0) {
          int64_t t = created + DurationNs(e.timeout_ms);
          if (fired == kNoTime || t < fired) fired = t;
        }
      }
    }
    fr_last_ = std::max(latest, fired);
    dump_time_note_ = fired != kNoTime && fired >= latest
                          ? "the enqueue time plus the timeout of the first work that never completed (when its "
                            "watchdog fired and the dumps were written)"
                          : "the latest time recorded in the dumps (no work that never completed had a timeout)";
    const int64_t dump = fr_last_;
    for (size_t fi = 0; fi < st_.flight_recorders().size(); ++fi) {
      const FrFile& file = st_.flight_recorders()[fi];
      const int track = dump_track_[fi];
      size_t first =
          file.dump.entries.size() > kMaxTraceEntriesPerDump ? file.dump.entries.size() - kMaxTraceEntriesPerDump : 0;
      fr_omitted_ += first;
      for (size_t i = first; i < file.dump.entries.size(); ++i) {
        const FrEntry& e = file.dump.entries[i];
        int64_t start = DumpNs(e.time_created_ns);
        if (start == kNoTime) {
          ++fr_omitted_;
          continue;
        }
        int64_t end = DumpNs(e.time_completed_ns);
        bool completed = end != kNoTime;
        if (!completed) end = dump;
        std::string op = e.profiling_name;
        if (StartsWith(op, "nccl:")) op = op.substr(5);
        if (op.empty()) op = "collective";
        Event ev;
        ev.track = track;
        ev.ph = 'X';
        ev.fr = true;
        ev.ns = start;
        ev.dur_ns = std::max<int64_t>(0, end - start);
        ev.name = op + (e.state.empty() || e.state == "completed" ? "" : " [" + e.state + "]");
        ev.cat = "flight_recorder," + (e.state.empty() ? std::string("unknown") : e.state);
        Args a;
        std::string pg = e.pg_name.empty() ? e.pg_id : e.pg_name;
        if (!e.pg_desc.empty()) pg += " (" + e.pg_desc + ")";
        a.Str("pg", pg);
        a.Int("seq", e.is_p2p ? e.p2p_seq_id : e.collective_seq_id);
        if (e.is_p2p) a.Raw("p2p", "true");
        a.Str("op", e.profiling_name);
        a.Str("input_sizes", Shapes(e.input_sizes)).Str("output_sizes", Shapes(e.output_sizes));
        a.Str("dtype", Joined(e.input_dtypes));
        if (e.output_dtypes != e.input_dtypes) a.Str("output_dtype", Joined(e.output_dtypes));
        a.Str("state", e.state);
        a.Str("end", completed
                         ? "completed (seen by the watchdog)"
                         : "never completed: drawn to the estimated dump time (otherData.flight_recorder_dump_time)");
        // JSON has no inf or NaN (a pickle can hold them): such a duration is left out.
        if (e.duration_ms >= 0 && std::isfinite(e.duration_ms)) {
          a.Raw("gpu_duration_ms", fmt::format("{:.3f}", e.duration_ms));
        }
        if (e.timeout_ms >= 0) a.Int("timeout_ms", e.timeout_ms);
        a.Int("record_id", e.record_id);
        if (!e.top_frame.empty()) a.Str("frame", e.top_frame);
        a.Str("dump", file.path);
        ev.args = a.Done();
        fr_first_ = std::min(fr_first_ == kNoTime ? start : fr_first_, start);
        Add(std::move(ev));
      }
    }
  }

  // An instant on each suspect's track at the primary finding's first timed
  // evidence (or the start), so the culprit is found by eye and by search.
  void AddCulpritMarker() {
    if (d_.primary < 0) return;
    const Finding& p = d_.findings[d_.primary];
    int64_t at = kNoTime;
    for (const Evidence& e : p.evidence) {
      int64_t t = LogNs(e.time);
      if (t != kNoTime && (at == kNoTime || t < at)) at = t;
    }
    for (int t : culprits_) {
      Event ev;
      ev.track = t;
      ev.ns = at;
      ev.name = "suspected culprit (" + p.rule_id + ")";
      ev.cat = "culprit";
      Args a;
      a.Str("rule", p.rule_id).Str("title", p.title).Str("headline", d_.headline);
      a.Str("explanation", p.explanation).Str("fingerprint", p.fingerprint);
      if (at == kNoTime) a.Str("note", "the primary finding's evidence has no timestamp: placed at the start");
      ev.args = a.Done();
      Add(std::move(ev));
    }
  }

  // Puts both clocks on one timeline and rebases it to a whole second.
  void Align() {
    int64_t log_first = kNoTime;
    bool any_fr = false;
    for (const Event& e : events_) {
      if (e.ns == kNoTime) continue;
      if (e.fr)
        any_fr = true;
      else if (log_first == kNoTime || e.ns < log_first)
        log_first = e.ns;
    }
    const bool both = any_fr && log_first != kNoTime;
    if (both) {
      if (watchdog_first_ != kNoTime && fr_last_ != kNoTime) {
        fr_offset_ = watchdog_first_ - fr_last_;
        alignment_ =
            "the estimated dump time (when the first watchdog fired) is put at the earliest watchdog timeout line "
            "with a timestamp";
      } else {
        fr_offset_ = log_first - fr_first_;
        alignment_ = "the earliest Flight Recorder entry is put at the earliest timestamped log line";
      }
      for (Event& e : events_) {
        if (e.fr && e.ns != kNoTime) e.ns += fr_offset_;
      }
    }
    int64_t first = kNoTime;
    for (const Event& e : events_) {
      if (e.ns != kNoTime && (first == kNoTime || e.ns < first)) first = e.ns;
    }
    if (first != kNoTime) {
      // A whole second on the clock the trace is read on (the log clock when there is one).
      base_ = first >= 0 ? first / kNsPerSec * kNsPerSec : -((-first + kNsPerSec - 1) / kNsPerSec) * kNsPerSec;
    }
    if (log_first != kNoTime) {
      log_origin_ = YearTime(base_ / kNsPerSec) +
                    " on the logs' clock (month-day time: the logs carry no year; log times are seconds since Jan 1)";
    }
    if (any_fr) {
      int64_t fr_base = base_ - fr_offset_;
      fr_origin_ = EpochTime(fr_base >= 0 ? fr_base / kNsPerSec : -((-fr_base + kNsPerSec - 1) / kNsPerSec)) +
                   fmt::format(" on the Flight Recorder clock (epoch ns {})", fr_base);
    }
    for (Event& e : events_) e.ns = e.ns == kNoTime ? 0 : e.ns - base_;
  }

  // Slices on one thread must nest: each goes to the first lane of its track
  // where it starts after the open slices end or fits inside the innermost.
  // Linear in slices (times log): slices that overlap without nesting (dumps
  // of one rank read twice, a thousand process groups) can open a lane each,
  // and scanning every lane per slice would be quadratic. A lane's open ends
  // form a stack (innermost on top, the smallest); ends at or before a
  // slice's start are closed on every lane at once (a heap of the tops), so
  // the first lane that takes the slice is the first whose top is at least
  // its end (a max tree over the lanes' tops; no open slice: the maximum).
  void AssignLanes() {
    std::vector<size_t> order;
    for (size_t i = 0; i < events_.size(); ++i) {
      if (events_[i].ph == 'X') order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const Event &x = events_[a], &y = events_[b];
      return std::make_tuple(x.track, x.ns, -x.dur_ns) < std::make_tuple(y.track, y.ns, -y.dur_ns);
    });
    constexpr int64_t kNoneOpen = std::numeric_limits<int64_t>::max();
    for (size_t run = 0; run < order.size();) {
      const int track = events_[order[run]].track;
      size_t run_end = run;
      while (run_end < order.size() && events_[order[run_end]].track == track) ++run_end;
      // At most one lane per slice: the tree's leaves are the lanes' tops.
      size_t leaves = 1;
      while (leaves < run_end - run + 1) leaves *= 2;
      std::vector<int64_t> tree(2 * leaves, kNoneOpen);
      auto set_top = [&](size_t lane, int64_t v) {
        size_t i = leaves + lane;
        tree[i] = v;
        for (i /= 2; i >= 1; i /= 2) tree[i] = std::max(tree[2 * i], tree[2 * i + 1]);
      };
      auto first_at_least = [&](int64_t v) {
        size_t i = 1;
        while (i < leaves) i = tree[2 * i] >= v ? 2 * i : 2 * i + 1;
        return i - leaves;
      };
      std::vector<std::vector<int64_t>> lanes;  // lane -> stack of open slice ends
      using Top = std::pair<int64_t, size_t>;   // (end, lane) when it was a lane's top
      std::priority_queue<Top, std::vector<Top>, std::greater<Top>> tops;
      for (; run < run_end; ++run) {
        Event& e = events_[order[run]];
        while (!tops.empty() && tops.top().first <= e.ns) {
          auto [v, lane] = tops.top();
          tops.pop();
          auto& stack = lanes[lane];
          if (stack.empty() || stack.back() != v) continue;  // closed already
          stack.pop_back();
          set_top(lane, stack.empty() ? kNoneOpen : stack.back());
          if (!stack.empty()) tops.push({stack.back(), lane});
        }
        const int64_t end = e.ns + e.dur_ns;
        size_t lane = first_at_least(end);
        if (lane == lanes.size()) lanes.emplace_back();
        lanes[lane].push_back(end);
        set_top(lane, end);
        tops.push({end, lane});
        e.lane = static_cast<int>(lane);
        lanes_used_[track] = std::max(lanes_used_[track], e.lane + 1);
      }
    }
  }

  std::string Write() {
    // Track order: suspects first, then ranks, then the rest by label; the job track last.
    std::vector<int> order;
    for (size_t i = 0; i < tracks_.size(); ++i) {
      if (tracks_[i].used || tracks_[i].culprit) order.push_back(static_cast<int>(i));
    }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const Track &x = tracks_[a], &y = tracks_[b];
      auto key = [&](const Track& t) {
        int pos = t.culprit ? static_cast<int>(std::find(culprits_.begin(), culprits_.end(), &t - tracks_.data()) -
                                               culprits_.begin())
                            : std::numeric_limits<int>::max();
        return std::make_tuple(t.job, pos, t.rank < 0, t.rank, t.label);
      };
      return key(x) < key(y);
    });
    std::vector<int> position(tracks_.size(), 0);
    for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
    // Processes in the order their first track comes.
    std::map<std::string, int64_t> pid;
    std::vector<std::string> hosts;
    for (int t : order) {
      const std::string& h = tracks_[t].host;
      if (!pid.count(h)) {
        pid[h] = kPidBase + static_cast<int64_t>(hosts.size());
        hosts.push_back(h);
      }
    }
    // Extra lanes' thread ids, in track order.
    std::map<std::pair<int, int>, int64_t> lane_tid;
    int64_t next_lane = kTidLane;
    for (int t : order) {
      for (int l = 1; l < lanes_used_[t]; ++l) lane_tid[{t, l}] = next_lane++;
    }
    auto tid_of = [&](int t, int lane) { return lane == 0 ? tracks_[t].tid : lane_tid.at({t, lane}); };

    std::vector<std::string> lines;
    auto meta = [&](const char* name, int64_t p, int64_t tid, const std::string& args) {
      lines.push_back(fmt::format("{{\"ph\":\"M\",\"name\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":0,\"args\":{}}}", name,
                                  p, tid, args));
    };
    for (size_t h = 0; h < hosts.size(); ++h) {
      int64_t p = pid[hosts[h]];
      meta("process_name", p, 0, Args().Str("name", hosts[h].empty() ? "job (not tied to one rank)" : hosts[h]).Done());
      meta("process_sort_index", p, 0, Args().Int("sort_index", static_cast<int64_t>(h)).Done());
    }
    const std::string rule = d_.primary >= 0 ? d_.findings[d_.primary].rule_id : "";
    for (int t : order) {
      const Track& tr = tracks_[t];
      std::string name = tr.label + (tr.culprit ? " \xe2\x80\x94 suspected culprit (" + rule + ")" : "");
      int64_t p = pid[tr.host];
      meta("thread_name", p, tr.tid, Args().Str("name", name).Done());
      meta("thread_sort_index", p, tr.tid, Args().Int("sort_index", position[t] * 1000LL).Done());
      for (int l = 1; l < lanes_used_[t]; ++l) {
        meta("thread_name", p, tid_of(t, l), Args().Str("name", fmt::format("{} (overlap {})", tr.label, l)).Done());
        meta("thread_sort_index", p, tid_of(t, l), Args().Int("sort_index", position[t] * 1000LL + l).Done());
      }
    }
    std::vector<size_t> ev(events_.size());
    for (size_t i = 0; i < ev.size(); ++i) ev[i] = i;
    std::stable_sort(ev.begin(), ev.end(), [&](size_t a, size_t b) {
      const Event &x = events_[a], &y = events_[b];
      return std::make_tuple(x.ns, position[x.track], x.lane) < std::make_tuple(y.ns, position[y.track], y.lane);
    });
    for (size_t i : ev) {
      const Event& e = events_[i];
      std::string l =
          fmt::format("{{\"ph\":\"{}\",\"name\":{},\"cat\":{},\"pid\":{},\"tid\":{},\"ts\":{}", e.ph, Q(e.name),
                      Q(e.cat), pid[tracks_[e.track].host], tid_of(e.track, e.lane), Micros(e.ns));
      if (e.ph == 'X')
        l += ",\"dur\":" + Micros(e.dur_ns);
      else
        l += ",\"s\":\"t\"";
      l += ",\"args\":" + e.args + "}";
      lines.push_back(std::move(l));
    }

    Args other;
    other.Str("schema", kTraceSchemaVersion).Str("tool", std::string("ncclscan ") + ToolVersion());
    other.Str("status", StatusName(d_.status)).Str("headline", d_.headline);
    if (d_.primary >= 0) {
      const Finding& p = d_.findings[d_.primary];
      other.Str("primary", p.rule_id).Str("primary_fingerprint", p.fingerprint);
      other.Str("suspected_ranks", CompactRanks(p.suspect_ranks));
    }
    if (!d_.job_id.empty()) other.Str("job_id", d_.job_id);
    if (std::string rc = RuleChangesLine(st_.rules()); !rc.empty()) other.Str("rule_changes", rc);
    other.Str("time_unit", "ts and dur are microseconds since ts 0 below");
    if (!log_origin_.empty()) other.Str("ts_0_log_clock", log_origin_);
    if (!fr_origin_.empty()) other.Str("ts_0_flight_recorder_clock", fr_origin_);
    if (!fr_origin_.empty()) other.Str("flight_recorder_dump_time", dump_time_note_);
    if (!alignment_.empty()) {
      other.Str("clock_alignment", alignment_ + fmt::format(": the dumps are shifted by {} us", Micros(fr_offset_)));
    }
    other.Str("untimed", "findings whose lines carry no timestamp are instants at ts 0 (args.note says so)");
    if (fr_omitted_) other.Int("flight_recorder_entries_omitted", static_cast<int64_t>(fr_omitted_));

    std::string out = "{\"traceEvents\":[\n";
    for (size_t i = 0; i < lines.size(); ++i) out += lines[i] + (i + 1 < lines.size() ? ",\n" : "\n");
    out += "],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":" + other.Done() + "}\n";
    return out;
  }

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

}  // namespace

std::string RenderTrace(const JobState& state, const Diagnosis& d) { return TraceBuilder(state, d).Render(); }

}  // namespace ncclscan
