// The checks by elimination (engine/models/consensus_checks.h): who is absent.
// never_joined and missing_dump name the ranks of a known world that left no
// trace (no log line, no Flight Recorder dump); rank_zero_alone, where no world
// size is printed, names rank 0 when it alone is known to exist and is silent.
#include <fmt/format.h>

#include <algorithm>

#include "engine/models/consensus_checks.h"
#include "engine/models/diagnosis.h"
#include "engine/models/story.h"
#include "parsers/text_util.h"

namespace ncclscan {

// World size the job itself states: NCCL communicators' nranks (the largest:
// the world communicator), PyTorch's default process-group size, pg_config, a
// launcher's task count, or torchrun's processes a node times the nodes (one
// node where none is stated: torchrun's default).
int Checks::WorldSize() const {
  int n = 0;
  for (const auto& kv : state.comms()) n = std::max(n, kv.second.nranks);
  auto largest = [&](Fact fact) {
    const int id = state.rules().fact(fact);
    int most = 0;
    for (int s : state.LiveSubjects()) {
      const FactValue* v = id >= 0 ? state.subjects()[s].Get(id) : nullptr;
      long double x;
      if (v && ParseNumber(v->value, false, &x) && x > 0 && x < kMaxRanks) most = std::max(most, static_cast<int>(x));
    }
    return most;
  };
  n = std::max(n, largest(Fact::kWorldSize));
  if (const int per_node = largest(Fact::kNprocPerNode); per_node > 0) {
    const int64_t launched = int64_t{per_node} * std::max(1, largest(Fact::kNodes));
    if (launched < kMaxRanks) n = std::max(n, static_cast<int>(launched));
  }
  if (!m.configured_ranks().empty()) n = std::max(n, *m.configured_ranks().rbegin() + 1);
  return n;
}

std::set<int> Checks::PresentRanks() const {
  std::set<int> r = state.Ranks();
  r.insert(m.dump_ranks().begin(), m.dump_ranks().end());
  return r;
}

const FactValue* Checks::StartedLine(int rank) const {
  const int fact = state.rules().fact(Fact::kRankStarted);
  if (fact < 0) return nullptr;
  const std::string key = std::to_string(rank);
  for (const Subject& sub : state.subjects()) {
    if (fact >= static_cast<int>(sub.keyed.size())) continue;
    auto it = sub.keyed[fact].find(key);
    if (it != sub.keyed[fact].end()) return &it->second;
  }
  return nullptr;
}

// What the text logs say about a rank: its first error (exception, OOM, NCCL WARN).
std::string Checks::TextSays(int rank, std::vector<Evidence>* ev) const {
  const int first_error = state.rules().fact(Fact::kFirstError);
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if (sub.rank != rank) continue;
    if (const FactValue* v = sub.Get(first_error)) {
      if (ev) ev->push_back(v->evidence);
      return v->value;
    }
  }
  return "";
}

// Where the ranks waited: a collective (its SeqNum), or the c10d store.
std::string WhereWaited(const Checks::Waiting& w) {
  if (!w.op.empty() || w.store.empty())
    return (w.op.empty() ? "a collective" : w.op) + " (SeqNum " + (w.seq.empty() ? "?" : w.seq) + ")";
  return "the c10d store for " + w.store;
}

Checks::Waiting Checks::CollectWaiting(StoreWaits which) const {
  const int timeout_seq = state.rules().fact(Fact::kTimeoutSeq);
  const int timeout_op = state.rules().fact(Fact::kTimeoutOp);
  const int first_error = state.rules().fact(Fact::kFirstError);
  const int store_wait = state.rules().fact(Fact::kStoreWait);
  Waiting w;
  bool first_only = true;                           // every collective a rank timed out in is SeqNum 1
  std::map<std::string, std::string> seq_of_group;  // pg -> the first SeqNum a rank timed out in
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    const FactValue* store = which != StoreWaits::kNone && store_wait >= 0 ? sub.Get(store_wait) : nullptr;
    if (store && (FieldOf(*store, StoreField::kAwaits) == "every rank") != (which == StoreWaits::kForEveryRank))
      store = nullptr;
    // An error of its own (not the store wait's own line, as a store timeout
    // is both) is a failure, not a wait: a rank that hit an NCCL error inside
    // main_process_first failed there.
    const FactValue* err = first_error >= 0 ? sub.Get(first_error) : nullptr;
    if (err && store && (err->evidence.file != store->evidence.file || err->evidence.line != store->evidence.line))
      store = nullptr;
    if (err && !store) w.own_failure = true;
    if (sub.rank < 0) {
      if (store && which == StoreWaits::kForRankZero && !sub.Has(timeout_seq)) {
        if (w.unranked++ == 0) w.unranked_evidence = store->evidence;
        if (w.store.empty()) w.store = store->value;
      }
      continue;
    }
    if (store && !sub.Has(timeout_seq)) {
      w.ranks.push_back(sub.rank);
      if (w.store.empty()) w.store = store->value;
      if (w.evidence.size() < 3) w.evidence.push_back(store->evidence);
      continue;
    }
    if (!sub.Has(timeout_seq)) continue;
    w.ranks.push_back(sub.rank);
    for (const auto& kv : sub.keyed[timeout_seq]) {
      first_only &= kv.second.value == "1";
      auto [at, fresh] = seq_of_group.emplace(kv.first, kv.second.value);
      if (!fresh && at->second != kv.second.value) w.split = true;
      if (w.seq.empty()) w.seq = kv.second.value;
      if (w.evidence.size() < 3) w.evidence.push_back(kv.second.evidence);
    }
    if (const FactValue* o = sub.Get(timeout_op); o && w.op.empty()) w.op = o->value;
  }
  w.in_first_collective = first_only && !w.seq.empty() && w.store.empty();
  return w;
}

int Checks::InferredWorld(const std::set<int>& present) const { return present.empty() ? 0 : *present.rbegin() + 1; }

// The size of the group a waiting rank's collective ran in, where its
// watchdog line gives the element counts (PyTorch 2.2+: "NumelIn=…,
// NumelOut=…"): an all-gather's output holds every member's input, a
// reduce-scatter's input every member's output. 0 where no line says.
int Checks::GroupSizeByNumel(const Waiting& w) const {
  const int size_fact = state.rules().fact(Fact::kWorkSize);
  if (size_fact < 0 || w.op.empty()) return 0;
  // (PyTorch prints OpType in capitals: ALLGATHER, _REDUCE_SCATTER_BASE, …)
  const bool gather = w.op.find("ALLGATHER") != std::string::npos;
  if (!gather && w.op.find("REDUCE_SCATTER") == std::string::npos) return 0;
  const std::string key = w.op + " #" + w.seq;  // work_size's key (a cut line's has a suffix)
  const std::set<int> waiting(w.ranks.begin(), w.ranks.end());
  int size = 0;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if (!waiting.count(sub.rank) || size_fact >= static_cast<int>(sub.keyed.size())) continue;
    auto it = sub.keyed[size_fact].find(key);
    if (it == sub.keyed[size_fact].end()) continue;
    const std::string_view v = it->second.value;  // "NumelIn/NumelOut"
    const size_t slash = v.find('/');
    long double in, out;
    if (slash == std::string_view::npos || !ParseNumber(v.substr(0, slash), false, &in) ||
        !ParseNumber(v.substr(slash + 1), false, &out) || in <= 0 || out <= 0)
      continue;
    const long double n = gather ? out / in : in / out;
    if (n >= 2 && n < kMaxRanks && n == static_cast<long double>(static_cast<int64_t>(n)))
      size = std::max(size, static_cast<int>(n));
  }
  return size;
}

std::vector<int> Checks::NeverJoinedRanks(const Waiting& w, const std::set<int>& present, int* world,
                                          bool* inferred) const {
  *world = WorldSize();
  *inferred = *world == 0 && !present.empty();
  // No world size printed anywhere: ranks are numbered from 0, so every rank
  // below the highest that reported exists; and as many as the collective's
  // element counts say take part in it (the rank above the highest reporter
  // is then named too). Either is a lower bound, so elimination keeps the
  // guards of an inferred world.
  if (*inferred) *world = std::max(InferredWorld(present), GroupSizeByNumel(w));
  std::vector<int> missing;
  for (int r = 0; r < *world; ++r) {
    if (!present.count(r)) missing.push_back(r);
  }
  if (!*inferred) return missing;
  // Ranks that timed out in different collectives of one group did not all
  // wait for the absent, and with no world size stated the absent rank may
  // only be cut from the excerpt: the rank behind is WATCHDOG-SEQ-SPLIT's.
  if (w.split) return {};
  // The first collective of a process group also brings its NCCL communicator
  // up (PyTorch creates it lazily there): every reporter timing out in it
  // cannot tell a rank that never came from a communicator that never came up
  // (a transport or network setup that hangs). Without a stated world size,
  // elimination names nobody there.
  if (w.in_first_collective) return {};
  // Only by elimination among many reporters: one rank's log alone says
  // nothing about the others. Where rank 0 is among several silent ranks,
  // rank_zero_alone names it alone.
  if (missing.size() >= w.ranks.size() || (missing.size() > 1 && missing.front() == 0)) return {};
  return missing;
}

// never_joined: the world size is known, ranks wait in a collective (the
// watchdog fired), and some ranks of the world left no trace in any input.
Checks::Overfull Checks::StoreBarrierOverfull() const {
  Overfull o;
  const int store_wait = state.rules().fact(Fact::kStoreWait);
  if (store_wait < 0) return o;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    const FactValue* v = sub.Get(store_wait);
    long double world, joined;
    if (!v || !ParseNumber(FieldOf(*v, StoreField::kWorld), false, &world) ||
        !ParseNumber(FieldOf(*v, StoreField::kJoined), false, &joined) || world < 1 || joined <= world) {
      continue;
    }
    o.world = std::max<int64_t>(o.world, static_cast<int64_t>(world));
    o.joined = std::max<int64_t>(o.joined, static_cast<int64_t>(joined));
    if (sub.rank >= world) o.beyond.push_back(sub.rank);
    if (o.evidence.size() < 3) o.evidence.push_back(v->evidence);
  }
  std::sort(o.beyond.begin(), o.beyond.end());
  return o;
}

// store_overfull: init_process_group's store barrier counts every process that
// checks in under its key; more than the world size ("world_size=2,
// worker_count=3") means a process the world does not count checked in: one
// started too many (a spawn or launcher off by one, a restarted rank still
// alive), or a second job on the same MASTER_ADDR:MASTER_PORT. The barrier then
// never completes as it should. A waiting rank at or beyond the world size is
// that extra process; elimination (never_joined) has nothing to count.
void Checks::StoreOverfull(const CompiledCorrelation& c) const {
  const Overfull o = StoreBarrierOverfull();
  if (o.evidence.empty()) return;
  std::string value = fmt::format("{} workers checked in, the world has {}", o.joined, o.world);
  if (!o.beyond.empty()) {
    value += fmt::format("; rank(s) {}, waiting there, lie outside ranks 0-{}", CompactRanks(o.beyond), o.world - 1);
  }
  Vars vars{{"value", value}, {"nranks", std::to_string(o.world)}};
  Emit(c, o.beyond, {}, vars, "store overfull", o.evidence);
}

void Checks::NeverJoined(const CompiledCorrelation& c) const {
  // With dumps, a rank without one is missing_dump's finding (it says more).
  if (!m.dump_ranks().empty()) return;
  // More workers than the world checked in: the world is miscounted, nobody is missing.
  if (!StoreBarrierOverfull().evidence.empty()) return;
  const Waiting w = CollectWaiting(StoreWaits::kForEveryRank);
  // A rank of the input that failed on its own is the better suspect.
  if (w.own_failure || w.ranks.empty()) return;
  const std::set<int> present = PresentRanks();
  int world;
  bool inferred;
  const std::vector<int> missing = NeverJoinedRanks(w, present, &world, &inferred);
  if (missing.empty()) return;
  std::string source = " (its own logs say so)";
  if (inferred && world > InferredWorld(present)) {
    source = fmt::format(" at least (no world size is printed, but the element counts of {} say {} ranks take part)",
                         WhereWaited(w), world);
  } else if (inferred) {
    source = fmt::format(" at least (no world size is printed, but ranks count from 0 and rank {} reported)",
                         *present.rbegin());
  }
  // A missing rank whose start a shared line printed ("GLOBAL_RANK: 3") began
  // and stopped: its start line is the first evidence, not the reporters'.
  std::vector<int> started;
  std::vector<Evidence> ev;
  for (int r : missing) {
    if (const FactValue* v = StartedLine(r)) {
      started.push_back(r);
      ev.push_back(v->evidence);
    }
  }
  ev.insert(ev.end(), w.evidence.begin(), w.evidence.end());
  std::string trace = "left no trace in any input";
  if (started.size() == missing.size()) {
    trace = "printed their start and nothing after it";
  } else if (!started.empty()) {
    trace = fmt::format("left no trace in any input but the start of rank(s) {}", CompactRanks(started));
  }
  Vars vars{{"source", source},
            {"group", "pg 0"},
            {"op", WhereWaited(w)},
            {"seq", w.seq},
            {"missing", CompactRanks(missing)},
            {"nranks", std::to_string(world)},
            {"reporters", CompactRanks(w.ranks)},
            {"trace", trace}};
  Emit(c, missing, w.ranks, vars, "world", ev);
}

namespace {

// Calls visit(rank, evidence, first) for every start line the live subjects
// keep (fact rank_started: first is true; rank_started_last), subject by
// subject in key order; rank is -1 where the key is no rank below `world`.
template <typename Visit>
void ForEachStartLine(const JobState& state, int world, Visit visit) {
  const int first = state.rules().fact(Fact::kRankStarted), last = state.rules().fact(Fact::kRankStartedLast);
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    for (int f : {first, last}) {
      if (f < 0 || f >= static_cast<int>(sub.keyed.size())) continue;
      for (const auto& kv : sub.keyed[f]) {
        long double r;
        const bool in_world = ParseNumber(kv.first, false, &r) && r >= 0 && r < world;
        visit(in_world ? static_cast<int>(r) : -1, kv.second.evidence, f == first);
      }
    }
  }
}

}  // namespace

// never_started: the world size is stated, ranks printed their start
// (rank_started: a start line that names its rank, Lightning's "GLOBAL_RANK:
// r, MEMBER: m/n", printed just before init_process_group) and the logs stop
// there: every file that holds a start line ends with one, and no process
// shows a later stage, a wait, an error or an end. The ranks of the world that
// printed nothing at all never started (a launch that started one node's
// processes only) or never reached the rendezvous the others wait in:
// init_process_group returns on no rank until every rank has joined.
void Checks::NeverStarted(const CompiledCorrelation& c) const {
  if (!state.flight_recorders().empty()) return;
  const RuleSet& rules = state.rules();
  const int world = WorldSize();
  if (rules.fact(Fact::kRankStarted) < 0 || world <= 0) return;
  // An error line, whoever printed it, is the better lead.
  if (AnyLineAtLeast(state, Severity::kError)) return;
  const std::vector<int> ends = ProgressFacts(rules);
  const StoryFacts facts = ResolveStoryFacts(rules);
  for (int s : state.LiveSubjects()) {
    const StoryPoint p = StoryOf(state, facts, s);
    if (HasAnyFact(state.subjects()[s], ends) || p.abnormal || p.stage > Stage::kBootstrap) return;
  }
  // Each rank's first and last start line (a rank started twice in one file
  // prints a later one).
  std::set<int> started = PresentRanks();
  std::map<int, int64_t> last_start;  // file -> line of its last start line
  std::vector<Evidence> ev;
  bool outside = false;  // a start line names a rank outside the stated world
  ForEachStartLine(state, world, [&](int rank, const Evidence& e, bool first) {
    outside |= rank < 0;
    started.insert(rank);
    int64_t& at = last_start.try_emplace(e.file, 0).first->second;
    at = std::max(at, e.line);
    if (first && ev.size() < kMaxEvidencePerFinding) ev.push_back(e);
  });
  if (outside || last_start.empty()) return;
  // The logs stop at the start lines: at most one (blank) line follows the
  // last of them in each file that holds one.
  for (const auto& [file, line] : last_start) {
    if (file < 0 || file >= static_cast<int>(state.files().size()) ||
        static_cast<int64_t>(state.files()[file].lines) > line + 1)
      return;
  }
  std::vector<int> missing, present;
  for (int r = 0; r < world; ++r) (started.count(r) ? present : missing).push_back(r);
  if (missing.empty() || present.empty()) return;
  Vars vars{{"nranks", std::to_string(world)},
            {"reporters", CompactRanks(present)},
            {"missing", CompactRanks(missing)},
            {"op", "init_process_group's rendezvous"}};
  Emit(c, missing, present, vars, "world", ev);
}

// started_twice: one log prints the start of one global rank at two lines
// (the first and last start line each subject keeps of that rank), and ranks
// of the stated world never start: two processes claim the same rank, so the
// ranks nobody claimed never exist and the rendezvous cannot complete. A
// launcher and a framework that disagree on who starts the processes do this
// (Slurm's task count against the GPUs a node, a framework that does not see
// Slurm, two nodes with one node rank). The two lines must lie in one run of
// start lines; and a restart prints every rank's start again, the whole
// world, so no rank is missing there: both stay silent.
void Checks::StartedTwice(const CompiledCorrelation& c) const {
  const RuleSet& rules = state.rules();
  const int world = WorldSize();
  if (rules.fact(Fact::kRankStarted) < 0 || rules.fact(Fact::kRankStartedLast) < 0 || world <= 0) return;
  std::map<int, std::vector<const Evidence*>> lines;  // rank -> its start lines kept
  ForEachStartLine(state, world, [&](int rank, const Evidence& e, bool) {
    if (rank >= 0) lines[rank].push_back(&e);
  });
  // Two claimants start together: their start lines form one run of start
  // lines. A second attempt or a restart pasted into the same log prints
  // other lines between (a banner, the first attempt's run, a launcher's).
  std::set<std::pair<int, int64_t>> start_lines;
  for (const auto& [rank, at] : lines) {
    for (const Evidence* e : at) start_lines.emplace(e->file, e->line);
  }
  auto one_run = [&](const Evidence& a, const Evidence& b) {
    const int64_t lo = std::min(a.line, b.line), hi = std::max(a.line, b.line);
    auto from = start_lines.upper_bound({a.file, lo});
    auto to = start_lines.lower_bound({a.file, hi});
    return std::distance(from, to) == hi - lo - 1;
  };
  std::vector<int> twice, missing;
  std::vector<Evidence> ev;
  for (const auto& [rank, at] : lines) {
    bool found = false;
    for (size_t i = 0; i < at.size() && !found; ++i) {
      for (size_t j = i + 1; j < at.size() && !found; ++j) {
        if (at[i]->file != at[j]->file || at[i]->line == at[j]->line || !one_run(*at[i], *at[j])) continue;
        found = true;
        twice.push_back(rank);
        for (const Evidence* e : {at[i], at[j]}) {
          if (ev.size() < kMaxEvidencePerFinding) ev.push_back(*e);
        }
      }
    }
  }
  for (int r = 0; r < world; ++r) {
    if (!lines.count(r)) missing.push_back(r);
  }
  if (twice.empty() || missing.empty()) return;
  Vars vars{{"nranks", std::to_string(world)}, {"missing", CompactRanks(missing)}};
  Emit(c, twice, {}, vars, "world", ev);
}

// rank_zero_alone: ranks of the default group timed out in a collective and
// rank 0 did not: it left no trace where elimination (never_joined) does not
// name it, or its own lines (its last_line among them) show no timeout, error
// or end. Rank 0 is not like the others: it is where the work only one
// process does runs — dataset preparation in a main-process-first section,
// evaluation, checkpoint saving, logging — while the others wait for it in
// the next collective.
void Checks::RankZeroAlone(const CompiledCorrelation& c) const {
  if (!m.dump_ranks().empty()) return;
  Waiting w = CollectWaiting(StoreWaits::kForRankZero);
  if (w.own_failure || (w.ranks.empty() && w.unranked == 0)) return;
  if (std::count(w.ranks.begin(), w.ranks.end(), 0)) return;
  // A sub-group's collective: whether rank 0 is a member is not known. The
  // group is the watchdog line's, else its status lines' (PyTorch 2.2+).
  for (const std::string& pg : WaitingGroups(w)) {
    if (pg != "0") return;
  }
  const std::set<int> present = PresentRanks();
  std::string what;
  std::vector<Evidence> ev = w.evidence;
  if (present.count(0)) {
    // Rank 0 printed, but nothing of a collective it waited in, an error or
    // the end of its run: it was busy elsewhere, and its last line says with what.
    const Subject* zero = nullptr;
    for (int s : state.LiveSubjects()) {
      if (state.subjects()[s].rank == 0) zero = &state.subjects()[s];
    }
    if (!zero) return;
    // (PyTorch prints last enqueued / completed work only when its watchdog fires.)
    for (Fact f : {Fact::kTimeoutSeq, Fact::kTimeoutOp, Fact::kLastEnqueued, Fact::kLastCompleted, Fact::kCrash,
                   Fact::kOom, Fact::kCleanEnd, Fact::kCommAbort, Fact::kElasticFailed, Fact::kStoreWait,
                   Fact::kFirstError, Fact::kWatchdogFired}) {
      if (zero->Has(state.rules().fact(f))) return;
    }
    const FactValue* last = zero->Get(state.rules().fact(Fact::kLastLine));
    if (!last) return;
    what = fmt::format("printed no timeout of its own; its last line was \"{}\"", last->value);
    ev.insert(ev.begin(), last->evidence);
  } else {
    // Where elimination names rank 0 (with the others missing from a stated
    // world, or alone below many reporters), never_joined speaks: a stronger
    // reason than rank 0's role. It counts the waits every rank must join,
    // not those for rank 0's key (its ncclUniqueId): with only those, this
    // check speaks.
    const Waiting every = CollectWaiting(StoreWaits::kForEveryRank);
    int world;
    bool inferred;
    if (!every.own_failure && !every.ranks.empty() && !NeverJoinedRanks(every, present, &world, &inferred).empty())
      return;
    what = "left no trace in any input (no line of its own)";
  }
  // Waiters that print no rank are named by what they are.
  std::string reporters = w.ranks.empty() ? "" : "Rank(s) " + CompactRanks(w.ranks);
  if (w.unranked > 0) {
    if (ev.size() < kMaxEvidencePerFinding) ev.push_back(w.unranked_evidence);
    reporters += reporters.empty() ? "Processes that print no rank" : " and processes that print no rank";
  }
  Vars vars{{"op", WhereWaited(w)}, {"reporters", reporters}, {"value", what}};
  Emit(c, {0}, w.ranks, vars, "rank 0", ev);
}

std::set<std::string> Checks::WaitingGroups(const Waiting& w) const {
  std::set<std::string> groups;
  const std::set<int> waiting(w.ranks.begin(), w.ranks.end());
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if (!waiting.count(sub.rank)) continue;
    for (Fact f : {Fact::kTimeoutSeq, Fact::kLastEnqueued, Fact::kLastCompleted}) {
      const int id = state.rules().fact(f);
      if (id < 0 || id >= static_cast<int>(sub.keyed.size())) continue;
      for (const auto& kv : sub.keyed[id]) {
        if (!kv.first.empty()) groups.insert(kv.first);
      }
    }
  }
  return groups;
}

// missing_dump: pg_config lists ranks that wrote no dump while others did.
void Checks::MissingDump(const CompiledCorrelation& c) const {
  if (m.dump_ranks().empty()) return;
  // A rank whose file is there but unreadable (truncated, foreign) did dump:
  // that is an input problem (status partial), not evidence against the rank.
  std::set<int> unreadable;
  for (const auto& fi : state.files()) {
    if (!fi.error.empty()) {
      int r = RankFromDumpName(fi.path);
      if (r >= 0) unreadable.insert(r);
    }
  }
  std::vector<int> missing;
  for (int r : m.configured_ranks()) {
    if (!m.dump_ranks().count(r) && !unreadable.count(r)) missing.push_back(r);
  }
  if (missing.empty()) return;
  std::vector<Evidence> ev;
  std::string says;
  for (int r : missing) {
    std::string t = TextSays(r, &ev);
    if (!t.empty()) says += fmt::format(" The text log of rank {} says: {}.", r, t);
  }
  std::vector<int> dumped(m.dump_ranks().begin(), m.dump_ranks().end());
  for (const auto& kv : m.groups()) {
    for (const auto& rv : kv.second.ranks) {
      if (ev.size() < kMaxEvidencePerFinding && !rv.second.evidence.text.empty()) ev.push_back(rv.second.evidence);
      break;
    }
    break;
  }
  Vars vars{
      {"missing", CompactRanks(missing)}, {"nranks", std::to_string(m.configured_ranks().size())}, {"value", says}};
  Emit(c, missing, dumped, vars, "dumps", ev);
}

}  // namespace ncclscan
