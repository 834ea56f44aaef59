// Diagnosis: findings from line rules and correlations, with causal roles,
// ranked worst-first, with stable fingerprints. This is what every report prints.
//
// Thread-safety: Diagnose() reads a finalized JobState; results are values.
#ifndef NCCLSCAN_ENGINE_MODELS_DIAGNOSIS_H_
#define NCCLSCAN_ENGINE_MODELS_DIAGNOSIS_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/state/job_state.h"
#include "rules/rule.h"
#include "rules/vocabulary.h"

namespace ncclscan {

// What one known issue of a finding's rule says about this log: whether the
// version the log runs has it.
struct KnownIssueNote {
  const KnownIssue* issue = nullptr;  // owned by the RuleSet, which outlives every Diagnosis
  // affected: a version the log runs is affected; fixed: none is, one is at or
  // after fixed_in; not_affected: none is, none has the fix (older than the
  // issue); unknown: the log names no version of the component.
  std::string status;
  std::vector<std::string> versions;  // the versions judged: the finding's subjects', else the job's
};

struct Finding {
  std::string rule_id;
  // The correlation kind that found it; none: a line rule's finding.
  std::optional<CorrelationKind> kind;
  Category category = Category::kConfig;
  Severity severity = Severity::kInfo;
  double confidence = 0;
  Role role = Role::kRoot;
  std::string title;
  std::string explanation;
  std::string remediation;
  std::vector<std::string> references;
  std::vector<KnownIssueNote> known_issues;  // one per structured reference of the rule
  std::vector<int> ranks;
  std::vector<std::string> hosts;
  std::vector<std::string> others;  // subjects without a known rank (host:pid, file)
  std::string communicator, process_group, op_type, sequence;
  std::vector<Evidence> evidence;
  int64_t count = 0;
  std::string group;  // what distinguishes findings of the same rule
  std::string fingerprint;
  std::vector<std::string> explained_by;
  Seen first;
  Seen last;
  std::string result;
  // Ticket fields (DESIGN.md §8).
  bool primary = false;
  Owner owner = Owner::kLibrary;   // the rule's `owner`, else its category's (rules/vocabulary.h)
  std::vector<int> suspect_ranks;  // who is believed responsible
  std::vector<std::string> suspect_hosts;
  std::string instance;  // fingerprint + suspects: one ticket per culprit  // ncclResult_t named by the return-code
                         // chain after the WARN ("" if none)
  // A root line finding that says why the rank(s) a collective-consensus
  // finding names stopped (it crashed, was OOM-killed, lost its GPU): ranked
  // before that finding (RanksBefore).
  bool why_culprit = false;
  // The rule's `suspects:` (FindingSpec::Suspects); for kFirst (only) the
  // first_* fields hold the subjects of the earliest line the finding gathered,
  // the only ones suspected.
  FindingSpec::Suspects suspects = FindingSpec::Suspects::kAll;
  bool performance_only = false;  // FindingSpec::performance_only
  bool stops_with_error = false;  // FindingSpec::stops_with_error
  std::vector<int> first_ranks;
  std::vector<std::string> first_hosts;
};

struct Diagnosis {
  std::vector<Finding> findings;  // ranked
  int primary = -1;               // index of the primary finding, -1 if none
  // ok: evidence of health was read and nothing is wrong; warn | fail: the worst
  // finding; unknown: nothing in the input was recognised; partial: nothing
  // wrong in what was read, but some input could not be read.
  Status status = Status::kOk;
  std::string headline;
  std::string job_id;  // --job-id, echoed in the JSON
  // Checks that broke an invariant ("CONSENSUS-BEHIND: map::at"): each is
  // named here and the rest of the diagnosis is kept (RunGuarded).
  std::vector<std::string> internal_errors;
};

// Runs one step of the analysis (a correlation, a check, the line findings).
// An exception from it (an invariant broken: .at() out of range, bad_alloc) is
// recorded in *errors as "<what>: <message>" and the other steps go on; with
// errors null it propagates.
void RunGuarded(const std::string& what, std::vector<std::string>* errors, const std::function<void()>& step);
// Tests: RunGuarded throws in the step named `what` ("" = none).
void InjectStepFaultForTesting(const std::string& what);

Diagnosis Diagnose(const JobState& state);

// The ranking of findings: whether `a` goes before `b`. Cascades last; then
// the more severe first; at equal severity a culprit the collective-consensus
// model names goes before the findings of those who reported it; then root
// causes before context; then the more confident; then rule id and fingerprint
// (a total order: the report is the same whatever order findings were made in).
bool RanksBefore(const Finding& a, const Finding& b);
// The primary finding of findings ranked by RanksBefore: the first at warning
// or above; -1 when there is none (a healthy run's context only).
int PrimaryOf(const std::vector<Finding>& ranked);

// "line", or the name of the correlation kind that found it (the JSON's `kind`).
inline const char* FindingKindName(const Finding& f) { return f.kind ? KindName(*f.kind) : "line"; }

// Correlations: engine/models/correlate.h.

// Template variables of a finding's texts, by name.
using Vars = std::map<std::string, std::string>;

// Appends template variable `name` of finding `f` to *out: {ranks}, {hosts}
// and {count} from the finding itself, any other from `vars` (nothing when
// neither knows it).
void AppendFindingVar(const Finding& f, const Vars& vars, const std::string& name, std::string* out);

// A finding with the fields its rule or correlation gives (id, kind, category,
// severity, confidence, role, title, references, owner); the caller adds the rest.
Finding FindingOf(const std::string& id, std::optional<CorrelationKind> kind, Category category,
                  const std::string& title, const FindingSpec& spec, const std::vector<std::string>& references);

// Shared helpers for building findings from a set of subjects.
void FillSubjects(const JobState& state, const std::vector<int>& subjects, Finding* f);
std::string SubjectsText(const Finding& f);
// Who, compactly: "rank 9 on gpu-node-002", "ranks 0-7 on 2 hosts",
// "512 ranks on 64 hosts", "3 processes on node-a"; "" when nobody.
std::string WhoText(const std::vector<int>& ranks, const std::vector<std::string>& others,
                    const std::vector<std::string>& hosts);
// The headline's parenthesis: the primary finding's suspects, or "reported
// by ..." when it names none (a victim's report).
std::string HeadlineWho(const Finding& p);
std::string HostsText(const Finding& f);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_MODELS_DIAGNOSIS_H_
