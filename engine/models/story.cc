#include "engine/models/story.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <set>

#include "engine/models/consensus_checks.h"
#include "engine/models/diagnosis.h"

namespace ncclscan {

namespace {

struct StageFacts {
  Stage stage;
  std::initializer_list<Fact> facts;
};

// The facts (rules/facts.yaml) whose presence proves a stage was reached.
constexpr StageFacts kStageFacts[] = {
    {Stage::kBanner, {Fact::kNcclVersion, Fact::kCudaDriver}},
    {Stage::kBootstrap,
     {Fact::kBootstrapIf, Fact::kSocketIf, Fact::kNetwork, Fact::kNetPlugin, Fact::kIbDevices, Fact::kIbMissing}},
    {Stage::kInitStart, {Fact::kInitStart}},
    {Stage::kTopology, {Fact::kCollChannels, Fact::kAlgoProto, Fact::kNvls}},
    {Stage::kConnect,
     {Fact::kIntraTransport, Fact::kInterTransport, Fact::kP2pChannels, Fact::kShmChannels, Fact::kGdr}},
    {Stage::kInitComplete, {Fact::kInitComplete}},
    {Stage::kCollectives,
     {Fact::kLastOpcount, Fact::kP2pLast, Fact::kTimeoutSeq, Fact::kLastEnqueued, Fact::kLastCompleted}},
};

// A process's own failure: it errored, crashed, aborted or exited; or its
// launcher stopped it because another worker had failed.
constexpr Fact kAbnormalFacts[] = {Fact::kFirstError, Fact::kCrash,         Fact::kCommAbort,     Fact::kExitcode,
                                   Fact::kOom,        Fact::kElasticFailed, Fact::kWorkersStopped};

const Evidence* Later(const Evidence* a, const Evidence* b) {
  if (!a) return b;
  if (!b) return a;
  if (a->time >= 0 && b->time >= 0 && a->time != b->time) return a->time < b->time ? b : a;
  if (a->file != b->file) return a->file < b->file ? b : a;
  return a->line < b->line ? b : a;
}

// The latest evidence of fact `f` on subject `sub`, keyed or not.
const Evidence* LatestOf(const Subject& sub, int f) {
  const Evidence* e = nullptr;
  if (const FactValue* v = sub.Get(f)) e = &v->evidence;
  if (const auto* m = sub.keyed.Find(f)) {
    for (const auto& kv : *m) e = Later(e, &kv.second.evidence);
  }
  return e;
}

}  // namespace

const char* StageName(Stage s) {
  switch (s) {
    case Stage::kNone:
      return "no NCCL line";
    case Stage::kBanner:
      return "the version banner";
    case Stage::kBootstrap:
      return "bootstrap (network interfaces chosen)";
    case Stage::kInitStart:
      return "communicator init started";
    case Stage::kTopology:
      return "topology and graph search";
    case Stage::kConnect:
      return "transport connects between peers";
    case Stage::kInitComplete:
      return "Init COMPLETE";
    case Stage::kCollectives:
      return "collectives";
  }
  return "?";
}

const char* NextAfter(Stage s) {
  switch (s) {
    case Stage::kNone:
    case Stage::kBanner:
      return "the bootstrap interface (\"Bootstrap : Using …\") and \"ncclCommInitRank … Init START\"";
    case Stage::kBootstrap:
      return "\"ncclCommInitRank … Init START\" once every rank has reached the bootstrap root";
    case Stage::kInitStart:
      return "the topology (\"Trees\", \"Channel 00/02 : 0 1 …\") once all ranks exchanged their info";
    case Stage::kTopology:
      return "the transport connects (\"Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\" or \"via NET/…\")";
    case Stage::kConnect:
      return "\"Connected all rings\" / \"Connected all trees\" and \"Init COMPLETE\"";
    case Stage::kInitComplete:
      return "the first collective (nccl-tests: its results table)";
    case Stage::kCollectives:
      return "more collectives, then teardown";
  }
  return "?";
}

const char* CausesAt(Stage s) {
  switch (s) {
    case Stage::kNone:
    case Stage::kBanner:
    case Stage::kBootstrap:
      return "the ranks cannot reach the bootstrap root (MASTER_ADDR/port unreachable, a firewall, a service-mesh "
             "sidecar intercepting the port, the wrong interface picked), or some ranks were never started";
    case Stage::kInitStart:
      return "a rank that never joined the communicator (not started, crashed before init, a different world "
             "size or unique id), or peers that cannot connect to each other on the bootstrap interface";
    case Stage::kTopology:
      return "topology detection or graph search stuck or failing on one node (sysfs/PCI paths in a container, "
             "an NCCL_TOPO_FILE that does not fit)";
    case Stage::kConnect:
      return "a transport that cannot move data: P2P between GPUs blocked by PCIe ACS or the IOMMU, an IB/RoCE "
             "setting that differs between hosts (GID index, RoCE version, MTU), a too small /dev/shm for SHM";
    case Stage::kInitComplete:
      return "a first collective that cannot complete (P2P over PCIe blocked by ACS or the IOMMU, a network path "
             "that connects but carries no data) or a rank that never issued it";
    case Stage::kCollectives:
      return "one rank stopped issuing collectives";
  }
  return "?";
}

const char* TestAt(Stage s) {
  switch (s) {
    case Stage::kNone:
    case Stage::kBanner:
    case Stage::kBootstrap:
      return "check from each node that MASTER_ADDR:MASTER_PORT (or the NCCL bootstrap address) is reachable "
             "(nc -zv), pin NCCL_SOCKET_IFNAME to the routable interface, and check that every rank was started";
    case Stage::kInitStart:
      return "compare the ranks and nranks every process printed: the rank missing from the Init START lines is "
             "the one to look at";
    case Stage::kTopology:
      return "run with NCCL_DEBUG_SUBSYS=INIT,GRAPH and compare the nodes' topology (NCCL_TOPO_DUMP_FILE)";
    case Stage::kConnect:
      return "rerun with NCCL_P2P_DISABLE=1 (then NCCL_SHM_DISABLE=1, NCCL_IB_DISABLE=1) one at a time: the "
             "setting that unblocks it names the transport; run nccl-tests between the same GPUs or hosts";
    case Stage::kInitComplete:
      return "rerun with NCCL_P2P_DISABLE=1, then NCCL_SHM_DISABLE=1 / NCCL_IB_DISABLE=1: the setting that "
             "unblocks it names the transport; py-spy dump every rank: one not inside an NCCL call is the culprit";
    case Stage::kCollectives:
      return "compare the last opCount / SeqNum of every rank";
  }
  return "?";
}

namespace {

// The live subjects inside a communicator's init: one whose init completed on
// no rank (a second communicator after a first one completed, say), or on
// fewer ranks than it has. Its members are inside init, as far as the logs
// show, whatever their earlier communicators reached.
std::set<int> InOpenInit(const JobState& state) {
  std::set<int> in_open_init;
  for (const auto& kv : state.comms()) {
    const CommInfo& ci = kv.second;
    const bool open = (!ci.ranks_started.empty() && ci.ranks_completed.empty()) ||
                      (ci.nranks > 0 && static_cast<int>(ci.ranks_completed.size()) < ci.nranks);
    if (open && ci.ranks_aborted.empty()) {
      for (int s : ci.subjects) in_open_init.insert(state.LiveSubject(s));
    }
  }
  return in_open_init;
}

// nccl-tests print their results table right after init: with the banner and
// no result, a process past Init COMPLETE is still in its first collective.
void NcclTestsShown(const JobState& state, bool* nccltests, bool* results) {
  const int banner = state.rules().fact(Fact::kNccltestsRank);
  const int result = state.rules().fact(Fact::kNccltestsResult);
  for (int s : state.LiveSubjects()) {
    *nccltests |= banner >= 0 && state.subjects()[s].Has(banner);
    *results |= result >= 0 && state.subjects()[s].Has(result);
  }
}

}  // namespace

StoryFacts ResolveStoryFacts(const RuleSet& rules) {
  StoryFacts out;
  for (const StageFacts& sf : kStageFacts) {
    for (Fact name : sf.facts) {
      const int f = rules.fact(name);
      if (f >= 0) out.stages.emplace_back(sf.stage, f);
    }
  }
  for (Fact name : kAbnormalFacts) {
    const int f = rules.fact(name);
    if (f >= 0) out.abnormal.push_back(f);
  }
  return out;
}

StoryPoint StoryOf(const JobState& state, const StoryFacts& facts, int s) {
  const Subject& sub = state.subjects()[s];
  StoryPoint p;
  for (const auto& [stage, f] : facts.stages) {
    const Evidence* e = LatestOf(sub, f);
    if (!e) continue;
    p.last = Later(p.last, e);
    if (stage >= p.stage) {
      p.stage = stage;
      p.proof = e;
    }
  }
  for (int f : facts.abnormal) p.abnormal |= sub.Has(f);
  return p;
}

std::vector<int> ProgressFacts(const RuleSet& rules) {
  std::vector<int> out;
  // nccl-tests' rank banner is printed before init: with no result after it, the
  // test shows no progress either (two separate jobs that each printed a banner).
  // A stall report (Horovod's stall inspector) shows where the run stood, as a timeout does.
  for (Fact f : {Fact::kCleanEnd, Fact::kTimeoutSeq, Fact::kStallMissing, Fact::kStoreWait, Fact::kNccltestsResult}) {
    if (rules.fact(f) >= 0) out.push_back(rules.fact(f));
  }
  return out;
}

bool AnyLineAtLeast(const JobState& state, Severity severity) {
  for (const auto& kv : state.line_findings()) {
    const int r = kv.second.rule;
    if (r >= 0 && state.rules().rules()[r].spec.finding.severity >= severity) return true;
  }
  return false;
}

// stopped: every process's story ends inside NCCL init, with no error of its
// own, no Init COMPLETE and no collective anywhere: the run did not finish,
// and the stage they stopped at is where a hang would be. A process that
// stopped at an earlier stage than most others is named in the text.
void Checks::Stopped(const CompiledCorrelation& c) const {
  if (!state.flight_recorders().empty()) return;
  const std::set<int> in_open_init = InOpenInit(state);
  bool nccltests = false, results = false;
  NcclTestsShown(state, &nccltests, &results);
  if (results) return;
  const StoryFacts facts = ResolveStoryFacts(state.rules());
  std::vector<std::pair<int, StoryPoint>> stories;
  for (int s : state.LiveSubjects()) {
    StoryPoint p = StoryOf(state, facts, s);
    if (p.abnormal || p.stage == Stage::kCollectives) return;
    if (p.stage == Stage::kInitComplete && !nccltests) {
      if (!in_open_init.count(s)) return;
      p.stage = Stage::kInitStart;  // of the communicator still open
    }
    if (p.stage != Stage::kNone) stories.emplace_back(s, p);
  }
  if (stories.empty()) return;
  // Lines that name no process (a bare "NCCL version …" banner) are no
  // process's story: where processes are named, they neither count nor lag.
  auto anonymous = [&](const std::pair<int, StoryPoint>& sp) {
    const Subject& sub = state.subjects()[sp.first];
    return sub.rank < 0 && sub.pid < 0;
  };
  if (!std::all_of(stories.begin(), stories.end(), anonymous))
    stories.erase(std::remove_if(stories.begin(), stories.end(), anonymous), stories.end());
  Stage low = Stage::kCollectives, high = Stage::kNone;
  for (const auto& [s, p] : stories) {
    low = std::min(low, p.stage);
    high = std::max(high, p.stage);
  }
  std::vector<std::string> behind_names;
  int at_low = 0;
  for (const auto& [s, p] : stories) at_low += p.stage == low;
  std::vector<Evidence> ev;
  // The lines that prove each process's furthest stage, the laggards first.
  for (const auto& [s, p] : stories) {
    if (p.stage != low || low == high) continue;
    const Subject& sub = state.subjects()[s];
    behind_names.push_back(sub.rank >= 0 ? "rank " + std::to_string(sub.rank)
                                         : sub.host + ":" + std::to_string(sub.pid));
    if (p.proof) ev.push_back(*p.proof);
  }
  for (const auto& [s, p] : stories) {
    if (p.last && !(p.stage == low && low != high)) ev.push_back(*p.last);
  }
  // A laggard is a suspect only when it is the odd one out.
  const bool odd = low != high && at_low * 2 < static_cast<int>(stories.size());
  std::string where = odd ? fmt::format(" {} stopped earlier, at {}, while the others reached {}.", Join(behind_names),
                                        StageName(low), StageName(high))
                          : "";
  Vars vars{{"stage", StageName(odd ? high : low)},        {"next", NextAfter(odd ? high : low)},
            {"causes", CausesAt(odd ? low : high)},        {"test", TestAt(odd ? low : high)},
            {"processes", std::to_string(stories.size())}, {"behind", where}};
  // Named in the text, not as suspects: posted excerpts end at different
  // lines on different ranks as often as hung ranks do.
  Emit(c, {}, {}, vars, "run", ev);
}

// stopped_collectives: every process that reached a stage got to its
// collectives, none failed on its own or timed out, and none shows the end of
// its run (clean_end): the logs stop in the collectives. Either the excerpt
// ends there or the run hung there. When every process's last collective is
// its first (opCount 0), the text says so: a first collective that never
// completes is where hangs are most common.
void Checks::StoppedInCollectives(const CompiledCorrelation& c) const {
  if (!state.flight_recorders().empty()) return;
  const RuleSet& rules = state.rules();
  const int end = rules.fact(Fact::kCleanEnd), timeout = rules.fact(Fact::kTimeoutSeq);
  const int result = rules.fact(Fact::kNccltestsResult);
  const int opcount = rules.fact(Fact::kLastOpcount), p2p = rules.fact(Fact::kP2pLast);
  const StoryFacts facts = ResolveStoryFacts(rules);
  const std::set<int> in_open_init = InOpenInit(state);
  bool nccltests = false, any_results = false;
  NcclTestsShown(state, &nccltests, &any_results);
  int processes = 0;
  bool first_only = true, collectives = false;
  std::vector<Evidence> ev;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if ((end >= 0 && sub.Has(end)) || (timeout >= 0 && sub.Has(timeout))) return;
    const StoryPoint p = StoryOf(state, facts, s);
    if (p.abnormal) return;
    const bool results = result >= 0 && sub.Has(result);
    // Past Init COMPLETE with no collective traced (most runs trace none):
    // in its collectives or done, the logs cannot say which. Not a process
    // still inside another communicator's init, nor nccl-tests before its
    // first result (both are RUN-STOPPED-IN-INIT's).
    const bool after_init = p.stage == Stage::kInitComplete && !in_open_init.count(s) && !nccltests;
    if (p.stage != Stage::kCollectives && !results && !after_init) continue;
    collectives |= p.stage == Stage::kCollectives || results;
    ++processes;
    if (p.last && ev.size() < kMaxEvidencePerFinding) ev.push_back(*p.last);
    // The opCounts it issued (COLL trace): any beyond the first?
    bool traced = false;
    for (int f : {opcount, p2p}) {
      if (f < 0 || f >= static_cast<int>(sub.keyed.size())) continue;
      for (const auto& kv : sub.keyed[f]) {
        long double v;
        traced = true;
        if (!ParseNumber(kv.second.value, rules.facts()[f].hex, &v) || v != 0) first_only = false;
      }
    }
    if (!traced || results) first_only = false;
  }
  if (processes == 0) return;
  // No collective in the logs at all: the run stopped after init or in its
  // first collectives, as far as they show.
  if (!collectives) first_only = true;
  std::string first;
  if (!collectives) {
    first =
        " No collective shows after init (only a COLL trace, NCCL_DEBUG_SUBSYS=COLL, or a watchdog timeout "
        "names them).";
  } else if (first_only) {
    first = " Every process's last collective is its first (opCount 0): the run stopped in its first collective.";
  }
  Vars vars{{"processes", std::to_string(processes)},
            {"reached", collectives ? "reach NCCL collectives" : "complete NCCL communicator init"},
            {"first", first},
            {"causes", CausesAt(first_only ? Stage::kInitComplete : Stage::kCollectives)},
            {"test", TestAt(first_only ? Stage::kInitComplete : Stage::kCollectives)}};
  Emit(c, {}, {}, vars, "run", ev);
}

// no_progress: lines were recognised (PyTorch, NCCL, a launcher) or matched (a
// framework's banner, kernel or inventory tools), yet no process shows a stage
// of its run, an error of its own, a timeout or its end: a log of warnings and
// launcher lines says nothing about whether the run worked, so the verdict is
// "incomplete", never "ok" (DESIGN §10: healthy needs evidence).
void Checks::NoProgress(const CompiledCorrelation& c) const {
  if (!state.flight_recorders().empty()) return;
  const RuleSet& rules = state.rules();
  const StoryFacts facts = ResolveStoryFacts(rules);
  const std::vector<int> ends = ProgressFacts(rules);
  // An error line shows how the run ended, whoever printed it ("Test NCCL failure").
  if (AnyLineAtLeast(state, Severity::kError)) return;
  // (A warning of context role, a corrected PCIe error say, sets no verdict:
  // it does not speak for the run either.)
  Severity worst_line = Severity::kInfo;
  for (const auto& kv : state.line_findings()) {
    if (kv.second.rule < 0) continue;
    const FindingSpec& f = rules.rules()[kv.second.rule].spec.finding;
    if (f.role != Role::kContext || f.severity >= Severity::kError) worst_line = std::max(worst_line, f.severity);
  }
  const int last_line = rules.fact(Fact::kLastLine);
  // A communicator's Abort COMPLETE alone is no end the verdict can read:
  // PyTorch aborts its communicators after an error or a timeout, and (2.2+)
  // at an ordinary shutdown too. Several ranks aborting their communicators
  // is that shutdown, when no error is read (corpus aws-k8s-tester-454:
  // 5 of 32 ranks in the excerpt); one rank alone is what a rank does after its
  // own error (corpus qwen-vl-121 without its timeout line read "ok").
  const int abort = rules.fact(Fact::kCommAbort);
  // (Abort lines carry no commId: each process's communicator is its own
  // record, so the ranks are counted across the job.)
  int aborted = 0;
  for (int s : state.LiveSubjects()) aborted += abort >= 0 && state.subjects()[s].Has(abort);
  const bool shutdown = aborted >= 2;
  auto abnormal_beyond_abort = [&](const Subject& sub) {
    for (int f : facts.abnormal) {
      if (sub.Has(f) && (f != abort || shutdown)) return true;
    }
    return false;
  };
  int processes = 0;
  std::vector<Evidence> ev;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    const StoryPoint p = StoryOf(state, facts, s);
    if (HasAnyFact(sub, ends) || abnormal_beyond_abort(sub) || p.stage != Stage::kNone) return;
    processes += sub.rank >= 0 || sub.pid >= 0;
    // What each rank printed last, where the scan knows it.
    const FactValue* last = last_line >= 0 ? sub.Get(last_line) : nullptr;
    if (last && ev.size() < kMaxEvidencePerFinding) ev.push_back(last->evidence);
  }
  const Counters& counters = state.counters();
  // Nothing recognised or matched: "unknown", said elsewhere. nccl-tests' banner counts as read.
  bool nccltests = false, results = false;
  NcclTestsShown(state, &nccltests, &results);
  // Only lines of other programs matched (a framework's banner, kernel or
  // inventory tools): they say nothing of the run's progress unless one of
  // them is a warning of its own (a stall report with no rank to hold it).
  // Output behind a global rank prefix ("[rank1]:", a Horovod or MPI tag) is
  // the job's own, whatever it says: those ranks ran, so their logs show a
  // run that began, not one that cannot be read.
  const size_t ranked = state.Ranks().size();
  if (counters.recognised_lines() == 0 && !nccltests && ranked == 0 &&
      (counters.matched_lines == 0 || worst_line >= Severity::kWarning))
    return;
  // What was read, by family ("3 PyTorch and 12 NCCL lines").
  std::vector<std::string> read;
  const std::pair<Family, const char*> kNames[] = {
      {Family::kNccl, "NCCL"}, {Family::kTorch, "PyTorch"}, {Family::kElastic, "launcher"}};
  for (const auto& [family, name] : kNames) {
    const uint64_t n = counters.family_lines[static_cast<int>(family)];
    if (n > 0) read.push_back(fmt::format("{} {}", n, name));
  }
  const bool nccl = counters.family_lines[static_cast<int>(Family::kNccl)] > 0;
  if (nccltests) read.push_back("nccl-tests banner");
  Vars vars{{"processes", std::to_string(processes)},
            {"lines", read.empty() && counters.matched_lines == 0
                          ? fmt::format("{} line(s) of {} rank(s)' own output (behind their rank prefixes), none of it "
                                        "NCCL, PyTorch or launcher output",
                                        counters.lines, ranked)
                      : read.empty() ? fmt::format("{} line(s) the rules read, none of them NCCL, PyTorch or launcher "
                                                   "output (a framework's banner, kernel or inventory tools)",
                                                   counters.matched_lines)
                                     : Join(read) + " line(s) of distributed-training output"},
            {"init", nccl ? "no NCCL line that marks a stage of communicator init (Init START or COMPLETE, the "
                            "transports, the channels)"
                          : "no NCCL communicator init (NCCL_DEBUG=INFO prints it)"}};
  Emit(c, {}, {}, vars, "run", ev);
}

namespace {

// A line, or a finding of the checks before, at warning or above: something
// the logs say that may be the cause, which the story's last words (an end
// nobody explains, an end on some ranks only) leave in the lead.
bool AnyWarning(const JobState& state, const std::vector<Finding>& found) {
  return AnyLineAtLeast(state, Severity::kWarning) ||
         std::any_of(found.begin(), found.end(), [](const Finding& f) { return f.severity >= Severity::kWarning; });
}

}  // namespace

// ended_abnormally: the logs show that the run ended abnormally — torchrun's
// failure table or a worker's exit code, a crash or an OOM of a process's own,
// a launcher stopping a node's remaining workers — yet no line at warning or
// above says why and no check named a cause. A log whose error line was of a
// form no rule knows leaves exactly this: the verdict is a failure whose cause
// is not in what was read, never "ok" (DESIGN §10). One process ending so is
// named; several are listed.
void Checks::EndedAbnormally(const CompiledCorrelation& c) const {
  // A warning of its own (an NCCL WARN, a configuration the run could not
  // use) may be the cause: it stays the headline.
  if (AnyWarning(state, *out)) return;
  const RuleSet& rules = state.rules();
  struct Sign {
    Fact fact;
    const char* what;
  };
  static constexpr Sign kSigns[] = {
      {Fact::kCrash, "a crash"},
      {Fact::kOom, "out of memory"},
      {Fact::kElasticFailed, "a row of torchrun's failure table"},
      {Fact::kExitcode, "exit code"},
      {Fact::kFirstError, "an error"},
      {Fact::kWorkersStopped, "stopped the remaining workers"},
  };
  std::set<int> ranks;
  std::vector<std::string> how;
  std::vector<Evidence> ev;
  int processes = 0;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    std::vector<std::string> signs;
    for (const Sign& sign : kSigns) {
      const int f = rules.fact(sign.fact);
      const FactValue* v = f >= 0 ? sub.Get(f) : nullptr;
      if (!v) continue;
      signs.push_back(v->value.empty() ? sign.what : fmt::format("{} ({})", sign.what, v->value));
      if (ev.size() < kMaxEvidencePerFinding) ev.push_back(v->evidence);
    }
    if (signs.empty()) continue;
    ++processes;
    // The launcher's own lines (no rank) stop workers; a rank's show how it ended.
    if (sub.rank >= 0) ranks.insert(sub.rank);
    const std::string who = sub.rank >= 0  ? "rank " + std::to_string(sub.rank)
                            : sub.pid >= 0 ? sub.label
                                           : std::string("the launcher");
    if (how.size() < 4) how.push_back(who + ": " + Join(signs, ", "));
  }
  if (processes == 0) return;
  if (processes > static_cast<int>(how.size())) how.push_back(fmt::format("{} more", processes - how.size()));
  const std::vector<int> named(ranks.begin(), ranks.end());
  // One rank that ended so is the one to look at; of several, none is chosen.
  Emit(c, named.size() == 1 ? named : std::vector<int>{}, named.size() == 1 ? std::vector<int>{} : named,
       Vars{{"processes", std::to_string(processes)}, {"how", Join(how, "; ")}}, "run", ev);
}

// ended_partly: some ranks show the end of their own program (clean_end: the
// warning PyTorch prints at exit, a communicator's Destroy COMPLETE) while
// other ranks do not: ranks that printed lines but no end, and ranks below
// the highest one seen that printed nothing. Nothing shows the whole job's
// end (job_end), no process failed, timed out or ended abnormally, and no
// line or finding is a warning: either the others' logs were cut, or they
// never got there (waiting in a collective the finished ranks skipped, or in
// work of their own). The verdict is "incomplete", never "ok" (DESIGN §10).
void Checks::EndedPartly(const CompiledCorrelation& c) const {
  if (!state.flight_recorders().empty() || AnyWarning(state, *out)) return;
  const RuleSet& rules = state.rules();
  const int end = rules.fact(Fact::kCleanEnd), job_end = rules.fact(Fact::kJobEnd);
  const int timeout = rules.fact(Fact::kTimeoutSeq), last_line = rules.fact(Fact::kLastLine);
  if (end < 0) return;
  const StoryFacts facts = ResolveStoryFacts(rules);
  std::map<int, const Evidence*> ended, open;  // rank -> its end line, or its last line
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if ((job_end >= 0 && sub.Has(job_end)) || (timeout >= 0 && sub.Has(timeout))) return;
    const StoryPoint p = StoryOf(state, facts, s);
    if (p.abnormal) return;
    if (sub.rank < 0) continue;
    if (const FactValue* e = sub.Get(end)) {
      ended[sub.rank] = &e->evidence;
    } else if (!open.count(sub.rank)) {
      const FactValue* last = last_line >= 0 ? sub.Get(last_line) : nullptr;
      open[sub.rank] = last ? &last->evidence : p.last;
    }
  }
  if (ended.empty()) return;
  for (const auto& [rank, e] : ended) open.erase(rank);  // another file of it shows its end
  const int top = std::max(ended.rbegin()->first, open.empty() ? 0 : open.rbegin()->first);
  std::vector<int> ended_ranks, open_ranks, silent;
  for (int r = 0; r <= top; ++r) {
    if (ended.count(r)) {
      ended_ranks.push_back(r);
    } else if (open.count(r)) {
      open_ranks.push_back(r);
    } else {
      silent.push_back(r);
    }
  }
  if (open_ranks.empty() && silent.empty()) return;
  std::vector<Evidence> ev;
  for (const auto& [rank, e] : open) {
    if (e && ev.size() < 2) ev.push_back(*e);
  }
  for (const auto& [rank, e] : ended) {
    if (e && ev.size() < kMaxEvidencePerFinding) ev.push_back(*e);
  }
  std::vector<std::string> others;
  if (!open_ranks.empty())
    others.push_back(fmt::format("rank(s) {} printed lines but no end", CompactRanks(open_ranks)));
  if (!silent.empty()) others.push_back(fmt::format("rank(s) {} printed nothing", CompactRanks(silent)));
  Emit(c, {}, {}, Vars{{"ended", CompactRanks(ended_ranks)}, {"others", Join(others, "; ")}}, "run", ev);
}

}  // namespace ncclscan
