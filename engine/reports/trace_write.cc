// The trace builder's last steps (engine/reports/trace_internal.h): the log and
// Flight Recorder clocks aligned, overlapping slices moved to lanes, the JSON
// written.
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
#include "engine/reports/trace_internal.h"
#include "parsers/text_util.h"

namespace ncclscan {
namespace trace_detail {

void TraceBuilder::Align() {
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
  // Untimed instants from ts 0 on their track, 1 us apart in the order of
  // their lines (file, line): a track reads top to bottom as its log does.
  std::vector<size_t> untimed;
  for (size_t i = 0; i < events_.size(); ++i) {
    if (events_[i].ns == kNoTime) untimed.push_back(i);
  }
  std::stable_sort(untimed.begin(), untimed.end(), [&](size_t a, size_t b) {
    const Event &x = events_[a], &y = events_[b];
    return std::make_tuple(x.track, x.file, x.line) < std::make_tuple(y.track, y.file, y.line);
  });
  int64_t step = 0;
  for (size_t k = 0; k < untimed.size(); ++k) {
    Event& e = events_[untimed[k]];
    step = k > 0 && events_[untimed[k - 1]].track == e.track ? step + 1 : 0;
    e.ns = base_ + step * 1000;
  }
  for (Event& e : events_) e.ns -= base_;
}

void TraceBuilder::AssignLanes() {
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

std::string TraceBuilder::Write() {
  // Track order: suspects first, then ranks, then the rest by label; the job track last.
  std::vector<int> order;
  for (size_t i = 0; i < tracks_.size(); ++i) {
    if (tracks_[i].used || tracks_[i].culprit) order.push_back(static_cast<int>(i));
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const Track &x = tracks_[a], &y = tracks_[b];
    auto key = [&](const Track& t) {
      int pos =
          t.culprit
              ? static_cast<int>(std::find(culprits_.begin(), culprits_.end(), &t - tracks_.data()) - culprits_.begin())
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
    lines.push_back(
        fmt::format("{{\"ph\":\"M\",\"name\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":0,\"args\":{}}}", name, p, tid, args));
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
    std::string l = fmt::format("{{\"ph\":\"{}\",\"name\":{},\"cat\":{},\"pid\":{},\"tid\":{},\"ts\":{}", e.ph,
                                Q(e.name), Q(e.cat), pid[tracks_[e.track].host], tid_of(e.track, e.lane), Micros(e.ns));
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
  other.Str("untimed",
            "findings whose lines carry no timestamp are instants from ts 0 on, 1 us apart in the order of their "
            "lines (args.note says so)");
  if (fr_omitted_) other.Int("flight_recorder_entries_omitted", static_cast<int64_t>(fr_omitted_));

  std::string out = "{\"traceEvents\":[\n";
  for (size_t i = 0; i < lines.size(); ++i) out += lines[i] + (i + 1 < lines.size() ? ",\n" : "\n");
  out += "],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":" + other.Done() + "}\n";
  return out;
}

}  // namespace trace_detail
}  // namespace ncclscan
