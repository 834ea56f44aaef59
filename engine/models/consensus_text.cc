// Consensus checks read from the ranks' text alone (engine/models/consensus_checks.h):
//   died_first      the rank that crashed, ran out of memory or went silent
//                   before the others' watchdogs timed out;
//   not_started     (text part) a rank that enqueued the collective the others
//                   wait in but whose GPU stream never started it: the desync
//                   report's "didn't join collective #N" and the rank's own
//                   "last enqueued work" status line.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

#include "engine/models/consensus_checks.h"
#include "engine/models/diagnosis.h"
#include "parsers/text_util.h"

namespace ncclscan {

namespace {

// The ranks of a desync report's list ("7", "3, 4").
std::vector<int> RankList(const std::string& s) {
  std::vector<int> out;
  std::string_view v = s;
  while (!v.empty()) {
    int64_t r;
    if (ConsumeInt(&v, &r) && r >= 0 && r < kMaxRanks) out.push_back(static_cast<int>(r));
    while (!v.empty() && (v.front() == ',' || v.front() == ' ')) v.remove_prefix(1);
    if (!v.empty() && !(v.front() >= '0' && v.front() <= '9')) break;
  }
  return out;
}

// first_error says what failed (rules/*.yaml): the process's own failures are
// those PyTorch raises (torch.yaml, catalog_torch.yaml, the catch-all's
// "PyTorch error …"); every other value is an error NCCL or its transport
// reported, "… inside NCCL" included. (OOM, wherever reported, is also `oom`.)
bool IsNcclSide(const FactValue& v) {
  if (v.value.find("inside NCCL") != std::string::npos) return true;
  static const char* kProcess[] = {"PyTorch error",      "CUDA out of memory",   "CUDA error: ",
                                   "device-side assert", "assertion failed in ", "Python exception "};
  for (const char* p : kProcess) {
    if (StartsWith(v.value, p)) return false;
  }
  return true;
}

// A rank's last timestamped line the scan kept: the evidence of its facts and
// of the line findings it printed (per file of the subject: a finding's
// evidence from several ranks' files is told apart by file). Lines that match
// no rule are not kept; a rank silent in what matters is silent enough.
const Evidence* LastSignOfLife(const JobState& state, int s) {
  const Subject& sub = state.subjects()[s];
  const Evidence* last = nullptr;
  auto consider = [&](const Evidence& e) {
    if (e.time >= 0 && (!last || e.time > last->time)) last = &e;
  };
  for (const auto& [f, v] : sub.facts.slots()) consider(v.evidence);
  for (const auto& [f, m] : sub.keyed.slots()) {
    for (const auto& kv : m) consider(kv.second.evidence);
  }
  for (const auto& kv : state.line_findings()) {
    const LineFindingAcc& acc = kv.second;
    bool mine = false, only_mine = true;
    for (int x : acc.subjects) {
      const bool m = state.LiveSubject(x) == s;
      mine |= m;
      only_mine &= m;
    }
    if (!mine) continue;
    for (const Evidence& e : acc.evidence) {
      if (only_mine || std::count(sub.files.begin(), sub.files.end(), e.file)) consider(e);
    }
  }
  return last;
}

std::string Clock(double t) { return t >= 0 ? FormatSecondsOfYear(t) : std::string("(no time)"); }

// died_first's pieces (Checks::DiedFirst below).

// A rank without a timeout of its own, and its sign of life or death.
struct DiedFirstCandidate {
  int rank;
  double time;  // of the sign, -1 if untimed
  bool fatal;   // an error, not only silence
  std::string what;
  Evidence ev;
};

// The ranks whose watchdogs timed out, and what they waited in.
struct TimedOutRanks {
  std::vector<int> ranks;
  std::vector<Evidence> evidence;  // the first two timeouts, cited
  double first_timeout = -1;
  // When the first of them entered the collective: a timeout's time less the
  // time it says it ran for (-1 where no timeout line says both).
  double first_entered = -1;
  std::string op, seq, pg;
};

// The facts that are a fatal sign, in the order a tie is settled: oom,
// first_error, elastic_failed.
using FatalFacts = std::array<int, 3>;

// An error NCCL reported on any rank, and the earliest time of one: a job
// that failed loudly in NCCL is told by that error (FIRST-ERROR and its own
// finding), not by who fell quiet, nor by a later crash.
struct NcclErrorSeen {
  bool any = false;
  double first = -1;
};

NcclErrorSeen NcclErrorOnAnyRank(const JobState& state, int first_error) {
  NcclErrorSeen seen;
  for (int s : state.LiveSubjects()) {
    const FactValue* v = state.subjects()[s].Get(first_error);
    if (!v || !IsNcclSide(*v)) continue;
    seen.any = true;
    const double t = v->evidence.time;
    if (t >= 0 && (seen.first < 0 || t < seen.first)) seen.first = t;
  }
  return seen;
}

void AddTimedOut(const Subject& sub, int timeout_seq, int timeout_op, TimedOutRanks* out) {
  out->ranks.push_back(sub.rank);
  for (const auto& kv : sub.keyed[timeout_seq]) {
    const double t = kv.second.evidence.time;
    if (t >= 0 && (out->first_timeout < 0 || t < out->first_timeout)) out->first_timeout = t;
    long double ran_ms;
    const std::string_view ran = FieldOf(kv.second, TimeoutField::kRanMs);
    if (t >= 0 && !ran.empty() && ParseNumber(ran, false, &ran_ms) && ran_ms >= 0) {
      const double entered = t - static_cast<double>(ran_ms) / 1000;
      if (out->first_entered < 0 || entered < out->first_entered) out->first_entered = entered;
    }
    if (out->seq.empty()) {
      out->seq = kv.second.value;
      out->pg = kv.first;
    }
    if (out->evidence.size() < 2) out->evidence.push_back(kv.second.evidence);
  }
  if (const FactValue* o = sub.Get(timeout_op); o && out->op.empty()) out->op = o->value;
}

// Subject s (a rank with no timeout) as a candidate: its earliest fatal sign,
// else its last sign of life; none if NCCL reported its error or it left no
// timed line.
std::optional<DiedFirstCandidate> CandidateOf(const JobState& state, int s, const FatalFacts& fatal, int exitcode) {
  const Subject& sub = state.subjects()[s];
  DiedFirstCandidate best{sub.rank, -1, false, "", {}};
  bool have = false, nccl_side = false;
  for (int f : fatal) {
    const FactValue* v = sub.Get(f);
    if (!v) continue;
    // An error NCCL reported (a transport or CUDA failure inside a
    // collective) is a rank that took part and failed there: FIRST-ERROR and
    // the error's own finding tell it; it neither died on its own nor went silent.
    if (f == fatal[1] && IsNcclSide(*v)) nccl_side = true;
    if (f == fatal[2]) {
      // The launcher lists every worker it lost: one its watchdog aborted
      // (SIGABRT, -6) or that it terminated itself (SIGTERM, -15) was a victim.
      const FactValue* code = sub.Get(exitcode);
      if (code && (code->value == "-6" || code->value == "-15")) continue;
    }
    // The earliest timed sign wins; an untimed one only when none is timed.
    if (!have || (v->evidence.time >= 0 && (best.time < 0 || v->evidence.time < best.time))) {
      std::string what = v->value;
      if (f == fatal[2]) what = "the launcher reports its process failed (" + what + ")";
      best = DiedFirstCandidate{sub.rank, v->evidence.time, true, what, v->evidence};
      have = true;
    }
  }
  if (nccl_side) return std::nullopt;
  if (!have) {
    const Evidence* last = LastSignOfLife(state, s);
    if (!last) {
      // Lines without a time: the rank's last line, where nothing says it
      // waited (its watchdog fired, its communicator was aborted, it printed
      // its queue, the launcher lost it to its watchdog's abort): silent, but
      // not when.
      const RuleSet& rules = state.rules();
      for (Fact f :
           {Fact::kWatchdogFired, Fact::kCommAbort, Fact::kLastEnqueued, Fact::kCleanEnd, Fact::kElasticFailed}) {
        if (sub.Has(rules.fact(f))) return std::nullopt;
      }
      // Its last line: last_line where the rules keep it, else the latest
      // line of its facts (an NCCL init line) in its last file.
      const Evidence* e = nullptr;
      if (const FactValue* line = sub.Get(rules.fact(Fact::kLastLine))) e = &line->evidence;
      for (const auto& [f, v] : sub.facts.slots()) {
        if (!e || std::make_pair(v.evidence.file, v.evidence.line) > std::make_pair(e->file, e->line)) e = &v.evidence;
      }
      if (!e) return std::nullopt;
      return DiedFirstCandidate{sub.rank, -1, false, e->text, *e};
    }
    best = DiedFirstCandidate{sub.rank, last->time, false, "", *last};
  }
  return best;
}

// The candidates died_first names; none when nobody stopped first.
std::vector<const DiedFirstCandidate*> NameDiedFirst(const std::vector<DiedFirstCandidate>& candidates,
                                                     const NcclErrorSeen& nccl_error, const TimedOutRanks& timed_out) {
  // Keep the signs that precede the first timeout. An untimed fatal sign
  // counts (the rank failed and never waited with the others) but only when no
  // timed one does; print order says nothing about time: a spawner prints a
  // child's traceback when the child exits, after the others' timeouts.
  const double first_timeout = timed_out.first_timeout;
  std::vector<const DiedFirstCandidate*> timed, untimed, quiet;
  for (const DiedFirstCandidate& k : candidates) {
    if (!k.fatal && nccl_error.any) continue;
    if (!k.fatal && k.time < 0) {
      quiet.push_back(&k);
      continue;
    }
    if (k.time >= 0 && nccl_error.first >= 0 && k.time > nccl_error.first) continue;
    if (k.time >= 0 && first_timeout >= 0) {
      if (k.time < first_timeout) timed.push_back(&k);
    } else if (k.fatal) {
      untimed.push_back(&k);  // no order to compare: the sign or the timeouts carry no time
    }
  }
  // No sign with a time, no failure: the ranks that printed lines of their
  // own but never timed out with the others, if they are the few (one rank
  // stopped; when most fell silent their logs end early, not their work).
  if (timed.empty() && untimed.empty() && !quiet.empty() && quiet.size() * 2 < timed_out.ranks.size()) return quiet;
  if (timed.empty()) return untimed;
  // The earliest fatal sign; silence only when no rank failed loudly.
  bool any_fatal = false;
  for (const DiedFirstCandidate* k : timed) any_fatal |= k->fatal;
  const DiedFirstCandidate* first = nullptr;
  for (const DiedFirstCandidate* k : timed) {
    if (any_fatal && !k->fatal) continue;
    if (!first || k->time < first->time) first = k;
  }
  if (any_fatal) return {first};
  // Every rank that went quiet before the timeouts, if they are the few:
  // when most ranks fell silent, their logs end early, not their work.
  if (timed.size() >= timed_out.ranks.size()) return {};
  return timed;
}

// "1 min 50 s", "45 s", "2 h 3 min": a span for a sentence.
std::string Span(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return s % 60 ? fmt::format("{} min {} s", s / 60, s % 60) : fmt::format("{} min", s / 60);
  return fmt::format("{} h {} min", s / 3600, s % 3600 / 60);
}

std::string SaysOf(const DiedFirstCandidate& k, const TimedOutRanks& timed_out) {
  if (k.fatal) {
    return k.time >= 0 ? fmt::format("rank {} failed at {}: {}", k.rank, Clock(k.time), k.what)
                       : fmt::format("rank {} failed: {}", k.rank, k.what);
  }
  if (k.time < 0) {
    return fmt::format("rank {} never timed out itself; its last line (no time on it) was \"{}\"", k.rank, k.what);
  }
  // When it went quiet, against when the others entered the collective they
  // timed out in: before it (it never came), or while they waited.
  std::string when;
  const double entered = timed_out.first_entered;
  const std::string op = timed_out.op.empty() ? "the collective" : timed_out.op;
  if (entered >= 0 && k.time <= entered) {
    when = fmt::format(", {} before the others entered {} ({})", Span(entered - k.time), op, Clock(entered));
  } else if (entered >= 0 && timed_out.first_timeout >= k.time) {
    when = fmt::format(", {} after the others entered {} and {} before their watchdogs fired", Span(k.time - entered),
                       op, Span(timed_out.first_timeout - k.time));
  }
  return fmt::format("rank {} printed nothing after {}{}{} never timed out itself", k.rank, Clock(k.time), when,
                     when.empty() ? " and" : "; it");
}

// The ranks whose watchdogs timed out, and each other rank's died_first
// candidate (CandidateOf): what died_first and arrived_late both weigh.
struct Timeouts {
  TimedOutRanks timed_out;
  std::vector<DiedFirstCandidate> candidates;
  std::vector<int> others;  // the subjects of the ranks that did not time out
};

Timeouts CollectTimeouts(const JobState& state, const FatalFacts& fatal) {
  const RuleSet& rules = state.rules();
  const int timeout_seq = rules.fact(Fact::kTimeoutSeq);
  const int timeout_op = rules.fact(Fact::kTimeoutOp);
  const int exitcode = rules.fact(Fact::kExitcode);
  Timeouts t;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if (sub.rank < 0) continue;
    if (sub.Has(timeout_seq)) {
      AddTimedOut(sub, timeout_seq, timeout_op, &t.timed_out);
      continue;
    }
    t.others.push_back(s);
    if (auto k = CandidateOf(state, s, fatal, exitcode)) t.candidates.push_back(std::move(*k));
  }
  return t;
}

// A timeout check's variables: where the ranks timed out, and what `value` says.
Vars TimeoutVars(const TimedOutRanks& timed_out, std::string value) {
  return Vars{{"group", PgName(timed_out.pg)},
              {"op", timed_out.op.empty() ? "a collective" : timed_out.op},
              {"seq", timed_out.seq.empty() ? "?" : timed_out.seq},
              {"value", std::move(value)},
              {"source", timed_out.first_timeout >= 0 ? " at " + Clock(timed_out.first_timeout) : ""}};
}

}  // namespace

// died_first: the ranks whose watchdogs timed out are victims of a rank that
// was not waiting with them. A rank without a timeout of its own whose last
// sign of life — its fatal error (OOM, exception, segfault, the launcher's
// "process exited"), or else its last timestamped line — comes before the
// first of the others' timeouts stopped taking part first: the culprit. A
// failure after the timeouts is a consequence (the aborts tear the job down),
// and ranks that all timed out together leave nobody to blame.
void Checks::DiedFirst(const CompiledCorrelation& c) const {
  const RuleSet& rules = state.rules();
  if (rules.fact(Fact::kTimeoutSeq) < 0) return;
  // A fatal sign: the first one of these a rank has, by time.
  const FatalFacts fatal = {rules.fact(Fact::kOom), rules.fact(Fact::kFirstError), rules.fact(Fact::kElasticFailed)};
  const NcclErrorSeen nccl_error = NcclErrorOnAnyRank(state, fatal[1]);
  const Timeouts t = CollectTimeouts(state, fatal);
  const TimedOutRanks& timed_out = t.timed_out;
  if (timed_out.ranks.empty() || t.candidates.empty()) return;
  const std::vector<const DiedFirstCandidate*> named = NameDiedFirst(t.candidates, nccl_error, timed_out);
  if (named.empty()) return;

  std::vector<int> suspects;
  std::vector<std::string> says;
  std::vector<Evidence> ev;
  for (const DiedFirstCandidate* k : named) {
    suspects.push_back(k->rank);
    says.push_back(SaysOf(*k, timed_out));
    ev.push_back(k->ev);
  }
  std::sort(suspects.begin(), suspects.end());
  ev.insert(ev.end(), timed_out.evidence.begin(), timed_out.evidence.end());
  Emit(c, suspects, timed_out.ranks, TimeoutVars(timed_out, Join(says, "; ")), "died first", ev);
}

namespace {

// How long after the first watchdog timeout a rank's "the peer is gone" error
// must come to say the rank was not in the collective when the others aborted.
// A rank waiting in it hears of their abort at once, within its watchdog's poll
// (10 s in PyTorch 1.x, 1 s and less since); one that enters later hears of it
// only when it tries to talk to them.
constexpr double kLateMargin = 15;

// Whether a rank's first error says its peers had gone (the socket closed,
// NCCL's remote error), rather than that something failed on its own side. An
// IB completion error is not one: a waiting rank's retries end tens of seconds
// after its peer left.
bool PeerGone(std::string_view error) {
  return error.find("remote process exited") != std::string_view::npos ||
         error.find("Connection closed by remote peer") != std::string_view::npos ||
         error.find("ncclRemoteError") != std::string_view::npos;
}

}  // namespace

// arrived_late: the ranks whose watchdogs timed out waited for a rank that was
// not in the collective. When that rank finally enters it, the others have
// aborted and closed their connections: its first error says the peer is gone,
// and it comes after their timeouts — by more than the moment a rank still
// waiting with them would have heard of the abort. Its error names the ranks
// that left, not a cause; the rank itself is the straggler. Silent when an
// NCCL error preceded the timeouts (that error is the story) or when a rank
// died first (died_first).
void Checks::ArrivedLate(const CompiledCorrelation& c) const {
  const RuleSet& rules = state.rules();
  const int first_error = rules.fact(Fact::kFirstError);
  if (rules.fact(Fact::kTimeoutSeq) < 0 || first_error < 0) return;
  const FatalFacts fatal = {rules.fact(Fact::kOom), first_error, rules.fact(Fact::kElasticFailed)};
  const Timeouts t = CollectTimeouts(state, fatal);
  const TimedOutRanks& timed_out = t.timed_out;
  struct Late {
    int rank;
    double time;
    const FactValue* error;
  };
  std::vector<Late> late;
  for (int s : t.others) {
    const Subject& sub = state.subjects()[s];
    const FactValue* e = sub.Get(first_error);
    if (e && e->evidence.time >= 0 && IsNcclSide(*e) && PeerGone(e->value))
      late.push_back({sub.rank, e->evidence.time, e});
  }
  const double first_timeout = timed_out.first_timeout;
  if (timed_out.ranks.empty() || first_timeout < 0 || late.empty()) return;
  // An NCCL error before the timeouts, or a rank that died first, tells the story.
  const NcclErrorSeen nccl_error = NcclErrorOnAnyRank(state, first_error);
  if (nccl_error.first >= 0 && nccl_error.first < first_timeout) return;
  if (!NameDiedFirst(t.candidates, nccl_error, timed_out).empty()) return;
  late.erase(
      std::remove_if(late.begin(), late.end(), [&](const Late& l) { return l.time < first_timeout + kLateMargin; }),
      late.end());
  if (late.empty() || late.size() > timed_out.ranks.size()) return;

  std::vector<int> suspects;
  std::vector<std::string> says;
  std::vector<Evidence> ev;
  for (const Late& l : late) {
    suspects.push_back(l.rank);
    says.push_back(fmt::format("rank {} reported its first error at {}, {} after the first watchdog timeout: {}",
                               l.rank, Clock(l.time), Span(l.time - first_timeout), l.error->value));
    ev.push_back(l.error->evidence);
  }
  std::sort(suspects.begin(), suspects.end());
  ev.insert(ev.end(), timed_out.evidence.begin(), timed_out.evidence.end());
  Emit(c, suspects, timed_out.ranks, TimeoutVars(timed_out, Join(says, "; ")), "arrived late", ev);
}

// not_started from text: the desync report (TORCH_NCCL_DESYNC_DEBUG) says
// "[R] finished collective #N-1, but didn't join collective #N" — its trace
// records a start when the GPU starts the work — while R's own watchdog status
// says it had enqueued #N or later: R is not behind on the host nor on another
// code path; its stream never started #N. Without R's own status the report
// cannot tell "never enqueued" from "never started" (TORCH-DESYNC-REPORT says
// what it can). Status and desync-report numbers count the same work
// (PyTorch's per-group sequence); the watchdog's WorkNCCL SeqNum may not, so it
// is not compared. The status lines alone cannot tell it either: for
// collectives every rank completes the same work, and "last started" is in
// the Flight Recorder's pg_status only, not in PyTorch's text.
void Checks::NotStartedText(const CompiledCorrelation& c) const {
  const RuleSet& rules = state.rules();
  const int enq_f = rules.fact(Fact::kLastEnqueued);
  const int done_f = rules.fact(Fact::kLastCompleted);
  const int unjoined_f = rules.fact(Fact::kDesyncUnjoined);
  if (enq_f < 0 || done_f < 0) return;
  // pg -> rank -> (enqueued, completed, evidence)
  struct Status {
    int64_t enqueued = -2, completed = -2;
    Evidence ev;
  };
  std::map<std::string, std::map<int, Status>> by_pg;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if (sub.rank < 0) continue;
    if (enq_f < static_cast<int>(sub.keyed.size())) {
      for (const auto& kv : sub.keyed[enq_f]) {
        Status& st = by_pg[kv.first][sub.rank];
        ParseInt(kv.second.value, &st.enqueued);
        st.ev = kv.second.evidence;
      }
    }
    if (done_f < static_cast<int>(sub.keyed.size())) {
      for (const auto& kv : sub.keyed[done_f]) ParseInt(kv.second.value, &by_pg[kv.first][sub.rank].completed);
    }
  }
  std::set<int> told;
  // The op the others wait in, as their watchdogs name it (its SeqNum counts differently).
  std::string op = "the collective the others wait in";
  const int op_f = rules.fact(Fact::kTimeoutOp);
  for (int s : state.LiveSubjects()) {
    if (const FactValue* v = state.subjects()[s].Get(op_f)) {
      op = v->value;
      break;
    }
  }

  // The desync report's "didn't join #N" against the rank's own enqueued work.
  if (unjoined_f >= 0) {
    for (int s : state.LiveSubjects()) {
      const Subject& sub = state.subjects()[s];
      if (unjoined_f >= static_cast<int>(sub.keyed.size())) continue;
      for (const auto& kv : sub.keyed[unjoined_f]) {
        int64_t next;
        if (!ParseInt(kv.first, &next)) continue;
        for (int r : RankList(kv.second.value)) {
          if (told.count(r)) continue;
          // The rank's own status in any group that reached #N: one report covers one group.
          for (const auto& pg : by_pg) {
            auto it = pg.second.find(r);
            if (it == pg.second.end() || it->second.enqueued < next) continue;
            std::vector<int> others;
            for (const auto& o : pg.second) {
              if (o.first != r) others.push_back(o.first);
            }
            Vars vars{{"group", PgName(pg.first)},
                      {"seq", std::to_string(next)},
                      {"op", op},
                      {"source", fmt::format(" (read from text: the desync report says rank {} finished #{} but never "
                                             "joined #{}, and rank {}'s own watchdog status says it had enqueued work "
                                             "up to #{})",
                                             r, next - 1, next, r, it->second.enqueued)}};
            if (others.empty()) vars["reporters"] = "the others";
            Emit(c, {r}, others, vars, PgName(pg.first) + " #" + std::to_string(next),
                 {it->second.ev, kv.second.evidence});
            told.insert(r);
            break;
          }
        }
      }
    }
  }
}

// lone_submitter: a stall report (Horovod's stall inspector) names the ranks
// that have not submitted a tensor. Usually those few are the laggards; when
// they are more than half the world, the ranks that did submit are the odd
// ones: they called a collective the others never call (rank 0 averaging a
// validation metric alone). The world is the job's stated size, else the
// ranks counted from 0 up to the highest one named or present.
void Checks::LoneSubmitter(const CompiledCorrelation& c) const {
  const int f = state.rules().fact(Fact::kStallMissing);
  if (f < 0) return;
  int world = WorldSize();
  const std::set<int> present = PresentRanks();
  if (!present.empty()) world = std::max(world, *present.rbegin() + 1);
  std::map<std::string, std::pair<std::set<int>, Evidence>> by_tensor;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if (f >= static_cast<int>(sub.keyed.size())) continue;
    for (const auto& kv : sub.keyed[f]) {
      auto& t = by_tensor[kv.first];
      for (int r : RankList(kv.second.value)) {
        t.first.insert(r);
        world = std::max(world, r + 1);
      }
      if (t.second.text.empty()) t.second = kv.second.evidence;
    }
  }
  std::set<int> suspects, missing;
  std::vector<Evidence> ev;
  std::string op;
  for (const auto& [tensor, t] : by_tensor) {
    if (t.first.size() * 2 <= static_cast<size_t>(world)) continue;
    for (int r = 0; r < world; ++r) {
      if (!t.first.count(r)) suspects.insert(r);
    }
    missing.insert(t.first.begin(), t.first.end());
    if (op.empty()) op = "tensor " + tensor;
    if (ev.size() < kMaxEvidencePerFinding) ev.push_back(t.second);
  }
  if (suspects.empty()) return;
  const std::vector<int> who(suspects.begin(), suspects.end());
  Vars vars{{"missing", CompactRanks(std::vector<int>(missing.begin(), missing.end()))},
            {"nranks", std::to_string(world)},
            {"op", op}};
  Emit(c, who, std::vector<int>(missing.begin(), missing.end()), vars, "stall", ev);
}

}  // namespace ncclscan
