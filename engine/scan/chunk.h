// The scanner's pipeline token (engine/scan/scanner.cc): a chunk of whole
// lines of one file and what the parallel stage found in it, and the pool that
// recycles chunks. Internal to engine/scan.
//
// Thread-safety: a Chunk belongs to one pipeline stage at a time; ChunkPool
// is thread-safe.
#ifndef NCCLSCAN_ENGINE_SCAN_CHUNK_H_
#define NCCLSCAN_ENGINE_SCAN_CHUNK_H_

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/state/job_state.h"
#include "parsers/line_parser.h"
#include "parsers/text_util.h"
#include "rules/rule_set.h"

namespace ncclscan {
namespace scan_detail {

// In a line longer than this (CR-only files, progress bars redrawn thousands of
// times on one line), a CR that does not end a CRLF ends a line too; shorter
// lines keep their CRs (the parser keeps the text after the last, a tqdm
// redraw). Lines are measured to their '\n', so the split does not depend on
// where chunks end (ChunkReader cuts a line at a CR only past this length).
inline constexpr ptrdiff_t kCrSplitMin = 4096;

// An allocator whose resize() leaves new chars uninitialised: a chunk's
// buffer is sized for its longest possible line (chunk_size + max_line, over
// 1 MiB) and zero-filling it touched every page, ten buffers' worth of RSS at
// -j2 for bytes mostly never read into.
template <typename T>
struct UninitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <typename U>
  UninitAllocator(const UninitAllocator<U>&) {}
  template <typename U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

struct MatchEvent {
  int rule;
  int num_groups;
  uint32_t group_begin;
};

struct LineEvent {
  ParsedLine line;
  uint32_t line_index;  // 0-based line within the chunk
  uint32_t match_begin;
  uint32_t match_end;
  int32_t fold = -1;  // >= 0: a folded run (Chunk::folds), `line` its first line
  // A continuation line before any line of this chunk that sets the rank
  // context: it inherits from the previous chunk, which the output stage knows.
  bool orphan = false;
};

// The rank context continuation lines inherit (see ParseChunk).
struct CarryRank {
  int rank = -1;
  int pg_rank = -1;
  std::string_view pg;
  bool is_label = false;
  void InheritTo(ParsedLine* pl) const {
    pl->rank_hint = rank;
    pl->rank_hint_is_label = is_label;
    pl->pg_rank = pg_rank;
    pl->pg_id = pg;
  }
};

// A run of matches of one foldable rule on lines of one process with no other
// match between them, reduced in the parallel stage to one entry per fact key:
// the line whose value the fact's merge keeps, and how many lines set it. The
// serial stage then does one update per entry instead of one per line (most
// lines of a traced job are COLL lines that only raise last_opcount).
struct FoldEntry {
  int fact;
  std::string_view key, value;  // into the chunk's data or arena
  uint32_t count;
  uint32_t line_index;
  std::string_view text;  // the kept line, for evidence
  double time;
  std::string_view src_file;  // its grep -H -n origin, if any
  int64_t src_line;
  // The kept line's values of the fact's fields (CompiledFact::fields), into
  // the chunk's data or arena; a fact with more does not fold.
  static constexpr size_t kMaxFields = JobState::kMaxFoldedFields;
  std::array<std::string_view, kMaxFields> fields;
  uint8_t num_fields;
};

struct FoldedRun {
  uint32_t lines;
  uint32_t entry_begin, entry_end;  // in Chunk::fold_entries
};

struct ProcessNote {
  std::string_view host;
  int64_t pid;
  uint32_t line_index = 0;  // its first line in the chunk (not part of its identity)
  bool operator==(const ProcessNote& o) const { return pid == o.pid && host == o.host; }
};

struct ProcessNoteHash {
  size_t operator()(const ProcessNote& p) const {
    return std::hash<std::string_view>()(p.host) * 31 + static_cast<size_t>(p.pid);
  }
};

// One pipeline token: a chunk of whole lines of one file, and what the
// parallel stage found in it. Views in the results point into `data`/`arena`.
struct Chunk {
  int file = -1;
  // Files the input stage opened since the previous chunk, this chunk's own
  // file last: the output stage registers them, so file numbers follow the
  // order files are read in (archive members are only known while reading).
  std::vector<std::string> new_files;
  std::vector<char, UninitAllocator<char>> data;
  size_t size = 0;
  bool overlong = false;  // the chunk ends with a line cut at max_line
  // It begins inside a line the previous chunk was cut in at a CR (a line with
  // no '\n' in the first kCrSplitMin bytes): that line's CRs end lines up to
  // its '\n', as they do in every line longer than kCrSplitMin (scanner.cc).
  bool cr_continues = false;
  // Its file's head ends most lines in CR alone: every CR ends a line.
  bool cr_lines = false;
  // Its file is an indented paste (PasteIndent): lines starting with this
  // indent are read without it.
  std::string indent;
  std::string_view Dedent(std::string_view row) const {
    if (!indent.empty() && StartsWith(row, indent)) row.remove_prefix(indent.size());
    return row;
  }
  // An srun label and an explicit [rankN] disagreed on a line: the first such
  // line; labels are no ranks from there on (JobState::NoteLabelsNotRanks).
  bool label_conflict = false;
  uint32_t label_conflict_index = 0;

  // Results of the parallel stage.
  uint32_t lines = 0;
  Counters counters;
  std::vector<LineEvent> events;
  std::vector<MatchEvent> matches;
  std::vector<re2::StringPiece> groups;
  std::vector<ProcessNote> processes;
  std::unordered_set<ProcessNote, ProcessNoteHash> process_seen;
  // The last line of each rank under its own prefix (JobState::NoteRankLine),
  // one per rank and process that printed it (a line naming no process: one
  // per rank): while parsing, the raw line and its index per key
  // (`rank_slots`, in first-seen order, found by `rank_slot_of`); at the end,
  // those lines parsed again, one per key (`rank_lines`). Keyed so, every
  // subject's last line is noted in every chunk it printed in: what it was
  // last is then the same whatever the chunk size.
  struct RankKey {
    int rank;
    std::string_view host;  // the process, or "" and -1
    int64_t pid;
    bool operator==(const RankKey& o) const { return rank == o.rank && pid == o.pid && host == o.host; }
  };
  struct RankKeyHash {
    size_t operator()(const RankKey& k) const {
      return std::hash<std::string_view>()(k.host) * 31 + static_cast<size_t>(k.pid) * 7 + static_cast<size_t>(k.rank);
    }
  };
  struct RankSlot {
    RankKey key;
    std::string_view raw;  // its last line
    uint32_t index = 0;
    // Its first line: a key of no process makes the rank's own subject there
    // (JobState::TouchRank), at the same line whatever the chunk size.
    uint32_t first_index = 0;
    bool first_is_label = false;
  };
  std::vector<RankSlot> rank_slots;
  std::unordered_map<RankKey, uint32_t, RankKeyHash> rank_slot_of;
  // Before the map: the slot of a (rank, pid) by a hash of both (host checked
  // on use), 0 or slot + 1. Interleaved streams change key on every line.
  static constexpr int kRankSlotCache = 256;
  std::array<uint32_t, kRankSlotCache> rank_slot_cache{};
  std::vector<LineEvent> rank_lines;
  std::vector<FoldedRun> folds;
  std::vector<FoldEntry> fold_entries;
  bool carry_set = false;  // some line set the rank context; `carry` is the last one
  CarryRank carry;
  bool after_last_error = false;  // the previous line was PyTorch's bare "Last error:"
  // The lines the chunk starts with that may continue an interface list left
  // open by the previous chunk of the file (LineParser::MayContinueInterfaceList):
  // the serial stage parses them again in that context (ContinueOpenList).
  struct LeadingLine {
    std::string_view raw;
    uint32_t index;
    Family family;  // as parsed without context
  };
  std::vector<LeadingLine> leading;
  bool all_leading = false;          // every line of the chunk is one of them
  LineParser::ListContext end_list;  // the list context the chunk's last line left

  // Per-token scratch, reused across chunks. `parser` starts every chunk with
  // no context (LineParser::ResetStream); `probe` serves trial parses
  // (JoinsHardWrap), which must not touch the stream's context.
  Arena arena;
  LineParser parser;
  LineParser probe;
  MatchScratch scratch;

  void Reset() {
    new_files.clear();
    size = 0;
    overlong = false;
    cr_continues = false;
    cr_lines = false;
    indent.clear();
    label_conflict = false;
    lines = 0;
    counters = Counters();
    events.clear();
    matches.clear();
    groups.clear();
    processes.clear();
    process_seen.clear();
    rank_slots.clear();
    rank_slot_of.clear();
    rank_slot_cache.fill(0);
    rank_lines.clear();
    folds.clear();
    fold_entries.clear();
    carry_set = false;
    carry = CarryRank();
    after_last_error = false;
    leading.clear();
    all_leading = false;
    arena.Reset();
  }
};

class ChunkPool {
 public:
  std::unique_ptr<Chunk> Get() {
    std::lock_guard<std::mutex> l(mu_);
    if (free_.empty()) return std::make_unique<Chunk>();
    auto c = std::move(free_.back());
    free_.pop_back();
    return c;
  }
  void Put(std::unique_ptr<Chunk> c) {
    std::lock_guard<std::mutex> l(mu_);
    free_.push_back(std::move(c));
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<Chunk>> free_;
};

}  // namespace scan_detail
}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_SCAN_CHUNK_H_
