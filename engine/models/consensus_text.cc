// Consensus checks read from the ranks' text alone (engine/models/consensus_checks.h):
//   died_first      the rank that crashed, ran out of memory or went silent
//                   before the others' watchdogs timed out;
//   not_started     (text part) a rank that enqueued the collective the others
//                   wait in but whose GPU stream never started it: the desync
//                   report's "didn't join collective #N" and the rank's own
//                   "last enqueued work" status line.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

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

bool Int(const std::string& s, int64_t* out) {
  std::string_view v = s;
  return ConsumeInt(&v, out) && v.empty();
}

// first_error says what failed (rules/*.yaml): the process's own failures are
// those PyTorch raises (torch.yaml, catalog_torch.yaml, the catch-all's
// "PyTorch error …"); every other value is an error NCCL or its transport
// reported, "… inside NCCL" included. (OOM, wherever reported, is also `oom`.)
bool IsNcclSide(const FactValue& v) {
  if (v.value.find("inside NCCL") != std::string::npos) return true;
  static const char* kProcess[] = {"PyTorch error", "CUDA out of memory", "CUDA error: ", "device-side assert",
                                   "assertion failed in "};
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
  const int timeout_seq = rules.fact(Fact::kTimeoutSeq);
  const int timeout_op = rules.fact(Fact::kTimeoutOp);
  if (timeout_seq < 0) return;
  // A fatal sign: the first one of these a rank has, by time.
  const int kFatal[] = {rules.fact(Fact::kOom), rules.fact(Fact::kFirstError), rules.fact(Fact::kElasticFailed)};

  const int exitcode = rules.fact(Fact::kExitcode);
  std::vector<int> victims;
  std::vector<Evidence> victim_ev;
  double first_timeout = -1;
  std::string op, seq, pg;
  struct Candidate {
    int rank;
    double time;  // of the sign, -1 if untimed
    bool fatal;   // an error, not only silence
    std::string what;
    Evidence ev;
  };
  std::vector<Candidate> candidates;
  // An error NCCL reported on any rank, and the earliest time of one: a job
  // that failed loudly in NCCL is told by that error (FIRST-ERROR and its own
  // finding), not by who fell quiet, nor by a later crash.
  bool nccl_error = false;
  double first_nccl_error = -1;
  for (int s : state.LiveSubjects()) {
    const FactValue* v = state.subjects()[s].Get(kFatal[1]);
    if (!v || !IsNcclSide(*v)) continue;
    nccl_error = true;
    const double t = v->evidence.time;
    if (t >= 0 && (first_nccl_error < 0 || t < first_nccl_error)) first_nccl_error = t;
  }
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if (sub.rank < 0) continue;
    if (sub.Has(timeout_seq)) {
      victims.push_back(sub.rank);
      for (const auto& kv : sub.keyed[timeout_seq]) {
        const double t = kv.second.evidence.time;
        if (t >= 0 && (first_timeout < 0 || t < first_timeout)) first_timeout = t;
        if (seq.empty()) {
          seq = kv.second.value;
          pg = kv.first;
        }
        if (victim_ev.size() < 2) victim_ev.push_back(kv.second.evidence);
      }
      if (const FactValue* o = sub.Get(timeout_op); o && op.empty()) op = o->value;
      continue;
    }
    Candidate best{sub.rank, -1, false, "", {}};
    bool have = false, nccl_side = false;
    for (int f : kFatal) {
      const FactValue* v = sub.Get(f);
      if (!v) continue;
      // An error NCCL reported (a transport or CUDA failure inside a
      // collective) is a rank that took part and failed there: FIRST-ERROR and
      // the error's own finding tell it; it neither died on its own nor went silent.
      if (f == kFatal[1] && IsNcclSide(*v)) nccl_side = true;
      if (f == kFatal[2]) {
        // The launcher lists every worker it lost: one its watchdog aborted
        // (SIGABRT, -6) or that it terminated itself (SIGTERM, -15) was a victim.
        const FactValue* code = sub.Get(exitcode);
        if (code && (code->value == "-6" || code->value == "-15")) continue;
      }
      // The earliest timed sign wins; an untimed one only when none is timed.
      if (!have || (v->evidence.time >= 0 && (best.time < 0 || v->evidence.time < best.time))) {
        std::string what = v->value;
        if (f == kFatal[2]) what = "the launcher reports its process failed (" + what + ")";
        best = Candidate{sub.rank, v->evidence.time, true, what, v->evidence};
        have = true;
      }
    }
    if (nccl_side) continue;
    if (!have) {
      const Evidence* last = LastSignOfLife(state, s);
      if (!last) continue;
      best = Candidate{sub.rank, last->time, false, "", *last};
    }
    candidates.push_back(std::move(best));
  }
  if (victims.empty() || candidates.empty()) return;

  // Keep the signs that precede the first timeout. An untimed fatal sign
  // counts (the rank failed and never waited with the others) but only when no
  // timed one does; print order says nothing about time: a spawner prints a
  // child's traceback when the child exits, after the others' timeouts.
  std::vector<const Candidate*> timed, untimed;
  for (const Candidate& k : candidates) {
    if (!k.fatal && nccl_error) continue;
    if (k.time >= 0 && first_nccl_error >= 0 && k.time > first_nccl_error) continue;
    if (k.time >= 0 && first_timeout >= 0) {
      if (k.time < first_timeout) timed.push_back(&k);
    } else if (k.fatal) {
      untimed.push_back(&k);  // no order to compare: the sign or the timeouts carry no time
    }
  }
  std::vector<const Candidate*> named;
  if (!timed.empty()) {
    // The earliest fatal sign; silence only when no rank failed loudly.
    bool any_fatal = false;
    for (const Candidate* k : timed) any_fatal |= k->fatal;
    const Candidate* first = nullptr;
    for (const Candidate* k : timed) {
      if (any_fatal && !k->fatal) continue;
      if (!first || k->time < first->time) first = k;
    }
    named.push_back(first);
    if (!any_fatal) {
      // Every rank that went quiet before the timeouts, if they are the few:
      // when most ranks fell silent, their logs end early, not their work.
      if (timed.size() >= victims.size()) return;
      named = timed;
    }
  } else {
    named = untimed;
  }
  if (named.empty()) return;

  std::vector<int> suspects;
  std::vector<std::string> says;
  std::vector<Evidence> ev;
  for (const Candidate* k : named) {
    suspects.push_back(k->rank);
    if (k->fatal) {
      says.push_back(k->time >= 0 ? fmt::format("rank {} failed at {}: {}", k->rank, Clock(k->time), k->what)
                                  : fmt::format("rank {} failed: {}", k->rank, k->what));
    } else {
      says.push_back(
          fmt::format("rank {} printed nothing after {} and never timed out itself", k->rank, Clock(k->time)));
    }
    ev.push_back(k->ev);
  }
  std::sort(suspects.begin(), suspects.end());
  ev.insert(ev.end(), victim_ev.begin(), victim_ev.end());
  const std::string group = PgName(pg);
  Vars vars{{"group", group},
            {"op", op.empty() ? "a collective" : op},
            {"seq", seq.empty() ? "?" : seq},
            {"value", Join(says, "; ")},
            {"source", first_timeout >= 0 ? " at " + Clock(first_timeout) : ""}};
  Emit(c, suspects, victims, vars, "died first", ev);
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
        Int(kv.second.value, &st.enqueued);
        st.ev = kv.second.evidence;
      }
    }
    if (done_f < static_cast<int>(sub.keyed.size())) {
      for (const auto& kv : sub.keyed[done_f]) Int(kv.second.value, &by_pg[kv.first][sub.rank].completed);
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
        if (!Int(kv.first, &next)) continue;
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
