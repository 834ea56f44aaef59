#include "engine/models/diagnosis.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <map>
#include <set>

#include "engine/models/correlate.h"
#include "engine/models/known_issues.h"

namespace ncclscan {

void AppendFindingVar(const Finding& f, const Vars& vars, const std::string& name, std::string* out) {
  if (name == "ranks") {
    out->append(SubjectsText(f));
  } else if (name == "hosts") {
    out->append(HostsText(f));
  } else if (name == "count") {
    out->append(std::to_string(f.count));
  } else {
    auto it = vars.find(name);
    if (it != vars.end()) out->append(it->second);
  }
}

Finding FindingOf(const std::string& id, std::optional<CorrelationKind> kind, Category category,
                  const std::string& title, const FindingSpec& spec, const std::vector<std::string>& references) {
  Finding f;
  f.rule_id = id;
  f.kind = kind;
  f.category = category;
  f.severity = spec.severity;
  f.confidence = spec.confidence;
  f.role = spec.role;
  f.title = title;
  f.references = references;
  f.owner = spec.has_owner ? spec.owner : DefaultOwner(category);
  f.performance_only = spec.performance_only;
  f.stops_with_error = spec.stops_with_error;
  return f;
}

void FillSubjects(const JobState& state, const std::vector<int>& subjects, Finding* f) {
  std::set<int> ranks;
  std::set<std::string> hosts, others, files;
  for (int i : subjects) {
    const Subject& s = state.subjects()[i];
    if (s.rank >= 0)
      ranks.insert(s.rank);
    else if (s.pid >= 0)
      others.insert(s.label);
    else if (s.label.empty() || s.label != s.host)       // a node itself (subject: host) is named by its host alone
      files.insert(s.label.empty() ? s.host : s.label);  // lines with no process or rank
    if (!s.host.empty()) hosts.insert(s.host);
  }
  // A file name adds nothing next to known ranks (headerless continuation lines
  // such as PyTorch's "Last error:" copy of an NCCL warning land there).
  if (ranks.empty() && others.empty()) others = files;
  f->ranks.assign(ranks.begin(), ranks.end());
  f->hosts.assign(hosts.begin(), hosts.end());
  f->others.assign(others.begin(), others.end());
}

std::string SubjectsText(const Finding& f) {
  std::string out = CompactRanks(f.ranks);
  for (const auto& o : f.others) {
    if (!out.empty()) out += ", ";
    out += o;
  }
  return out.empty() ? "?" : out;
}

std::string HostsText(const Finding& f) {
  std::string out;
  for (const auto& h : f.hosts) {
    if (!out.empty()) out += ",";
    out += h;
  }
  return out.empty() ? "?" : out;
}

std::string WhoText(const std::vector<int>& ranks, const std::vector<std::string>& others,
                    const std::vector<std::string>& hosts) {
  std::string out;
  if (!ranks.empty()) {
    const std::string list = CompactRanks(ranks);
    if (ranks.size() == 1)
      out = "rank " + list;
    else
      out = list.size() <= 24 ? "ranks " + list : fmt::format("{} ranks", ranks.size());
  }
  if (!others.empty()) {
    if (others.size() <= 2) {
      // A stream subject is named by its file: its base name is enough here.
      for (const auto& o : others) out += (out.empty() ? "" : ", ") + o.substr(o.rfind('/') + 1);
    } else {
      // host:pid subjects are processes; the others, the unprefixed lines of a file.
      const size_t files = static_cast<size_t>(
          std::count_if(others.begin(), others.end(), [](const std::string& o) { return o.find('/') != o.npos; }));
      if (others.size() > files) out += fmt::format("{}{} processes", out.empty() ? "" : ", ", others.size() - files);
      if (files) out += fmt::format("{}{} log files", out.empty() ? "" : ", ", files);
    }
  }
  if (!hosts.empty()) {
    std::string h;
    if (hosts.size() <= 2) {
      for (const auto& x : hosts) h += (h.empty() ? "" : ",") + x;
    } else {
      h = fmt::format("{} hosts", hosts.size());
    }
    out += (out.empty() ? "" : " on ") + h;
  }
  return out;
}

std::string HeadlineWho(const Finding& p) {
  // The finding's own subjects are its suspects (a root cause's printers).
  if (!p.suspect_ranks.empty() || !p.suspect_hosts.empty()) {
    if (p.suspect_ranks == p.ranks && p.suspect_hosts == p.hosts) return WhoText(p.ranks, p.others, p.hosts);
    return WhoText(p.suspect_ranks, {}, p.suspect_hosts);
  }
  // Only subjects without rank or host (a file's unprefixed lines): nothing
  // tells a victim's report from a cause there; named as they are.
  const std::string who = WhoText(p.ranks, p.others, p.hosts);
  if (p.ranks.empty() && p.hosts.empty()) return who;
  // A victim's report: who reported it, never as if they were the culprit.
  return "reported by " + who;
}

namespace {

uint64_t Fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Captures with these names also fill the structured fields of a finding.
void FillWhere(const std::map<std::string, std::string>& vars, Finding* f) {
  auto get = [&](std::initializer_list<const char*> names) -> std::string {
    for (const char* n : names) {
      auto it = vars.find(n);
      if (it != vars.end() && !it->second.empty()) return it->second;
    }
    return "";
  };
  f->communicator = get({"commid", "comm"});
  f->process_group = get({"pg"});
  f->op_type = get({"op", "optype"});
  f->sequence = get({"seq", "seqnum"});
}

// Whether the job runs on one node: it says so, or it says nothing and every
// rank of the job is in the logs, all on one host (a complete picture, not an
// excerpt of one host's lines): the ranks of its largest communicator, or of
// nccl-tests' device map ("#  Rank  1 Group  0 Pid … on host device …"),
// which lists every rank of the run.
bool OneNode(const JobState& state) {
  const int64_t stated = state.StatedNodes();
  if (stated > 0) return stated == 1;
  int world = 0;
  for (const auto& kv : state.comms()) world = std::max(world, kv.second.nranks);
  const int map_fact = state.rules().fact(Fact::kNccltestsRank);
  std::set<int> ranks;
  std::set<std::string> hosts;
  bool device_map = false;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if (map_fact >= 0 && sub.Has(map_fact)) device_map = true;
    if (sub.rank < 0) continue;
    ranks.insert(sub.rank);
    if (!sub.host.empty()) hosts.insert(sub.host);
  }
  if (world == 0 && device_map) world = static_cast<int>(ranks.size());
  if (world < 2 || ranks.empty()) return false;
  return hosts.size() == 1 && static_cast<int>(ranks.size()) == world && *ranks.rbegin() == world - 1;
}

void LineFindings(const JobState& state, std::vector<Finding>* out) {
  const RuleSet& rules = state.rules();
  // On a job of one node a launcher's "local_rank N" is global rank N.
  const bool one_node = OneNode(state);
  for (const auto& kv : state.line_findings()) {
    const LineFindingAcc& acc = kv.second;
    const CompiledRule& r = rules.rules()[acc.rule];
    Finding f =
        FindingOf(r.spec.id.value, std::nullopt, r.spec.category, r.spec.title, r.spec.finding, r.spec.references);
    f.evidence = acc.evidence;
    f.count = acc.count;
    f.group = acc.group;
    f.first = acc.first;
    f.last = acc.last;
    f.result = acc.result;
    FillSubjects(state, std::vector<int>(acc.subjects.begin(), acc.subjects.end()), &f);
    if (one_node && f.ranks.empty() && acc.count == 1) {
      auto lr = acc.vars.find("local_rank");
      int64_t rank;
      if (lr != acc.vars.end() && ParseInt(lr->second, &rank) && rank < kMaxRanks) f.ranks = {static_cast<int>(rank)};
    }
    f.suspects = r.spec.finding.suspects;
    if (f.suspects == FindingSpec::Suspects::kFirst) {
      Finding first;
      if (acc.first_subject >= 0) FillSubjects(state, {acc.first_subject}, &first);
      f.first_ranks = acc.first_subject >= 0 ? first.ranks : f.ranks;
      f.first_hosts = acc.first_subject >= 0 ? first.hosts : f.hosts;
    }
    FillWhere(acc.vars, &f);
    auto lookup = [&](const std::string& name, std::string* o) { AppendFindingVar(f, acc.vars, name, o); };
    f.explanation = r.explanation.Render(lookup);
    f.remediation = r.remediation.Render(lookup);
    if (one_node && r.spec.finding.multi_node_only) {
      // Nothing crosses a node here: what it says cannot be what went wrong.
      f.severity = Severity::kInfo;
      f.role = Role::kContext;
      f.explanation +=
          " The job runs on one node (it says so, or every rank of it is on one host), so this has no effect here.";
    }
    out->push_back(std::move(f));
  }
}

int RoleOrder(Role r) { return r == Role::kRoot ? 0 : (r == Role::kContext ? 1 : 2); }

// A context finding below error (a benign line, a fact beside the general
// rule's finding) is background: it neither leads the report nor sets the
// status (DESIGN §10), and it is listed after what does. A context error
// still counts: an error is not benign.
bool SetsVerdict(const Finding& f) { return f.role != Role::kContext || f.severity >= Severity::kError; }

}  // namespace

bool RanksBefore(const Finding& a, const Finding& b) {
  bool ca = a.role == Role::kCascade, cb = b.role == Role::kCascade;
  if (ca != cb) return cb;
  if (SetsVerdict(a) != SetsVerdict(b)) return SetsVerdict(a);
  if (a.severity != b.severity) return a.severity > b.severity;
  // The collective-consensus model names a culprit (engine/models/consensus.h): at
  // equal severity it goes before the findings of those who reported, and after
  // what says why that culprit stopped.
  auto tier = [](const Finding& f) { return f.why_culprit ? 0 : f.kind == CorrelationKind::kCollective ? 1 : 2; };
  if (tier(a) != tier(b)) return tier(a) < tier(b);
  if (RoleOrder(a.role) != RoleOrder(b.role)) return RoleOrder(a.role) < RoleOrder(b.role);
  if (a.confidence != b.confidence) return a.confidence > b.confidence;
  if (a.rule_id != b.rule_id) return a.rule_id < b.rule_id;
  return a.fingerprint < b.fingerprint;
}

int PrimaryOf(const std::vector<Finding>& ranked) {
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (ranked[i].severity >= Severity::kWarning && SetsVerdict(ranked[i])) return static_cast<int>(i);
  }
  return -1;
}

namespace {

// The key fields of a finding without what differs between reruns of one
// incident: the job's host names, IP addresses, ports, pointers and pids.
std::string NormaliseKey(std::string key, const std::set<std::string>& hosts) {
  static const RE2 kIpv4(R"(\b\d{1,3}(?:\.\d{1,3}){3}\b)");
  static const RE2 kIpv6(R"((?i)\b[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}(?:%[\w.-]+)?)");
  static const RE2 kHex(R"((?i)\b0x[0-9a-f]+\b)");
  static const RE2 kPort(R"(<\d+>)");
  static const RE2 kHostPid(R"(\b[\w.-]+:\d+:\d+\b)");
  for (const auto& h : hosts) {
    if (h.size() < 2) continue;
    for (size_t p = key.find(h); p != std::string::npos; p = key.find(h, p + 6)) key.replace(p, h.size(), "<host>");
  }
  RE2::GlobalReplace(&key, kHostPid, "<proc>");
  RE2::GlobalReplace(&key, kIpv4, "<ip>");
  RE2::GlobalReplace(&key, kIpv6, "<ip>");
  RE2::GlobalReplace(&key, kHex, "<hex>");
  RE2::GlobalReplace(&key, kPort, "<port>");
  return key;
}

// What the run did, beyond how bad the worst finding is (DESIGN §10): a
// process that died on its own is "crashed"; a failure whose primary is a
// timeout or a rank that never joined is "hung"; a clean result whose run's
// story stops inside init is "incomplete" (never "ok": healthy needs evidence),
// with that story as the primary; warnings beside a story without its end are
// "incomplete" too, not "warn": the run did not finish in what was collected,
// whatever was found on the way (a warning stays the primary: it may be why).
void RefineStatus(Diagnosis* d, const std::vector<Finding>& fs) {
  if (d->status == Status::kFail) {
    for (const Finding& f : fs) {
      if (f.category == Category::kCrash && f.role != Role::kCascade && f.severity >= Severity::kError) {
        d->status = Status::kCrashed;
        return;
      }
    }
    if (d->primary >= 0) {
      // A check that compares the ranks and raises ends the run with an error
      // ("fail"), unless a timeout shows that ranks waited all the same.
      const bool raised = fs[d->primary].stops_with_error && std::none_of(fs.begin(), fs.end(), [](const Finding& f) {
                            return f.category == Category::kTimeout;
                          });
      const Category cat = fs[d->primary].category;
      if (!raised && (cat == Category::kTimeout || cat == Category::kDesync || cat == Category::kHang)) {
        d->status = Status::kHung;
      }
    }
    return;
  }
  if (d->status == Status::kWarn) {
    for (const Finding& f : fs) {
      if (f.category == Category::kHang && f.severity == Severity::kInfo && f.role == Role::kRoot) {
        d->status = Status::kIncomplete;
        return;
      }
    }
    return;
  }
  if (d->status != Status::kOk && d->status != Status::kPartial) return;
  for (size_t i = 0; i < fs.size(); ++i) {
    if (fs[i].category == Category::kHang && d->primary < 0) {
      if (d->status == Status::kOk) d->status = Status::kIncomplete;
      d->primary = static_cast<int>(i);
      return;
    }
  }
}

// Findings of one rule with one fingerprint are one problem: subjects, counts
// and evidence (capped) are pooled into the first, which keeps its text.
void MergeSameProblem(std::vector<Finding>* fs) {
  std::map<std::string, size_t> seen;
  std::vector<Finding> out;
  for (auto& f : *fs) {
    auto it = seen.find(f.rule_id + "|" + f.fingerprint);
    if (it == seen.end()) {
      seen.emplace(f.rule_id + "|" + f.fingerprint, out.size());
      out.push_back(std::move(f));
      continue;
    }
    Finding& into = out[it->second];
    // `suspects: first`: the earliest line's subjects, and its words, speak.
    if (into.suspects == FindingSpec::Suspects::kFirst && f.first.file >= 0 &&
        (into.first.file < 0 || SeenBefore(f.first, into.first))) {
      into.first_ranks = f.first_ranks;
      into.first_hosts = f.first_hosts;
      into.explanation = f.explanation;
      into.remediation = f.remediation;
      f.evidence.insert(f.evidence.end(), std::make_move_iterator(into.evidence.begin()),
                        std::make_move_iterator(into.evidence.end()));
      into.evidence.clear();
    }
    std::set<int> ranks(into.ranks.begin(), into.ranks.end());
    ranks.insert(f.ranks.begin(), f.ranks.end());
    into.ranks.assign(ranks.begin(), ranks.end());
    std::set<std::string> hosts(into.hosts.begin(), into.hosts.end()), others(into.others.begin(), into.others.end());
    hosts.insert(f.hosts.begin(), f.hosts.end());
    others.insert(f.others.begin(), f.others.end());
    into.hosts.assign(hosts.begin(), hosts.end());
    into.others.assign(others.begin(), others.end());
    into.count += f.count;
    for (auto& e : f.evidence) {
      if (into.evidence.size() < kMaxEvidencePerFinding) into.evidence.push_back(std::move(e));
    }
    if (into.result.empty()) into.result = f.result;
    if (f.first.file >= 0 && (into.first.file < 0 || SeenBefore(f.first, into.first))) into.first = f.first;
    if (f.last.file >= 0 && (into.last.file < 0 || SeenBefore(into.last, f.last))) into.last = f.last;
  }
  *fs = std::move(out);
}

}  // namespace

namespace {
std::string& InjectedFault() {
  static std::string what;
  return what;
}
}  // namespace

void InjectStepFaultForTesting(const std::string& what) { InjectedFault() = what; }

void RunGuarded(const std::string& what, std::vector<std::string>* errors, const std::function<void()>& step) {
  if (!errors) {
    step();
    return;
  }
  try {
    if (!InjectedFault().empty() && InjectedFault() == what) throw std::out_of_range("injected fault");
    step();
  } catch (const std::exception& e) {
    errors->push_back(what + ": " + e.what());
  }
}

namespace {
// A process that crashed, was killed or lost its GPU is why the collectives
// waited for it: such a root line finding on the rank(s) a correlation names
// for how they behaved (they lagged, never joined, stopped) goes before it.
void MarkWhyCulprit(std::vector<Finding>* fs) {
  std::vector<const std::vector<int>*> culprits;
  for (const Finding& f : *fs) {
    const bool behaviour =
        f.category == Category::kDesync || f.category == Category::kHang || f.category == Category::kTimeout;
    if (f.kind && behaviour && f.role != Role::kCascade && !f.suspect_ranks.empty())
      culprits.push_back(&f.suspect_ranks);
  }
  for (Finding& f : *fs) {
    if (f.kind || f.role != Role::kRoot || f.severity < Severity::kError || f.suspect_ranks.empty() ||
        !(f.category == Category::kCrash || f.category == Category::kOom || f.category == Category::kCuda))
      continue;
    for (const std::vector<int>* c : culprits) {
      if (std::includes(c->begin(), c->end(), f.suspect_ranks.begin(), f.suspect_ranks.end())) f.why_culprit = true;
    }
  }
}
// `impact: performance` findings with nothing at error or above say why a
// run was slow, not why it stopped. Of a run that shows its end (a process's
// clean end or the job's: torchrun's success, nccl-tests' summary) the job
// was slow, not in trouble; of a run whose story stops (RUN-STOPPED-*, no
// progress shown), the stop is the headline. Either way they stay in the
// report as context at info.
void KeepPerformanceAsContext(const JobState& state, std::vector<Finding>* fs) {
  auto keep_as_context = [fs](const char* why) {
    for (Finding& f : *fs) {
      if (!f.performance_only || f.severity != Severity::kWarning) continue;
      f.severity = Severity::kInfo;
      f.role = Role::kContext;
      f.explanation += why;
    }
  };
  bool stopped = false, fallback_cause = false;
  for (const Finding& f : *fs) {
    if (f.severity >= Severity::kError && f.role != Role::kContext) return;
    stopped |= f.category == Category::kHang && f.role == Role::kRoot;
    // A faster transport that failed (a net plugin's init or path, an HCA,
    // GPUDirect) is why the slow one was taken: then the slow path is the
    // story, stopped or not.
    fallback_cause |= !f.performance_only && (f.category == Category::kTransport || f.category == Category::kIb ||
                                              f.category == Category::kGdr || f.category == Category::kInit);
  }
  if (stopped && !fallback_cause) {
    keep_as_context(" It slows a job; it does not stop one: where the logs stop, look at the stage they stop in.");
    return;
  }
  const int clean = state.rules().fact(Fact::kCleanEnd), job = state.rules().fact(Fact::kJobEnd);
  bool ended = false;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    ended |= (clean >= 0 && sub.Has(clean)) || (job >= 0 && sub.Has(job));
  }
  if (ended) keep_as_context(" The run shows its end and nothing failed: this made it slower, it did not stop it.");
}

}  // namespace

Diagnosis Diagnose(const JobState& state) {
  Diagnosis d;
  std::vector<Finding>& fs = d.findings;
  RunGuarded("line findings", &d.internal_errors, [&] { LineFindings(state, &fs); });
  RunCorrelations(state, &fs, &d.internal_errors);
  // Before causality: a version-bound finding the log's version rules out
  // explains nothing.
  RunGuarded("known issues", &d.internal_errors, [&] { JudgeKnownIssues(state, &fs); });

  // Causality: a finding that explains another turns it into a cascade.
  const RuleSet& rules = state.rules();
  std::map<std::string, std::vector<std::string>> explains;
  for (const auto& r : rules.rules()) {
    for (const auto& e : r.spec.finding.explains) explains[r.spec.id.value].push_back(e.value);
  }
  for (const auto& c : rules.correlations()) {
    for (const auto& e : c.spec.finding.explains) explains[c.spec.id.value].push_back(e.value);
  }
  std::set<std::string> present;
  for (const auto& f : fs) {
    if (f.severity >= Severity::kWarning) present.insert(f.rule_id);
  }
  for (auto& f : fs) {
    for (const auto& root : present) {
      if (root == f.rule_id) continue;
      const auto& ex = explains[root];
      if (std::find(ex.begin(), ex.end(), f.rule_id) != ex.end()) {
        f.role = Role::kCascade;
        f.explained_by.push_back(root);
      }
    }
  }

  // Fingerprint = the problem, not the run: rule, category and the finding's
  // key fields with host names, addresses, ports and pointers blanked. Never
  // ranks, paths, pids or times, nor the role: whether a finding is a root or
  // a cascade depends on which other findings the logs happened to hold, and
  // the same problem must open one ticket however complete they were.
  // Findings of one rule whose keys meet after that are one finding.
  const std::set<std::string> job_hosts = state.Hosts();
  for (auto& f : fs) {
    f.fingerprint = fmt::format(
        "{:016x}", Fnv1a(f.rule_id + "|" + CategoryName(f.category) + "|" + NormaliseKey(f.group, job_hosts)));
  }
  MergeSameProblem(&fs);
  JudgeKnownIssues(state, &fs);  // again on the pooled subjects of merged findings
  // Rules whose line names a peer that closed or refused the connection: the
  // printer is that peer's victim (PEER-CLOSED-STORM names the peer).
  std::set<std::string> names_peer;
  const int closed_peer = rules.fact(Fact::kClosedPeer);
  for (const CompiledRule& r : rules.rules()) {
    for (const CompiledFact& cf : r.facts) {
      if (cf.fact == closed_peer) names_peer.insert(r.spec.id.value);
    }
  }
  for (auto& f : fs) {
    // Suspects: a correlation names them; a line finding suspects the ranks
    // that printed it, unless it is a victim's report (timeouts, cascades, a
    // connection its peer closed).
    if (f.kind || (f.role != Role::kCascade && f.category != Category::kTimeout && !names_peer.count(f.rule_id))) {
      const bool first = f.suspects == FindingSpec::Suspects::kFirst;
      if (f.suspects != FindingSpec::Suspects::kNone) {
        f.suspect_ranks = first ? f.first_ranks : f.ranks;
        f.suspect_hosts = first ? f.first_hosts : f.hosts;
      }
    }
    std::string inst = f.fingerprint + "|" + CompactRanks(f.suspect_ranks) + "|";
    for (const auto& h : f.suspect_hosts) inst += h + ",";
    f.instance = fmt::format("{:016x}", Fnv1a(inst));
  }

  MarkWhyCulprit(&fs);
  KeepPerformanceAsContext(state, &fs);
  std::sort(fs.begin(), fs.end(), RanksBefore);

  Severity worst = Severity::kInfo;
  for (const Finding& f : fs) {
    if (SetsVerdict(f)) worst = std::max(worst, f.severity);
  }
  d.primary = PrimaryOf(fs);
  d.status = worst >= Severity::kError ? Status::kFail : (worst >= Severity::kWarning ? Status::kWarn : Status::kOk);
  // "ok" needs evidence of health: some line was recognised as NCCL / PyTorch /
  // launcher output. Unreadable inputs make a clean result partial.
  const Counters& c = state.counters();
  const uint64_t recognised = c.recognised_lines();
  int unreadable = 0;
  for (const auto& file : state.files()) unreadable += !file.error.empty();
  // Flight Recorder dumps that were read are evidence too, and so is output
  // behind a global rank prefix ("[rank1]:"): those ranks ran.
  if (d.status == Status::kOk && recognised == 0 && c.matched_lines == 0 && state.flight_recorders().empty() &&
      state.Ranks().empty()) {
    d.status = Status::kUnknown;
  }
  if ((d.status == Status::kOk || d.status == Status::kUnknown) && unreadable > 0) d.status = Status::kPartial;
  // A check that could not run leaves "no problem found" unproven.
  if (d.status == Status::kOk && !d.internal_errors.empty()) d.status = Status::kPartial;
  RefineStatus(&d, fs);
  if (d.primary >= 0) fs[d.primary].primary = true;
  if (d.primary >= 0) {
    // The culprit, or who reported it: compact whatever the job's size.
    const Finding& p = fs[d.primary];
    const std::string where = HeadlineWho(p);
    d.headline = p.title + (where.empty() ? "" : " (" + where + ")");
  } else if (d.status == Status::kUnknown) {
    d.headline = "nothing recognised: no NCCL or PyTorch distributed lines (was NCCL_DEBUG=INFO set?)";
  } else if (d.status == Status::kPartial && unreadable == 0) {
    d.headline = fmt::format("no problem found, but {} check{} could not run (internal error)",
                             d.internal_errors.size(), d.internal_errors.size() == 1 ? "" : "s");
  } else if (d.status == Status::kPartial) {
    d.headline = fmt::format("no problem found in what could be read; {} input{} could not be read", unreadable,
                             unreadable == 1 ? "" : "s");
  } else {
    d.headline = "no problem found";
  }
  return d;
}

}  // namespace ncclscan
