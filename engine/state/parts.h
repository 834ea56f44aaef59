// JobState's parts (engine/state/job_state.h), along the seams it has: the
// files read and the grep origins they cite; the subjects under a typed key;
// communicators; the raw material of line findings; identity clues; the Flight
// Recorder dumps held; the counters. Each part keeps its fields beside its
// encoding (Encode / Decode, engine/state/wire.h) and its merge with the part
// of a state scanned after it (Absorb), so a new field is one edit in one
// place. Facts and their merge algebra are in engine/state/facts.h.
//
// Thread-safety: plain values; only the scanner's serial stage writes them.
#ifndef NCCLSCAN_ENGINE_STATE_PARTS_H_
#define NCCLSCAN_ENGINE_STATE_PARTS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "engine/io/source.h"
#include "engine/state/facts.h"
#include "parsers/flight_recorder.h"
#include "rules/rule_set.h"

namespace ncclscan {

class WireWriter;
class WireReader;
struct Limits;

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
// Files named by grep -H -n prefixes, kept by name.
inline constexpr size_t kMaxOrigins = size_t{1} << 16;

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
  // The earliest and latest year timestamps printed (ISO forms; glog's and
  // NCCL's own carry none), 0 when none did: not counts, so Each skips them.
  int year_min = 0, year_max = 0;

  void NoteYear(int y) {
    if (year_min == 0 || y < year_min) year_min = y;
    if (y > year_max) year_max = y;
  }
  // The year of every timestamp when the logs name one and only one, else 0:
  // reports then write times as ISO 8601 (a job across New Year keeps "MM-DD").
  int Year() const { return year_min == year_max ? year_min : 0; }

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
  void Encode(WireWriter* w) const;
  void Decode(WireReader* r);
  void Add(const Counters& o) {
    uint64_t v[32];
    size_t n = 0;
    Each(o, [&](uint64_t x) { v[n++] = x; });
    n = 0;
    Each(*this, [&](uint64_t& x) { x += v[n++]; });
    if (o.year_min) NoteYear(o.year_min);
    if (o.year_max) NoteYear(o.year_max);
  }
};

// Where the indices of a later state's files, origins and subjects land in
// the state that absorbs it (JobState::Absorb): each part fills its share
// and fixes what it holds with the rest.
struct Remap {
  int file_off = 0;
  std::vector<int> origin;   // later origin -> ours (-1: past kMaxOrigins)
  std::vector<int> subject;  // later subject -> ours

  int File(int f) const { return f >= 0 ? f + file_off : f; }
  int Subject(int s) const { return s >= 0 && static_cast<size_t>(s) < subject.size() ? subject[s] : s; }
  void Fix(Seen* s) const { s->file = File(s->file); }
  void Fix(Evidence* e) const;
  void Fix(FactValue* v) const {
    Fix(&v->evidence);
    Fix(&v->seen);
  }
};

// ---- files and origins ----

struct FileInfo {
  std::string path;
  uint64_t bytes = 0;
  uint64_t lines = 0;
  std::string error;  // non-empty: why it could not be read (fully), e.g. "Permission denied"
  int path_rank = -1;
  std::string path_host;
  int64_t path_pid = -1;
};

struct InputFiles {
  std::vector<FileInfo> files;
  SkippedInputs skipped;  // inputs that hygiene left out, and walk errors
  // Files named by grep prefixes, each name once (at most kMaxOrigins).
  std::vector<std::string> origins;
  std::map<std::string, int, std::less<>> origin_index;
  // Files where an srun label and an explicit [rankN] on one line disagree:
  // there the labels are node (task) numbers, not ranks.
  std::set<int> labels_not_ranks;

  // The index of grep-prefix file `name`, added if new; -1 once kMaxOrigins
  // names are kept.
  int InternOrigin(std::string_view name);
  void Encode(WireWriter* w) const;
  void Decode(WireReader* r, Limits* l);
  // Appends `later`'s files and origins; sets r->file_off and r->origin.
  void Absorb(InputFiles&& later, Remap* r);
};

// ---- subjects ----

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
  // A stream with a line that named a rank or device too large to be one
  // (ParsedLine::bad_number): not all its lines are its file's one process.
  bool names_another = false;

  // Unkeyed or keyed: does this subject carry the fact at all?
  bool Has(int fact) const {
    const KeyedValues* m = keyed.Find(fact);
    return Get(fact) != nullptr || (m && !m->empty());
  }
  const FactValue* Get(int fact) const { return facts.Find(fact); }
  // Notes that a line of file `f` is this subject's (each file once; the
  // last one added is checked first, as consecutive lines share a file).
  void AddFile(int f) {
    if ((files.empty() || files.back() != f) && std::find(files.begin(), files.end(), f) == files.end()) {
      files.push_back(f);
    }
  }
};

// What a subject is, as a typed key: a process (host, pid), a global rank,
// the unprefixed lines of one file under one wrapper label (a stream), or
// the one subject that summarises those past kMaxSubjects, or a GPU named by
// its PCI address (a kernel's Xid line) until Finalize joins it to its process.
enum class SubjectKind : uint8_t { kProcess, kRank, kStream, kOverCap, kDevice };

struct SubjectKeyView {
  SubjectKind kind = SubjectKind::kOverCap;
  std::string_view host;  // kProcess: its host; kStream: the wrapper label ("" none)
  int64_t pid = -1;       // kProcess
  int64_t n = -1;         // kRank: the rank; kStream: the file; kDevice: the PCI bus number
  auto Tie() const { return std::tie(kind, host, pid, n); }
};

struct SubjectKey {
  SubjectKind kind = SubjectKind::kOverCap;
  std::string host;
  int64_t pid = -1;
  int64_t n = -1;

  static SubjectKeyView Process(std::string_view host, int64_t pid) { return {SubjectKind::kProcess, host, pid, -1}; }
  static SubjectKeyView Rank(int rank) { return {SubjectKind::kRank, {}, -1, rank}; }
  static SubjectKeyView Stream(int file, std::string_view label) { return {SubjectKind::kStream, label, -1, file}; }
  static SubjectKeyView OverCap() { return {}; }
  static SubjectKeyView Device(std::string_view host, int64_t bus) { return {SubjectKind::kDevice, host, -1, bus}; }
  SubjectKeyView View() const { return {kind, host, pid, n}; }
  static SubjectKey Of(const SubjectKeyView& v) { return {v.kind, std::string(v.host), v.pid, v.n}; }
};

struct SubjectKeyLess {
  using is_transparent = void;
  static SubjectKeyView V(const SubjectKey& k) { return k.View(); }
  static const SubjectKeyView& V(const SubjectKeyView& k) { return k; }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return V(a).Tie() < V(b).Tie();
  }
};

struct SubjectTable {
  std::vector<Subject> all;
  std::map<SubjectKey, int, SubjectKeyLess> index;

  // The subject under `key`, -1 if none.
  int Find(const SubjectKeyView& key) const {
    auto it = index.find(key);
    return it == index.end() ? -1 : it->second;
  }
  // A new subject under `key` with slots for `facts` facts; past kMaxSubjects
  // the one subject that summarises the rest (each call counted in *over_cap).
  int Add(const SubjectKeyView& key, Subject s, size_t facts, uint64_t* over_cap);
  // Folds subject `from` into `into` (the same rank): facts merge by where
  // they were seen; `from` is marked merged away.
  void Merge(int from, int into, const std::vector<FactSpec>& specs, uint64_t* over_key_cap);
  void Encode(WireWriter* w) const;
  void Decode(WireReader* r, Limits* l);
  // `later`'s subjects meet ours by key (the same process, rank or, per file,
  // stream) and their facts merge in input order; sets r->subject. Needs
  // r->file_off and r->origin set.
  void Absorb(SubjectTable&& later, const std::vector<FactSpec>& specs, Remap* r, Counters* c);
};

// ---- communicators ----

// The key of the communicator every rank traced alone, none of whose pointers an Init
// line tied to a commId (JobState::JoinUnnamedComms).
inline constexpr char kUnnamedComm[] = "(unnamed)";

struct CommInfo {
  std::string id;  // commId (or "ptr:host:pid:0x…" if unknown)
  int nranks = 0;
  std::set<int> ranks_started;
  std::set<int> ranks_completed;
  std::set<int> ranks_aborted;
  std::set<int> subjects;  // subject indices of members

  // Takes in `o`'s ranks and members (`subject` maps o's subject indices to
  // ours). The size: o's when `o_is_later` and o knows it (as an Init line
  // read later would set it), else ours unless we have none.
  template <typename SubjectMap>
  void Join(const CommInfo& o, bool o_is_later, SubjectMap subject) {
    if (o.nranks > 0 && (o_is_later || nranks == 0)) nranks = o.nranks;
    ranks_started.insert(o.ranks_started.begin(), o.ranks_started.end());
    ranks_completed.insert(o.ranks_completed.begin(), o.ranks_completed.end());
    ranks_aborted.insert(o.ranks_aborted.begin(), o.ranks_aborted.end());
    for (int s : o.subjects) subjects.insert(subject(s));
  }

  // Every rank that logged an init, completion or abort line for this communicator.
  std::set<int> RanksSeen() const {
    std::set<int> seen = ranks_started;
    seen.insert(ranks_completed.begin(), ranks_completed.end());
    seen.insert(ranks_aborted.begin(), ranks_aborted.end());
    return seen;
  }
};

struct CommTable {
  std::map<std::string, CommInfo> by_id;  // by commId
  // [subject]: 0xptr -> commId, every Init line of the input (later ones win);
  // pointer communicators are folded into their commId by
  // JobState::ResolvePointerComms.
  std::vector<std::map<std::string, std::string, std::less<>>> ptr;
  // The same, learned in the current file only (not encoded: a scan carries
  // no line context from one file into the next): lines are translated with
  // it as they come, so that a scan and a merge of one partial per file agree.
  std::vector<std::map<std::string, std::string, std::less<>>> file_ptr;
  std::map<int, std::map<std::string, int>> rank_in;  // subject -> commId -> rank

  // Whether communicator `id` is tracked or may still be (kMaxComms).
  bool CanTrack(const std::string& id) const { return by_id.size() < kMaxComms || by_id.count(id); }
  // The communicator `id`, created if the cap allows; nullptr past kMaxComms
  // (counted in *over_cap).
  CommInfo* For(const std::string& id, uint64_t* over_cap);
  // A communicator key names the pointer first and may go on after it ("0x55d0…
  // 2f": one call of that communicator): the key with its pointer replaced by
  // the commId `ptrs` gives it, or false when `ptrs` does not know the pointer.
  static bool TranslateKey(const std::map<std::string, std::string, std::less<>>& ptrs, std::string_view key,
                           std::string* out);
  void Encode(WireWriter* w) const;
  void Decode(WireReader* r, const Limits& l);
  void Absorb(CommTable&& later, const Remap& r, uint64_t* over_cap);
};

// ---- line findings ----

struct LineFindingAcc {
  int rule = -1;
  std::string group;                        // joined group_by values
  std::map<std::string, std::string> vars;  // template variables of the first occurrence
  std::set<int> subjects;
  std::vector<Evidence> evidence;
  int64_t count = 0;
  Seen first;
  int first_subject = -1;  // the subject of the line seen first (`first`)
  Seen last;
  std::string result;  // the ncclResult_t of the return-code chain that followed
};

struct LineFindingTable {
  std::map<std::string, LineFindingAcc> by_key;  // by rule id + group
  // Per subject: the finding of its last WARN line whose return-code chain
  // (identity `result`) has not been seen yet; "" when none is open.
  std::vector<std::string> open_warn;

  void Encode(WireWriter* w) const;
  void Decode(WireReader* r, const Limits& l);
  void Absorb(LineFindingTable&& later, const Remap& r);
};

// ---- identity clues ----

// What identity resolution (JobState::Finalize) reads besides the subjects.
struct IdentityClues {
  std::map<int, int> global_rank;                    // subject -> rank, from explicit identity
  std::map<std::string, std::string> address_owner;  // ip/host -> host
  // Wrapper label (kubectl pod, pdsh host) -> host names the labelled processes print themselves -> lines.
  std::map<std::string, std::map<std::string, int64_t>, std::less<>> hint_hosts;
  std::vector<std::string> address;  // first bootstrap/OOB address per subject
  std::vector<std::string> conflicts;

  // Distinct messages only, at most kMaxIdentityConflicts.
  void NoteConflict(const std::string& msg);
  // An explicit global rank for `subject` (the process `s`): the first one
  // named stays, a different one later is a conflict.
  void NameGlobalRank(int subject, int rank, const Subject& s);
  void Encode(WireWriter* w) const;
  void Decode(WireReader* r, const Limits& l);
  // Later assignments win, as they would line by line; the first bootstrap
  // address and the first global rank stay (`subjects` names a conflict).
  void Absorb(IdentityClues&& later, const Remap& r, const std::vector<Subject>& subjects);
};

// ---- Flight Recorder dumps ----

struct HeldDumps {
  std::vector<FrFile> files;
  size_t entries_held = 0;

  // Holds a dump read after those held, under the total bound of entries;
  // returns how many entries were not kept.
  uint64_t Add(FrFile f) { return HoldFlightRecorder(&files, &entries_held, std::move(f)); }
  void Encode(WireWriter* w) const;
  void Decode(WireReader* r);
  void Absorb(HeldDumps&& later, Counters* c);
};

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_STATE_PARTS_H_
