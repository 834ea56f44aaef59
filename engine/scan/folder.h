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
    Run& run = RunOf(pl);
    if (run.lines > 0 && (me.rule != run.rule || run.pending.size() >= kMaxEntries)) Flush(&run);
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
    const bool process = !pl.host.empty() && pl.pid >= 0;
    for (Run& run : runs_) {
      if (run.lines > 0 && (!process || SameProcess(run, pl))) Flush(&run);
    }
  }

  void FlushAll() {
    for (Run& run : runs_) Flush(&run);
  }

 private:
  static constexpr size_t kMaxEntries = 32;
  static constexpr size_t kMaxRuns = 128;  // open at once; past it the oldest closes

  struct Run {
    int rule = -1;
    ParsedLine first;
    uint32_t first_index = 0;
    uint32_t lines = 0;
    std::vector<FoldEntry> pending;
  };

  static bool SameProcess(const Run& run, const ParsedLine& pl) {
    return run.first.pid == pl.pid && run.first.rank_hint == pl.rank_hint && SameText(run.first.host, pl.host);
  }

  // The run of pl's process (its srun label too), opened if none is.
  Run& RunOf(const ParsedLine& pl) {
    // A hint by pid first: interleaved lines switch process on every line.
    uint16_t& hint = hint_[SpreadBits(static_cast<uint64_t>(pl.pid) + static_cast<uint64_t>(pl.rank_hint)) >> 56];
    if (hint < runs_.size() && runs_[hint].lines > 0 && SameProcess(runs_[hint], pl)) return runs_[hint];
    size_t free = runs_.size(), oldest = runs_.size();
    for (size_t i = 0; i < runs_.size(); ++i) {
      if (runs_[i].lines == 0) {
        if (free == runs_.size()) free = i;
      } else if (SameProcess(runs_[i], pl)) {
        hint = static_cast<uint16_t>(i);
        return runs_[i];
      } else if (oldest == runs_.size() || runs_[i].first_index < runs_[oldest].first_index) {
        oldest = i;
      }
    }
    if (free == runs_.size()) {
      if (runs_.size() < kMaxRuns) {
        runs_.emplace_back();
      } else {
        Flush(&runs_[oldest]);
        free = oldest;
      }
    }
    hint = static_cast<uint16_t>(free);
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
  std::array<uint16_t, 256> hint_{};  // by a hash of pid and label: a run index to try first
  std::string buf_;
};

}  // namespace scan_detail
}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_SCAN_FOLDER_H_
