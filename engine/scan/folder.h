// The scanner's folder (engine/scan/scanner.cc): runs of one process's lines
// that one foldable rule matches, folded in the parallel stage into one event
// of a chunk. Internal to engine/scan.
//
// Thread-safety: one per chunk being parsed.
#ifndef NCCLSCAN_ENGINE_SCAN_FOLDER_H_
#define NCCLSCAN_ENGINE_SCAN_FOLDER_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/scan/chunk.h"
#include "engine/state/facts.h"
#include "parsers/text_util.h"
#include "rules/rule_set.h"

namespace ncclscan {
namespace scan_detail {

// Builds the folded runs of one chunk (see FoldEntry): consecutive lines of one
// process that one foldable rule matches become one event. A run stays open
// while other processes' lines come between (one srun -l file interleaves
// every rank's lines): facts are per subject, and a subject's lines still apply
// in their order, since any other line of that process closes its run first.
// A line without a process (no NCCL header) closes every run. Run events take
// their first line's place among the chunk's events (ParseChunk sorts them).
class Folder {
 public:
  Folder(const RuleSet& rules, Chunk* c) : rules_(rules), c_(c) {}

  // Takes the single match of line `index` if its rule folds; false if the
  // caller must record it as a plain event (the line's process's run, if any,
  // is then closed).
  bool Add(const ParsedLine& pl, uint32_t index, const MatchEvent& me) {
    const CompiledRule& r = rules_.rules()[me.rule];
    if (!r.foldable || pl.host.empty() || pl.pid < 0 || !FieldsFit(r)) {
      FlushFor(pl);
      return false;
    }
    Run* open = &RunOf(pl);
    if (open->lines > 0 && (me.rule != open->rule || open->pending.size() >= kMaxEntries)) {
      Flush(open);
      open = &RunOf(pl);  // the process's next run
    }
    Run& run = *open;
    if (run.lines == 0) {
      run.rule = me.rule;
      run.first = pl;
      run.first_index = index;
    }
    ++run.lines;
    const MatchVars var{r, c_->groups.data() + me.group_begin, me.num_groups};
    for (const CompiledFact& cf : r.facts) {
      const FactSpec& spec = rules_.facts()[cf.fact];
      std::string_view key = spec.keyed ? Stable(var.Render(cf.key, &buf_)) : std::string_view();
      std::string_view value = Stable(var.Render(cf.value, &buf_));
      FoldEntry* e = nullptr;
      for (FoldEntry& x : run.pending) {
        if (x.fact == cf.fact && SameText(x.key, key)) {
          e = &x;
          break;  // one entry per (fact, key)
        }
      }
      if (!e) {
        run.pending.push_back(
            FoldEntry{cf.fact, key, value, 1, index, pl.text, pl.time, pl.src_file, pl.src_line, {}, 0});
        KeepFields(cf, var, &run.pending.back());
        continue;
      }
      ++e->count;
      if (MergeTakes(spec, value, {}, e->value, {}, MergeOrder::kLater)) {  // as JobState::SetFact decides
        e->value = value;
        e->line_index = index;
        e->text = pl.text;
        e->time = pl.time;
        e->src_file = pl.src_file;
        e->src_line = pl.src_line;
        KeepFields(cf, var, e);
      }
    }
    return true;
  }

  // Closes the runs a plain event of `pl` must follow: its process's, or
  // every run when the line names no process.
  void FlushFor(const ParsedLine& pl) {
    if (!pl.host.empty() && pl.pid >= 0) {
      const uint16_t at = slot_[SlotOf(pl)];
      if (at != kNoRun && SameProcess(runs_[at], pl)) Flush(&runs_[at]);  // a slot names open runs only
      return;
    }
    FlushAll();
  }

  void FlushAll() {
    for (Run& run : runs_) Flush(&run);
  }

 private:
  static constexpr size_t kMaxEntries = 32;
  static constexpr size_t kMaxRuns = 128;  // open at once; past it one closes
  static constexpr int kSlotBits = 12;
  static constexpr uint16_t kNoRun = 0xffff;

  struct Run {
    int rule = -1;
    ParsedLine first;
    uint32_t first_index = 0;
    uint32_t lines = 0;
    uint16_t slot = kNoRun;  // its index in slot_ while it has one
    std::vector<FoldEntry> pending;
  };

  static bool SameProcess(const Run& run, const ParsedLine& pl) {
    return run.first.pid == pl.pid && run.first.rank_hint == pl.rank_hint && SameText(run.first.host, pl.host);
  }

  // The slot of pl's process (its srun label too) in slot_.
  static size_t SlotOf(const ParsedLine& pl) {
    return SpreadBits(static_cast<uint64_t>(pl.pid) * 31 + static_cast<uint64_t>(pl.rank_hint) +
                      std::hash<std::string_view>()(pl.host)) >>
           (64 - kSlotBits);
  }

  // The run of pl's process, opened if none is. A process's open run is
  // always the one its slot names (slot_): a process that takes the slot of
  // another's open run closes that run first. Interleaved lines switch process
  // on nearly every line, and a wide job has far more processes than runs, so
  // the lookup is one probe, never a search. Closing a run early only makes
  // two events of what would have been one.
  Run& RunOf(const ParsedLine& pl) {
    uint16_t& at = slot_[SlotOf(pl)];
    if (at != kNoRun) {
      Run& run = runs_[at];
      if (SameProcess(run, pl)) return run;
      Flush(&run);  // another process's run under this slot
    }
    size_t free = runs_.size();
    if (!free_.empty()) {
      free = free_.back();
      free_.pop_back();
    } else if (runs_.size() < kMaxRuns) {
      runs_.emplace_back();
    } else {
      // Every run is open: close the next one round the clock.
      free = clock_;
      clock_ = (clock_ + 1) % runs_.size();
      Flush(&runs_[free]);
      free_.pop_back();  // the one Flush just freed
    }
    runs_[free].slot = static_cast<uint16_t>(&at - slot_.data());
    at = static_cast<uint16_t>(free);
    return runs_[free];
  }

  void Flush(Run* run) {
    if (run->lines == 0) return;
    uint32_t begin = static_cast<uint32_t>(c_->fold_entries.size());
    c_->fold_entries.insert(c_->fold_entries.end(), run->pending.begin(), run->pending.end());
    c_->folds.push_back(FoldedRun{run->lines, begin, static_cast<uint32_t>(c_->fold_entries.size())});
    LineEvent ev{run->first, run->first_index, 0, 0};
    ev.fold = static_cast<int32_t>(c_->folds.size()) - 1;
    c_->events.push_back(ev);
    run->pending.clear();
    run->lines = 0;
    run->rule = -1;
    slot_[run->slot] = kNoRun;  // only open runs are named by a slot
    free_.push_back(static_cast<uint16_t>(run - runs_.data()));
  }

  static bool FieldsFit(const CompiledRule& r) {
    for (const CompiledFact& cf : r.facts) {
      if (cf.fields.size() > FoldEntry::kMaxFields) return false;
    }
    return true;
  }
  // The entry's line is now `var`'s: its fields with it.
  void KeepFields(const CompiledFact& cf, const MatchVars& var, FoldEntry* e) {
    e->num_fields = static_cast<uint8_t>(cf.fields.size());
    for (size_t i = 0; i < cf.fields.size(); ++i) e->fields[i] = Stable(var.Render(cf.fields[i], &buf_));
  }

  // A rendered value that lives in buf_ is copied to the chunk's arena.
  std::string_view Stable(std::string_view v) {
    if (!buf_.empty() && v.data() == buf_.data()) return c_->arena.Store(v);
    return v;
  }

  const RuleSet& rules_;
  Chunk* c_;
  std::vector<Run> runs_;
  std::vector<uint16_t> free_;  // runs not open (lines == 0), by index
  size_t clock_ = 0;            // the run to close next when every run is open
  // By a hash of the process (host, pid, label): the index of its open run, or kNoRun.
  std::array<uint16_t, size_t{1} << kSlotBits> slot_ = NoRuns();
  static std::array<uint16_t, size_t{1} << kSlotBits> NoRuns() {
    std::array<uint16_t, size_t{1} << kSlotBits> a;
    a.fill(kNoRun);
    return a;
  }
  std::string buf_;
};

}  // namespace scan_detail
}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_SCAN_FOLDER_H_
