// Facts as the job state holds them: a value with the line that set it
// (Evidence, Seen), one subject's values by fact (FactSlots, KeyedSlots), and
// the one merge algebra that every path joining two values calls.
//
// Thread-safety: plain values; not synchronised.
#ifndef NCCLSCAN_ENGINE_STATE_FACTS_H_
#define NCCLSCAN_ENGINE_STATE_FACTS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parsers/parsed_line.h"
#include "parsers/text_util.h"
#include "rules/rule_set.h"

namespace ncclscan {

inline constexpr size_t kMaxEvidencePerFinding = 5;
inline constexpr size_t kMaxEvidenceText = 512;
inline constexpr size_t kMaxSetValues = 64;
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
  // The global rank the line names itself by ([rankN]:, [Rank N], [PG 0
  // Rank N]; SelfRank), -1 if none: where a report puts a line of a file
  // that several ranks wrote.
  int rank = -1;
  // The subject (JobState::subjects) the line was taken for, -1 when not
  // recorded (a fact's evidence: its subject holds it); JobState::EvidenceSubject.
  int subject = -1;
};

// The global rank a line names itself by, -1 if none: its [rankN]: prefix
// (not an srun task label), else a "[Rank N]" of the default process group.
inline int SelfRank(const ParsedLine& line) {
  if (line.rank_hint >= 0 && !line.rank_hint_is_label) return line.rank_hint;
  if (line.pg_rank >= 0 && (line.pg_id.empty() || line.pg_id == "0")) return line.pg_rank;
  return -1;
}

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
  int rank = -1;  // SelfRank
  // Line `line_no` of `file`, parsed as `line`.
  static EvidenceRef Of(int file, int64_t line_no, const ParsedLine& line) {
    EvidenceRef ev{file, line_no, line.text, line.time};
    ev.origin_file = line.src_file;
    ev.origin_line = line.src_line;
    ev.rank = SelfRank(line);
    return ev;
  }
  void CopyTo(Evidence* e) const {
    e->file = file;
    e->line = line;
    std::string_view t = CutUtf8(text, kMaxEvidenceText);  // never half a character
    e->text.assign(t.data(), t.size());
    e->time = time;
    e->rank = rank;
  }
  Seen seen() const { return Seen{time, file, line}; }
};

struct FactValue {
  std::string value;                // first/last/max/min
  std::vector<std::string> values;  // set (sorted, bounded)
  // FactSpec::fields of the line whose value is kept (empty: none declared,
  // or a line of a rule that set the fact before fields were required).
  std::vector<std::string> fields;
  int64_t count = 0;
  Evidence evidence;
  Seen seen;
};

// Field `f` (an enum of rules/engine_contract.h: CollField, P2pField, …) of
// a value; empty when the value carries none.
template <typename FieldEnum>
std::string_view FieldOf(const FactValue& v, FieldEnum f) {
  const size_t i = static_cast<size_t>(f);
  return i < v.fields.size() ? std::string_view(v.fields[i]) : std::string_view();
}

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
    if (it == slots_.end() || it->first != fact) {
      // Grown by half, not doubled: a subject carries from one fact to a
      // dozen, and a job thousands of subjects (a million in bench/memory.sh).
      if (slots_.size() == slots_.capacity()) {
        const size_t at = static_cast<size_t>(it - slots_.begin());
        slots_.reserve(slots_.size() + std::max<size_t>(1, slots_.size() / 2));
        it = slots_.begin() + static_cast<std::ptrdiff_t>(at);
      }
      it = slots_.emplace(it, fact, V());
    }
    return it->second;
  }
  // Room for `n` more values without growing (a merge reserves what it adds).
  void Reserve(size_t n) { slots_.reserve(slots_.size() + n); }
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

// ---- The one merge algebra of facts ----
//
// Every path that puts two values of one fact together calls MergeFact or
// MergeTakes: a line setting a fact (JobState::SetFact), a run of folded lines
// (the scanner's Folder), two subjects of one rank merging (Finalize), and a
// later state absorbed into an earlier one (JobState::Absorb, `merge`).

// How the incoming value stands to the one held: set on a later line of the
// same input (line by line, a fold, a later state absorbed), or from anywhere
// (subjects that merge), ordered by where each was seen.
enum class MergeOrder { kLater, kBySeen };

// Whether `incoming` (seen at `incoming_seen`) takes the place of `current`'s
// value and evidence: first keeps the earliest, last takes the latest,
// max/min the strictly greater/smaller; set and count keep no single value and
// cite their earliest line. A fact's placeholder ("unknown") loses to any other
// value, first.
bool MergeTakes(const FactSpec& spec, std::string_view incoming, const Seen& incoming_seen, std::string_view current,
                const Seen& current_seen, MergeOrder order);

// Adds `v` to a set fact's sorted values unless present or kMaxSetValues
// are already kept.
void InsertSetValue(std::vector<std::string>* values, std::string_view v);

// Folds `from` into `into`: counts add up, set values join, and the kept
// value travels with its fields and evidence (MergeTakes).
void MergeFact(const FactSpec& spec, FactValue* into, FactValue&& from, MergeOrder order);

// A windowed keyed fact keeps its latest keys (FactSpec::window): called
// before a key is added to `m`.
void TrimWindow(const FactSpec& spec, KeyedValues* m);

// Folds every fact of `from` into `into_facts` / `into_keyed` (one subject's
// facts into another's). A keyed fact past kMaxKeysPerFact keys drops the new
// keys and counts them in *over_key_cap; a windowed one trims instead.
void MergeFacts(const std::vector<FactSpec>& specs, FactSlots<FactValue>* into_facts, KeyedSlots* into_keyed,
                FactSlots<FactValue>&& from_facts, KeyedSlots&& from_keyed, MergeOrder order, uint64_t* over_key_cap);

class WireWriter;
class WireReader;
struct Limits;
// Their encodings (engine/state/wire.h); Get checks indices against `l`.
void Put(WireWriter* w, const Seen& s);
void Put(WireWriter* w, const Evidence& e);
void Put(WireWriter* w, const FactValue& v);
void Get(WireReader* r, Seen* s, const Limits& l);
void Get(WireReader* r, Evidence* e, const Limits& l);
void Get(WireReader* r, FactValue* v, const Limits& l);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_STATE_FACTS_H_
