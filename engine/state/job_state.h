// JobState: everything learnt about a job while scanning: subjects (processes
// and ranks) with their facts, communicators, addresses, and the evidence of
// line findings. Filled by the scanner's serial stage, in input order; then
// Finalize() resolves identities (process -> global rank) and merges subjects.
//
// Its fields are parts (engine/state/parts.h), each with its encoding and its
// merge with a later state's; facts merge by the one algebra of
// engine/state/facts.h. Memory is bounded by the number of subjects,
// communicators and rules: values are merged as they arrive, evidence is
// capped per finding.
//
// Thread-safety: not thread-safe; only the scanner's serial stage writes it.
#ifndef NCCLSCAN_ENGINE_STATE_JOB_STATE_H_
#define NCCLSCAN_ENGINE_STATE_JOB_STATE_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "engine/io/source.h"
#include "engine/state/facts.h"
#include "engine/state/parts.h"
#include "parsers/flight_recorder.h"
#include "parsers/parsed_line.h"
#include "parsers/text_util.h"
#include "rules/rule_set.h"

namespace ncclscan {

class WireWriter;
class WireReader;

// The value of a rank's `last_line` fact (the evidence keeps the whole line).
inline constexpr size_t kMaxLastLineValue = 160;
// A value captured from a line and interpolated into an explanation: a rule's
// capture can span most of a line, and an explanation quotes several.
inline constexpr size_t kMaxCaptureText = 512;

class JobState {
 public:
  explicit JobState(const RuleSet* rules);

  const RuleSet& rules() const { return *rules_; }

  int AddFile(const std::string& path);
  FileInfo& file(int i) { return inputs_.files[i]; }
  const std::vector<FileInfo>& files() const { return inputs_.files; }
  // Files that were read, wholly or in part (a file that failed before its
  // first byte is not): a scan with none has no readable input.
  size_t ReadableFiles() const {
    return static_cast<size_t>(std::count_if(inputs_.files.begin(), inputs_.files.end(),
                                             [](const FileInfo& f) { return f.error.empty() || f.bytes > 0; }));
  }

  // Inputs that hygiene left out, and walk errors (engine/io/source.h).
  SkippedInputs& skipped() { return inputs_.skipped; }
  const SkippedInputs& skipped() const { return inputs_.skipped; }

  // Where evidence is cited: the original file and line when the input line
  // carried a grep -H -n prefix ("orig.log:120", not "<stdin>:5"), else the
  // scanned file and line. `none` when the evidence has no file.
  std::string CitedPath(const Evidence& e, std::string_view none = "") const;
  int64_t CitedLine(const Evidence& e) const { return e.origin >= 0 ? e.origin_line : e.line; }

  // A line of `file` with an NCCL header from host:pid (registers the process).
  void NoteProcess(int file, std::string_view host, int64_t pid);
  // The first line of `file` under a rank's own prefix (no process named) in a
  // chunk: the rank's subject exists from here on, as a line-by-line read would
  // make it (NoteRankLine, at the rank's last line, gives it its facts).
  void TouchRank(int file, int rank, bool is_label);
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
  static constexpr size_t kMaxFoldedFields = 4;  // a foldable rule's fact fields at most
  struct FoldedFact {
    int fact;
    std::string_view key;  // rendered, before comm-pointer translation
    std::string_view value;
    int64_t count;
    EvidenceRef ev;  // the line whose value is kept
    // That line's FactSpec::fields (views, like key and value).
    std::array<std::string_view, kMaxFoldedFields> fields;
    size_t num_fields;
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

  const std::vector<Subject>& subjects() const { return subjects_.all; }
  const std::map<std::string, CommInfo>& comms() const { return comms_.by_id; }
  // Each process subject's rank in each communicator it initialised (commId ->
  // rank, from the Init lines); a subject may since be merged (Subject::merged_into).
  const std::map<int, std::map<std::string, int>>& comm_ranks() const { return comms_.rank_in; }
  const std::map<std::string, std::string>& address_owner() const { return identity_.address_owner; }
  const std::map<std::string, LineFindingAcc>& line_findings() const { return findings_.by_key; }
  const std::vector<std::string>& identity_conflicts() const { return identity_.conflicts; }
  // An srun label and an explicit [rankN] disagreed on a line of `file`
  // (ParsedLine::LabelIsNotRank): its labels are task (node) numbers, not ranks.
  // The scanner notes it for a chunk before applying the chunk's lines.
  void NoteLabelsNotRanks(int file) { inputs_.labels_not_ranks.insert(file); }
  // Flight Recorder dumps read among the inputs (whole files, not lines).
  // Holds a dump read after those held, under the total bound of entries.
  void AddFlightRecorder(FrFile f) { counters_.over_fr_entry_cap += dumps_.Add(std::move(f)); }
  const std::vector<FrFile>& flight_recorders() const { return dumps_.files; }
  std::set<std::string> Hosts() const;
  // The ranks of the live subjects.
  std::set<int> Ranks() const;
  // How many nodes the job says it runs on (the `nodes` fact: NCCL's nNodes,
  // torchrun's --standalone / --nnodes, the rendezvous' group_world_size): the
  // largest stated, 0 when nothing says.
  int64_t StatedNodes() const;
  // The live subject that subject `s` was merged into (s itself if live).
  int LiveSubject(int s) const {
    while (s >= 0 && static_cast<size_t>(s) < subjects_.all.size() && subjects_.all[s].merged_away)
      s = subjects_.all[s].merged_into;
    return s;
  }
  // Live subjects (not merged away), ordered by rank then label.
  std::vector<int> LiveSubjects() const;

 private:
  // weight: how many lines the call stands for (rank-hint votes).
  int SubjectFor(int file, const ParsedLine& line, int rule_subject_rank, bool previous, int64_t weight = 1);
  int ProcessSubject(std::string_view host, int64_t pid);
  int RankSubject(int rank);
  // The subject of a match of rule r (its `subject:` mode and captures).
  int RuleSubject(int file, const ParsedLine& line, const CompiledRule& r, const re2::StringPiece* groups,
                  int num_groups);
  // A new subject under `key`, or past kMaxSubjects the one subject that
  // summarises the rest.
  int NewSubject(const SubjectKeyView& key, Subject s) {
    return subjects_.Add(key, std::move(s), rules_->facts().size(), &counters_.over_subject_cap);
  }
  // Apply's parts: what a rule's identity templates say (communicators, ranks,
  // addresses, the return-code chain of a WARN), and a line finding's update.
  void ApplyIdentity(const CompiledRule& r, const MatchVars& var, int si, const EvidenceRef& ev);
  void AddToLineFinding(const CompiledRule& r, int rule_idx, const MatchVars& var, int si, const ParsedLine& line,
                        const EvidenceRef& ev);
  // `count` lines set this value (a folded run counts all its lines); ev is
  // the line that set it.
  // fields[0, num_fields) (FactSpec::fields, rendered) are taken with the value,
  // into the strings it had (no allocation a line once they are long enough).
  void SetFact(int subject, int fact, std::string_view key, std::string_view value, int64_t count,
               const EvidenceRef& ev, const std::string_view* fields = nullptr, size_t num_fields = 0);
  // Finalize's steps, in order (job_state_finalize.cc).
  // Hosts: a wrapper label that only ever prefixed one host's processes is
  // that host; two machines of one name that bootstrap from different
  // addresses are told apart.
  void ResolveHosts();
  // Each process's global rank: explicit identity, else its rank in its
  // largest communicator, else its rank hints (conflicts noted).
  void ResolveRanks();
  // Every subject of one rank merged into one; two processes on two hosts
  // that claim one rank are kept apart (true at their index).
  std::vector<bool> MergeSubjectsOfOneRank();
  // A torchrun --log-dir file's unprefixed lines join its one process.
  void MergeOneProcessStreams();
  // What a kernel log says of a process or GPU (subject: process / device)
  // joins the process it is about: the one process of that pid when the
  // kernel line named no host; the rank whose worker torchrun's failure table
  // gave that pid (fact worker_pid); else the one process on its host whose
  // communicator init printed the GPU's busId (fact gpu_bus).
  void JoinKernelSubjects();
  // Labels; communicator and finding members follow the merges.
  void Relabel(const std::vector<bool>& duplicate);
  // Folds each "ptr:host:pid:0x…" communicator, and each comm-keyed fact still
  // keyed by a pointer, into the commId an Init line of the same process
  // named for that pointer, wherever in the input (Finalize, first step).
  void ResolvePointerComms();
  void JoinUnnamedComms();
  // The evidence of the subject's earliest fact (nullptr if it has none).
  static const Evidence* FirstEvidence(const Subject& s);
  // Sets e's origin from ev's (after ev.CopyTo(e)), interning the file name.
  void Cite(const EvidenceRef& ev, Evidence* e);

  const RuleSet* rules_;
  // The parts (engine/state/parts.h), in the order they are encoded.
  InputFiles inputs_;
  SubjectTable subjects_;
  CommTable comms_;
  IdentityClues identity_;
  LineFindingTable findings_;
  HeldDumps dumps_;
  Counters counters_;
  // LiveSubjects() as Finalize left it: the diagnosis asks for it dozens of
  // times, and sorting thousands of subjects each time showed in profiles.
  // Empty and unused before Finalize (the state may still change).
  std::vector<int> live_after_finalize_;
  bool finalized_ = false;
  // Line context of the scan (not encoded: a scan carries none from one file
  // into the next).
  std::vector<int> previous_subject_;  // per file: last capture subject
  // Per file: the values `remember:` rules kept, by slot (RuleSet::remembered()),
  // one slot per remembered name from the file's first line.
  std::vector<std::vector<std::string>> remembered_;
  // Per file, the (subject, rank, label?) its rank lines have voted for, as
  // subject << 20 | rank << 1 | label (ranks noted are below 2^16). NoteRankLine
  // votes once for each: the scanner notes a rank's last line once a chunk, and
  // a vote a chunk would make the tally depend on the chunk size.
  std::vector<std::unordered_set<uint64_t>> rank_line_votes_;
  // SetFact's communicator key with its pointer translated (scratch).
  std::string translated_key_;
  // Apply's and ApplyFolded's scratch (members: their capacity stays, no
  // allocation a line).
  std::vector<std::string> field_text_;
  std::vector<std::string_view> field_views_;
  std::vector<const FoldedFact*> folded_order_;
  // ProcessSubject's cache: the subject of a pid, by a hash of the pid (host
  // checked on use). Interleaved streams (srun -l, one file of every rank)
  // switch process on nearly every line; the subject map compares host names.
  static constexpr int kProcessCacheSlots = 4096;
  std::array<int, kProcessCacheSlots> process_cache_ = EmptyProcessCache();
  static std::array<int, kProcessCacheSlots> EmptyProcessCache() {
    std::array<int, kProcessCacheSlots> a;
    a.fill(-1);
    return a;
  }
};

// "0-3,5,7-9"
std::string CompactRanks(const std::vector<int>& ranks);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_STATE_JOB_STATE_H_
