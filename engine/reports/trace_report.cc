// Chrome trace output (engine/reports/trace_report.h): the tracks and the
// events on them. The builder is declared in trace_internal.h; clock alignment,
// lanes and the JSON are in trace_write.cc.
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
#include "engine/reports/trace_internal.h"
#include "parsers/text_util.h"

namespace ncclscan {
namespace trace_detail {

std::string TraceBuilder::Render() {
  MakeTracks();
  AddWatchdogSlices();
  AddFindingInstants();
  AddFlightRecorder();
  AddCulpritMarker();
  Align();
  AssignLanes();
  return Write();
}

int TraceBuilder::NewTrack(const std::string& host, int rank, const std::string& label, int64_t tid) {
  Track t;
  t.host = host;
  t.rank = rank;
  t.label = label;
  t.tid = tid;
  t.used = rank >= 0;
  tracks_.push_back(t);
  return static_cast<int>(tracks_.size()) - 1;
}

int TraceBuilder::RankTrack(int rank, const std::string& host) {
  auto it = rank_track_.find(rank);
  if (it != rank_track_.end()) return it->second;
  int t = NewTrack(host.empty() ? "unknown host" : host, rank, fmt::format("rank {}", rank), rank);
  rank_track_[rank] = t;
  return t;
}

int TraceBuilder::JobTrack() {
  if (job_track_ < 0) {
    job_track_ = NewTrack("", -1, "not tied to one rank", kTidJob);
    tracks_[job_track_].job = true;
  }
  return job_track_;
}

void TraceBuilder::MakeTracks() {
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

int TraceBuilder::TrackFor(const Evidence& e, const Finding* f) {
  static const std::vector<int> kNone;
  // The process the line was taken for (processes of two hosts can share a
  // file, and a pid).
  if (e.subject >= 0) {
    auto st = subject_track_.find(st_.LiveSubject(e.subject));
    if (st != subject_track_.end()) return st->second;
  }
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

const std::vector<int>& TraceBuilder::SortedRanks(const Finding& f) {
  auto it = sorted_ranks_.find(&f);
  if (it != sorted_ranks_.end()) return it->second;
  std::vector<int> r = f.ranks;
  std::sort(r.begin(), r.end());
  return sorted_ranks_.emplace(&f, std::move(r)).first->second;
}

void TraceBuilder::Add(Event ev) {
  tracks_[ev.track].used = true;
  events_.push_back(std::move(ev));
}

void TraceBuilder::AddWatchdogSlices() {
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
        a.Str("note", ms >= 0 ? "no \"ran for\" on the line: the slice spans the timeout" : "no duration on the line");
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

void TraceBuilder::AddFindingInstants() {
  for (size_t i = 0; i < d_.findings.size(); ++i) {
    const Finding& f = d_.findings[i];
    auto instant = [&](int track, const Evidence* e) {
      Event ev;
      ev.track = track;
      ev.ns = e ? LogNs(e->time) : kNoTime;
      if (e) {
        ev.file = e->file;
        ev.line = e->line;
      }
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

void TraceBuilder::AddFlightRecorder() {
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
      if (DumpNs(e.time_completed_ns) == kNoTime && e.state != "completed" && created != kNoTime && e.timeout_ms > 0) {
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

void TraceBuilder::AddCulpritMarker() {
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

}  // namespace trace_detail

std::string RenderTrace(const JobState& state, const Diagnosis& d) {
  return trace_detail::TraceBuilder(state, d).Render();
}

}  // namespace ncclscan
