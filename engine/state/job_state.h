// JobState: everything learnt about a job while scanning: subjects (processes
// and ranks) with their facts, communicators, addresses, and the evidence of
// line findings. Filled by the scanner's serial stage, in input order; then
// Finalize() resolves identities (process -> global rank) and merges subjects.
//
// Memory is bounded by the number of subjects, communicators and rules: values
// are merged as they arrive, evidence is capped per finding.
//
// Thread-safety: not thread-safe; only the scanner's serial stage writes it.
#ifndef NCCLSCAN_ENGINE_STATE_JOB_STATE_H_
#define NCCLSCAN_ENGINE_STATE_JOB_STATE_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/io/source.h"
#include "parsers/flight_recorder.h"
#include "parsers/parsed_line.h"
#include "parsers/text_util.h"
#include "rules/rule_set.h"

namespace ncclscan {

class WireWriter;
class WireReader;

inline constexpr size_t kMaxEvidencePerFinding = 5;
inline constexpr size_t kMaxEvidenceText = 512;
// The value of a rank's `last_line` fact (the evidence keeps the whole line).
inline constexpr size_t kMaxLastLineValue = 160;
// A value captured from a line and interpolated into an explanation: a rule's
// capture can span most of a line, and an explanation quotes several.
inline constexpr size_t kMaxCaptureText = 512;
inline constexpr size_t kMaxSetValues = 64;
inline constexpr size_t kMaxIdentityConflicts = 100;
// Subjects (processes, ranks, per-file streams) kept one by one. A subject
// costs ~0.5-1 KiB with its index and report, so the cap holds a job's state
// near 128 MiB whatever its logs name; the lines of the subjects past it are
// summarised as one subject, and the reports say how many (Counters).
// 131,072 covers a 65,536-GPU job that logs both process and rank of each.
inline constexpr size_t kMaxSubjects = size_t{1} << 17;
// Communicators tracked (init, ranks, members); a job has one per process
// group and NCCL split, a few thousand at 10,000 GPUs. Past the cap a new
// communicator's lines still give facts and findings, but it is not counted
// or compared, and the reports say how many lines that was.
inline constexpr size_t kMaxComms = size_t{1} << 16;
// Keys of one keyed fact on one subject (communicators, process groups):
// past it new keys are dropped and counted (windowed facts trim instead).
inline constexpr size_t kMaxKeysPerFact = 4096;

struct Evidence {
  int file = -1;     // index into JobState::files
  int64_t line = 0;  // 1-based line number in that file
  std::string text;
  double time = -1;
  // The file and line a grep -H -n prefix named (an index into JobState's
  // origins), -1 if none: reports cite those (JobState::CitedPath / CitedLine).
  int origin = -1;
  int64_t origin_line = 0;
};

// Where a value was seen, for ordering "first" across ranks.
struct Seen {
  double time = -1;  // seconds-of-year from a timestamp, -1 if none
  int file = -1;
  int64_t line = 0;
};

// Whether a was seen before b: by timestamp when both have one, else by file and line.
bool SeenBefore(const Seen& a, const Seen& b);

// A not-yet-copied Evidence, so values that are merged away cost no copy.
struct EvidenceRef {
  int file = -1;
  int64_t line = 0;
  std::string_view text;  // the whole line; CopyTo keeps kMaxEvidenceText bytes
  double time = -1;
  // A grep -H -n prefix's file and line (ParsedLine::src_file / src_line),
  // cited by reports; ordering ("first") stays by file and line, see seen().
  std::string_view origin_file;
  int64_t origin_line = -1;
  void CopyTo(Evidence* e) const {
    e->file = file;
    e->line = line;
    std::string_view t = CutUtf8(text, kMaxEvidenceText);  // never half a character
    e->text.assign(t.data(), t.size());
    e->time = time;
  }
  Seen seen() const { return Seen{time, file, line}; }
};

// Whether a merge replaces the value it holds with `incoming` (first: never;
// last: always; max/min: when numerically above/below; set/count keep no single value).
bool MergeReplaces(const FactSpec& spec, std::string_view incoming, std::string_view current);

// Adds `v` to a set fact's sorted values unless present or kMaxSetValues
// are already kept.
void InsertSetValue(std::vector<std::string>* values, std::string_view v);

struct FactValue {
  std::string value;                // first/last/max/min
  std::vector<std::string> values;  // set (sorted, bounded)
  int64_t count = 0;
  Evidence evidence;
  Seen seen;
};

using KeyedValues = std::map<std::string, FactValue, std::less<>>;

// One subject's values of the job's facts, by fact index, sparse: the rules
// declare ~40 facts and most subjects carry a few, and a dense slot per fact
// cost ~9 KiB a subject (1 M processes: 9 GiB). Slots stay sorted by fact.
template <typename V>
class FactSlots {
 public:
  explicit FactSlots(size_t facts = 0) : facts_(facts) {}
  // The number of facts of the rules (valid indices are below it).
  size_t size() const { return facts_; }
  const V* Find(int fact) const {
    auto it = LowerBound(fact);
    return it != slots_.end() && it->first == fact ? &it->second : nullptr;
  }
  V* Find(int fact) {
    auto it = LowerBound(fact);
    return it != slots_.end() && it->first == fact ? &it->second : nullptr;
  }
  // The value of `fact`, created empty when it has none. The reference is
  // good until the next At of another fact.
  V& At(int fact) {
    auto it = LowerBound(fact);
    if (it == slots_.end() || it->first != fact) it = slots_.emplace(it, fact, V());
    return it->second;
  }
  // The values set, as (fact, value) in fact order.
  const std::vector<std::pair<int, V>>& slots() const { return slots_; }
  std::vector<std::pair<int, V>>& slots() { return slots_; }

 private:
  typename std::vector<std::pair<int, V>>::const_iterator LowerBound(int fact) const {
    return std::lower_bound(slots_.begin(), slots_.end(), fact, [](const auto& p, int f) { return p.first < f; });
  }
  typename std::vector<std::pair<int, V>>::iterator LowerBound(int fact) {
    return std::lower_bound(slots_.begin(), slots_.end(), fact, [](const auto& p, int f) { return p.first < f; });
  }
  size_t facts_;
  std::vector<std::pair<int, V>> slots_;
};

// Keyed facts: reading an unset fact gives an empty map.
class KeyedSlots : public FactSlots<KeyedValues> {
 public:
  using FactSlots::FactSlots;
  const KeyedValues& operator[](size_t fact) const {
    static const KeyedValues kNone;
    const KeyedValues* m = Find(static_cast<int>(fact));
    return m ? *m : kNone;
  }
};

struct Subject {
  std::string host;
  int64_t pid = -1;
  int rank = -1;      // resolved global rank (-1 unknown)
  std::string label;  // "rank 3" or "host:pid" when rank unknown
  std::vector<int> files;
  uint64_t devices = 0;            // bit d: a matched line of it carried the NCCL header's [d] (d < 64)
  std::map<int, int> rank_hints;   // hinted global rank -> lines
  std::map<int, int> label_hints;  // srun --label task numbers -> lines (ranks unless the file says otherwise)
  FactSlots<FactValue> facts;      // unkeyed facts
  KeyedSlots keyed;                // keyed facts: key -> value
  bool merged_away = false;
  int merged_into = -1;
  bool host_from_hint = false;  // host is a wrapper's label (kubectl pod, pdsh host), not the process's own
  bool over_cap = false;        // summarises the subjects past kMaxSubjects: never a rank

  // Unkeyed or keyed: does this subject carry the fact at all?
  bool Has(int fact) const {
    const KeyedValues* m = keyed.Find(fact);
    return Get(fact) != nullptr || (m && !m->empty());
  }
  const FactValue* Get(int fact) const { return facts.Find(fact); }
};

struct CommInfo {
  std::string id;  // commId (or "ptr:host:pid:0x…" if unknown)
  int nranks = 0;
  std::set<int> ranks_started;
  std::set<int> ranks_completed;
  std::set<int> ranks_aborted;
  std::set<int> subjects;  // subject indices of members

  // Every rank that logged an init, completion or abort line for this communicator.
  std::set<int> RanksSeen() const {
    std::set<int> seen = ranks_started;
    seen.insert(ranks_completed.begin(), ranks_completed.end());
    seen.insert(ranks_aborted.begin(), ranks_aborted.end());
    return seen;
  }
};

struct FileInfo {
  std::string path;
  uint64_t bytes = 0;
  uint64_t lines = 0;
  std::string error;  // non-empty: why it could not be read (fully), e.g. "Permission denied"
  int path_rank = -1;
  int path_local_rank = -1;
  std::string path_host;
  int64_t path_pid = -1;
};

struct LineFindingAcc {
  int rule = -1;
  std::string group;                        // joined group_by values
  std::map<std::string, std::string> vars;  // template variables of the first occurrence
  std::set<int> subjects;
  std::vector<Evidence> evidence;
  int64_t count = 0;
  Seen first;
  Seen last;
  std::string result;  // the ncclResult_t of the return-code chain that followed
};

struct Counters {
  uint64_t bytes = 0;
  uint64_t lines = 0;
  uint64_t family_lines[kNumFamilies] = {};
  uint64_t matched_lines = 0;
  uint64_t binary_lines = 0;
  uint64_t nul_lines = 0;
  uint64_t overlong_lines = 0;  // cut at the maximum line length
  uint64_t glued_lines = 0;
  uint64_t wrapped_joined = 0;     // terminal hard-wrapped lines joined to the line before
  uint64_t over_subject_cap = 0;   // lines of processes or ranks past kMaxSubjects, summarised as one
  uint64_t bad_numbers = 0;        // lines with a rank or count too large to be one (ParsedLine::bad_number)
  uint64_t over_comm_cap = 0;      // lines of communicators past kMaxComms (not tracked)
  uint64_t over_key_cap = 0;       // values of keyed facts past kMaxKeysPerFact keys (dropped)
  uint64_t over_fr_entry_cap = 0;  // Flight Recorder entries not kept (HoldFlightRecorder)

  // Lines recognised as NCCL, PyTorch or launcher output (blank lines and
  // other text are not).
  uint64_t recognised_lines() const {
    uint64_t n = 0;
    for (int i = 0; i < kNumFamilies; ++i) n += i == static_cast<int>(Family::kOther) ? 0 : family_lines[i];
    return n;
  }

  // Calls f on every counter, in one fixed order (partials store them in it).
  template <typename Self, typename F>
  static void Each(Self& c, F f) {
    f(c.bytes);
    f(c.lines);
    for (auto& v : c.family_lines) f(v);
    for (auto* v :
         {&c.matched_lines, &c.binary_lines, &c.nul_lines, &c.overlong_lines, &c.glued_lines, &c.wrapped_joined,
          &c.over_subject_cap, &c.bad_numbers, &c.over_comm_cap, &c.over_key_cap, &c.over_fr_entry_cap}) {
      f(*v);
    }
  }
  void Add(const Counters& o) {
    uint64_t v[32];
    size_t n = 0;
    Each(o, [&](uint64_t x) { v[n++] = x; });
    n = 0;
    Each(*this, [&](uint64_t& x) { x += v[n++]; });
  }
};

class JobState {
 public:
  explicit JobState(const RuleSet* rules);

  const RuleSet& rules() const { return *rules_; }

  int AddFile(const std::string& path);
  FileInfo& file(int i) { return files_[i]; }
  const std::vector<FileInfo>& files() const { return files_; }
  // Files that were read, wholly or in part (a file that failed before its
  // first byte is not): a scan with none has no readable input.
  size_t ReadableFiles() const {
    return static_cast<size_t>(
        std::count_if(files_.begin(), files_.end(), [](const FileInfo& f) { return f.error.empty() || f.bytes > 0; }));
  }

  // Inputs that hygiene left out, and walk errors (engine/io/source.h).
  SkippedInputs& skipped() { return skipped_; }
  const SkippedInputs& skipped() const { return skipped_; }

  // Where evidence is cited: the original file and line when the input line
  // carried a grep -H -n prefix ("orig.log:120", not "<stdin>:5"), else the
  // scanned file and line. `none` when the evidence has no file.
  std::string CitedPath(const Evidence& e, std::string_view none = "") const;
  int64_t CitedLine(const Evidence& e) const { return e.origin >= 0 ? e.origin_line : e.line; }

  // A line of `file` with an NCCL header from host:pid (registers the process).
  void NoteProcess(int file, std::string_view host, int64_t pid);
  // The last line of `file` under a rank's own prefix in a chunk (any line,
  // read by a rule or not): the rank's subject exists and its `last_line`
  // fact says what it printed last.
  void NoteRankLine(int file, int64_t line_no, const ParsedLine& line);
  // One rule match on one line. `groups` are RE2 captures.
  void Apply(int file, int64_t line_no, const ParsedLine& line, int rule, const re2::StringPiece* groups,
             int num_groups);
  // What `lines` consecutive matches of one foldable rule (CompiledRule::foldable)
  // on lines of one process amount to: per fact entry, the line whose value the
  // merge keeps and how many lines set it. Same state as Apply() on each line.
  struct FoldedFact {
    int fact;
    std::string_view key;  // rendered, before comm-pointer translation
    std::string_view value;
    int64_t count;
    EvidenceRef ev;  // the line whose value is kept
  };
  void ApplyFolded(int file, const ParsedLine& line, int64_t lines, const FoldedFact* facts, int num_facts);

  Counters& counters() { return counters_; }
  const Counters& counters() const { return counters_; }

  // Resolves process -> rank and merges subjects of the same rank.
  void Finalize();

  // Takes in `later`, the state of files scanned after this one's (same rules,
  // not finalized), as if the scan had gone on into them: facts merge in input
  // order (first keeps ours, last takes later's), evidence and counts add up.
  // A scan carries no line context from one file into the next either (WARN
  // chains close, and communicator pointers translate, within their file;
  // Finalize folds pointers named in another file), so the two agree.
  // `ncclscan merge` is built on it (engine/run/partial.h).
  void Absorb(JobState&& later);
  // The unfinalized state as bytes and back (engine/run/partial.cc); Decode
  // expects a fresh JobState over the same rules and returns false on bytes
  // that do not decode.
  void Encode(WireWriter* w) const;
  bool Decode(WireReader* r);

  const std::vector<Subject>& subjects() const { return subjects_; }
  const std::map<std::string, CommInfo>& comms() const { return comms_; }
  // Each process subject's rank in each communicator it initialised (commId ->
  // rank, from the Init lines); a subject may since be merged (Subject::merged_into).
  const std::map<int, std::map<std::string, int>>& comm_ranks() const { return comm_rank_; }
  const std::map<std::string, std::string>& address_owner() const { return address_owner_; }
  const std::map<std::string, LineFindingAcc>& line_findings() const { return line_findings_; }
  const std::vector<std::string>& identity_conflicts() const { return identity_conflicts_; }
  // An srun label and an explicit [rankN] disagreed on a line of `file`
  // (ParsedLine::LabelIsNotRank): its labels are task (node) numbers, not ranks.
  // The scanner notes it for a chunk before applying the chunk's lines.
  void NoteLabelsNotRanks(int file) { labels_not_ranks_.insert(file); }
  // Flight Recorder dumps read among the inputs (whole files, not lines).
  // Holds a dump read after those held, under the total bound of entries.
  void AddFlightRecorder(FrFile f) {
    counters_.over_fr_entry_cap += HoldFlightRecorder(&flight_recorders_, &fr_entries_held_, std::move(f));
  }
  const std::vector<FrFile>& flight_recorders() const { return flight_recorders_; }
  std::set<std::string> Hosts() const;
  // The live subject that subject `s` was merged into (s itself if live).
  int LiveSubject(int s) const {
    while (s >= 0 && static_cast<size_t>(s) < subjects_.size() && subjects_[s].merged_away)
      s = subjects_[s].merged_into;
    return s;
  }
  // Live subjects (not merged away), ordered by rank then label.
  std::vector<int> LiveSubjects() const;

 private:
  // weight: how many lines the call stands for (rank-hint votes).
  int SubjectFor(int file, const ParsedLine& line, int rule_subject_rank, bool previous, int64_t weight = 1);
  int ProcessSubject(std::string_view host, int64_t pid);
  int RankSubject(int rank);
  // A new subject under `key` (kept in subject_index_), or past kMaxSubjects
  // the one subject that summarises the rest.
  int NewSubject(std::string key, Subject s);
  // The communicator `id`, created if the cap allows; nullptr past kMaxComms.
  CommInfo* CommFor(const std::string& id);
  // `count` lines set this value (a folded run counts all its lines); ev is
  // the line that set it.
  void SetFact(int subject, int fact, std::string_view key, std::string_view value, int64_t count,
               const EvidenceRef& ev);
  void MergeSubject(int from, int into);
  // Folds each "ptr:host:pid:0x…" communicator, and each comm-keyed fact still
  // keyed by a pointer, into the commId an Init line of the same process
  // named for that pointer, wherever in the input (Finalize, first step).
  void ResolvePointerComms();
  // The evidence of the subject's earliest fact (nullptr if it has none).
  static const Evidence* FirstEvidence(const Subject& s);
  // A windowed keyed fact keeps its latest keys (FactSpec::window): called
  // before a key is added to `m`.
  static void TrimWindow(const FactSpec& spec, KeyedValues* m);
  // Sets e's origin from ev's (after ev.CopyTo(e)), interning the file name.
  void Cite(const EvidenceRef& ev, Evidence* e);
  // The index of grep-prefix file `name` in origins_, added if new; -1 once
  // kMaxOrigins names are kept.
  int InternOrigin(std::string_view name);
  // Whether communicator `id` is tracked or may still be (kMaxComms).
  bool CanTrackComm(const std::string& id) const { return comms_.size() < kMaxComms || comms_.count(id); }
  void NoteConflict(const std::string& msg);

  const RuleSet* rules_;
  std::vector<FileInfo> files_;
  SkippedInputs skipped_;
  // Files named by grep prefixes, each name once (at most kMaxOrigins).
  std::vector<std::string> origins_;
  std::map<std::string, int, std::less<>> origin_index_;
  std::vector<Subject> subjects_;
  std::map<std::string, int, std::less<>> subject_index_;  // "P host:pid" / "R n" / "F file"
  std::map<std::string, CommInfo> comms_;                  // by commId
  // [subject]: 0xptr -> commId, every Init line of the input (later ones win);
  // pointer communicators are folded into their commId by ResolvePointerComms.
  std::vector<std::map<std::string, std::string, std::less<>>> comm_ptr_;
  // The same, learned in the current file only: lines are translated with it
  // as they come, so that a scan and a merge of one partial per file agree.
  std::vector<std::map<std::string, std::string, std::less<>>> file_comm_ptr_;
  std::map<int, std::map<std::string, int>> comm_rank_;  // subject -> commId -> rank
  std::map<int, int> subject_global_rank_;               // from explicit identity
  std::map<std::string, std::string> address_owner_;     // ip/host -> host
  std::map<std::string, LineFindingAcc> line_findings_;  // by rule id + group
  std::vector<int> previous_subject_;                    // per file: last capture subject
  int last_process_ = -1;                                // cache for ProcessSubject
  // Wrapper label (kubectl pod, pdsh host) -> host names the labelled processes print themselves -> lines.
  std::map<std::string, std::map<std::string, int64_t>, std::less<>> hint_hosts_;
  std::vector<std::string> subject_address_;  // first bootstrap/OOB address per subject
  std::vector<std::string> identity_conflicts_;
  std::vector<FrFile> flight_recorders_;
  size_t fr_entries_held_ = 0;
  // Files where an srun label and an explicit [rankN] on one line disagree:
  // there the labels are node (task) numbers, not ranks.
  std::set<int> labels_not_ranks_;
  // Per subject: the finding of its last WARN line whose return-code chain
  // (identity `result`) has not been seen yet; "" when none is open.
  std::vector<std::string> open_warn_;
  Counters counters_;
};

// "0-3,5,7-9"
std::string CompactRanks(const std::vector<int>& ranks);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_STATE_JOB_STATE_H_
