// Typed rule structures (pass 1 of the loader). Every field remembers where in
// which file it came from so that pass 2 can point at it.
//
// Thread-safety: plain value types.
#ifndef NCCLSCAN_RULES_RULE_H_
#define NCCLSCAN_RULES_RULE_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "parsers/parsed_line.h"
#include "rules/version_range.h"
#include "rules/vocabulary.h"

namespace re2 {
class RE2;
}

namespace ncclscan {

struct SourcePos {
  std::string file;
  int line = 0;  // 1-based; 0 = unknown
  int col = 0;   // 1-based
};

template <typename T>
struct Located {
  T value{};
  SourcePos pos;
};

enum class Severity { kInfo = 0, kWarning = 1, kError = 2, kCritical = 3 };
const char* SeverityName(Severity s);
bool ParseSeverity(const std::string& s, Severity* out);

enum class Role { kRoot = 0, kCascade = 1, kContext = 2 };
const char* RoleName(Role r);
bool ParseRole(const std::string& s, Role* out);

enum class MergeMode { kFirst, kLast, kSet, kMax, kMin, kCount };
bool ParseMergeMode(const std::string& s, MergeMode* out);

struct FactSpec {
  Located<std::string> name;
  MergeMode merge = MergeMode::kLast;
  bool keyed = false;
  bool hex = false;
  KeyKind key_kind = KeyKind::kName;  // keyed facts: what the key names
  // Keyed facts: keep only about this many most recently set keys per subject
  // (0: unbounded). For per-call facts such as the COLL trace's, whose keys
  // grow with the job's length while consensus needs only the latest calls.
  int window = 0;
  // Values a line carries besides the fact's own, kept with it (the value the
  // merge keeps and its fields come from one line): a COLL trace call's op,
  // count, datatype and root. Each rule that sets the fact fills field f from
  // its capture or lookup named f (checked at load); models read them by
  // position (FactValue::fields), not by parsing the line again.
  std::vector<std::string> fields;
  // A value that says the fact's real value is unknown ("(unknown: C++ frames
  // only)"): any other value replaces it whatever the merge mode, and it never
  // replaces another (MergeTakes).
  std::string placeholder;
  std::string description;
};

struct FindingSpec {
  bool present = false;
  Severity severity = Severity::kWarning;
  double confidence = 0.8;
  Role role = Role::kRoot;
  std::vector<Located<std::string>> group_by;
  Located<std::string> explanation;
  Located<std::string> remediation;
  std::vector<Located<std::string>> explains;
  // Which team owns the fix; not given: the default of the rule's category
  // (rules/vocabulary.h).
  bool has_owner = false;
  Owner owner = Owner::kLibrary;
  // `scope: multi_node`: what the finding describes only matters between
  // nodes (an interface other hosts cannot reach, GPUDirect RDMA off). On a
  // job that states it runs on one node it is kept as context at info.
  bool multi_node_only = false;
  // `impact: performance`: what the finding describes makes the job slow, it
  // does not stop it (TCP sockets between nodes). Where the run shows its end
  // and nothing failed, it is kept as context at info: a run that finished is
  // not in trouble for it (a healthy run's headline is never a warning).
  bool performance_only = false;
  // `stops_run: error`: what the finding describes stops the run with an error
  // of its own, even where its category is one of ranks waiting (desync): a check
  // that compares the ranks and raises (PyTorch's collective fingerprints under
  // TORCH_DISTRIBUTED_DEBUG=DETAIL, a monitored barrier, OpenMMLab's loss terms).
  // As the primary it makes the status "fail", not "hung". `hang` (the default
  // for timeout, desync and hang findings) leaves the status to the category.
  bool stops_with_error = false;
  // `suspects:` (line rules) — who the finding holds responsible among the
  // subjects whose lines it gathered. all (default): every one. first: the one
  // whose line came first (a launcher lists the nodes as they end, merged into
  // one problem: the first is where the failure was first seen). none: nobody,
  // the line reports a failure somewhere else it cannot place (slurmstepd's
  // node-failure banner, printed by a node that survived).
  enum class Suspects { kAll, kFirst, kNone };
  Suspects suspects = Suspects::kAll;
};

// A structured entry of a rule's `references:` (docs/rules.md §2, "Known
// issues"): a mechanism established upstream (an NCCL issue or pull request,
// a release note, a PyTorch fix), the releases it affects and the one that
// fixes it. A plain URL entry is a reference, not a known issue.
struct KnownIssue {
  Located<std::string> url;
  std::string title;
  std::string component = "nccl";  // nccl | torch: whose version `affected` and `fixed_in` name
  Located<std::string> affected;   // as written, e.g. ">=2.19.1,<2.21.5"
  VersionRange affected_range;     // parsed; empty when not given (then "<fixed_in")
  Located<std::string> fixed_in;   // "" = no fixed release (yet)
  Version fixed_version;
  // `affected_only: true`: the rule's finding is this issue, so it fires only
  // where the log's version is affected (or not known). At most one per rule.
  bool affected_only = false;
  SourcePos affected_only_pos;
  // `when: REGEX`: the issue applies only to the rule's findings one of whose
  // group_by values REGEX matches in full (one CUDA error of several, one IB
  // completion status); "" = all. Compiled once, when the rule is read.
  Located<std::string> when;
  std::shared_ptr<const re2::RE2> when_re;

  // Whether version v (of `component`) has the issue.
  bool Affects(const Version& v) const {
    if (!affected_range.empty()) return affected_range.Contains(v);
    return fixed_version.ok() && v.ok() && CompareVersions(v, fixed_version) < 0;
  }
};

struct Lookup {
  std::string name;
  Located<std::string> from;
  std::map<std::string, std::string> map;
  std::string default_value;
};

struct Example {
  Located<std::string> line;
  std::map<std::string, std::string> captures;  // expected capture values (optional)
};

// Whose line it is: the line's own process or rank (kLine), the rank in capture
// `rank` (kCapture), the subject of the file's last kCapture line (kPrevious),
// or, for lines one process prints about another (a kernel's OOM killer, an
// NVRM Xid), the process in capture `pid` (kProcess) or the GPU at PCI address
// `pci` (kDevice) on the host in capture `host` or the line's own.
enum class SubjectMode { kLine, kCapture, kPrevious, kProcess, kDevice, kHost };

struct FactAssign {
  Located<std::string> fact;   // "env" for keyed facts
  Located<std::string> key;    // template, keyed facts only
  Located<std::string> value;  // template
};

struct LineRule {
  Located<std::string> id;
  std::string title;
  bool has_category = false;
  Category category = Category::kConfig;
  Located<std::string> family_name;
  Family family = Family::kOther;
  bool any_family = false;
  Located<std::string> pattern;
  // Alternative to `pattern` for very frequent lines: each field is the
  // whitespace-delimited token right after (or right before) a literal anchor.
  struct Field {
    std::string name;
    Located<std::string> anchor;
    bool before = false;  // token ending right before the anchor
  };
  std::vector<Field> fields;
  std::vector<FactAssign> facts;
  std::map<std::string, Located<std::string>> identity;
  std::vector<Lookup> lookups;
  // `remember:` name -> template: values kept per input file for the lines
  // after it (a section header: ibstat's "CA 'mlx5_2'", a table's column
  // heads). Every rule's templates may read a remembered name ("{ca}"): the
  // value the file's last remembering line gave, or "" before any.
  std::vector<std::pair<Located<std::string>, Located<std::string>>> remember;
  SubjectMode subject = SubjectMode::kLine;
  // `level:` the NCCL levels (INFO WARN TRACE ABORT VERSION CALL) or c10
  // severities (E F W I) of the lines the rule applies to; empty = any line.
  std::vector<Located<std::string>> levels;
  // `fallback: true`: tried only on lines that no rule with a finding matched,
  // and exempt from the literal prefilter (a catch-all that still diagnoses).
  bool fallback = false;
  SourcePos fallback_pos;
  FindingSpec finding;
  std::vector<std::string> references;  // every URL, known issues' included
  std::vector<KnownIssue> known_issues;
  std::vector<Example> match;
  std::vector<Example> no_match;
  std::string source_file;
  // `enabled: false`: loaded and checked (examples included) but not run.
  bool enabled = true;
};

struct Condition {
  Located<std::string> fact;
  Located<std::string> key;              // `fact: env[NCCL_IB_TIMEOUT]`: the key of a keyed fact
  ConditionOp op = ConditionOp::kCount;  // kCount: none given
  Located<std::string> value;
};

enum class Over { kRank, kHost };  // consensus: subjects vote, or hosts do
enum class Select { kMin, kMax };  // extreme: the lowest value is the odd one, or the highest

struct CorrelationRule {
  Located<std::string> id;
  std::string title;
  bool has_category = false;
  Category category = Category::kConfig;
  CorrelationKind kind = CorrelationKind::kCount;  // kCount: none given, or unknown
  SourcePos kind_pos;
  Located<std::string> fact;
  Over over = Over::kRank;
  int min_subjects = 2;
  std::vector<Condition> where;
  int job_hosts_gt = -1;
  Located<std::string> present;
  Located<std::string> absent;
  Select select = Select::kMin;
  std::vector<Located<std::string>> require;  // extreme: facts of which some subject must have one
  int min_reporters = 2;
  bool silent_is_behind = false;    // extreme: ranks that never reported count as behind
  bool ignore_unset = false;        // consensus on a keyed fact: compare only subjects that have the key
  std::vector<std::string> normal;  // consensus: on a tie, the group holding one of these is the majority
  // consensus on a version: a tie that `normal` leaves is won by the newest
  // release (the older is the likelier stray: a node left on an old image, a
  // pip wheel shadowing the system library).
  bool tie_newest = false;
  Located<std::string> population;  // consensus on a keyed fact: subjects with this fact count as "(unset)"
  CollectiveCheck check = CollectiveCheck::kCount;  // collective: which check (engine/models/consensus.h); kCount: none
  FindingSpec finding;
  std::vector<std::string> references;  // every URL, known issues' included
  std::vector<KnownIssue> known_issues;
  std::string source_file;
  bool enabled = true;  // `enabled: false`: loaded and checked but not run
};

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_RULE_H_
