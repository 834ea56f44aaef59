#include "engine/scan/scanner.h"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_pipeline.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_set>

#include "engine/io/source.h"
#include "engine/scan/chunk.h"
#include "engine/scan/chunk_reader.h"
#include "engine/scan/folder.h"
#include "engine/scan/hard_wrap.h"
#include "parsers/flight_recorder.h"
#include "parsers/line_parser.h"
#include "parsers/text_util.h"
#include "parsers/wrappers.h"

namespace ncclscan {

namespace {

using scan_detail::CarryRank;
using scan_detail::Chunk;
using scan_detail::ChunkPool;
using scan_detail::ChunkReader;
using scan_detail::FoldedRun;
using scan_detail::FoldEntry;
using scan_detail::Folder;
using scan_detail::HardWrapGate;
using scan_detail::kMinWrapWidth;
using scan_detail::LineEvent;
using scan_detail::MatchEvent;
using scan_detail::NamesNccl;
using scan_detail::ProcessNote;
using scan_detail::TrimWrapPadding;
using scan_detail::WrapGate;

// What the rules make of one line alone: 2 a specific finding, 1 only a
// catch-all's, 0 none; and how many bytes the specific findings' rules
// captured (a line cut short matches tolerant patterns with less). For the
// hard-wrap decision only (rare lines).
struct Strength {
  int level = 0;
  size_t captured = 0;  // bytes the specific rules captured
  int groups = 0;       // captures they filled (a join that only lengthens one says no more)
  int rules = 0;        // specific rules that matched
};
Strength FindingStrength(const RuleSet& rules, Chunk* c, std::string_view raw, Family* family) {
  Strength best;
  *family = Family::kOther;
  c->probe.ResetStream();
  c->probe.ParseEach(raw, &c->arena, [&](ParsedLine& pl, int piece) {
    if (piece == 0) *family = pl.family;
    rules.Match(pl, &c->scratch, [&](int ri, const re2::StringPiece* g, int n) {
      const CompiledRule& r = rules.rules()[ri];
      if (!r.has_finding && (r.facts.empty() || r.spec.fallback)) return;
      best.level = std::max(best.level, r.spec.fallback ? 1 : 2);
      if (r.spec.fallback) return;
      ++best.rules;
      for (int i = 1; i < n; ++i) {
        best.captured += g[i].size();
        best.groups += !g[i].empty();
      }
    });
  });
  return best;
}

// A terminal that hard-wraps at a fixed column cuts a long line mid-word and
// the rest lands on the next line without any header:
//   "... WorkNCCL(SeqNum=9387, OpType=ALLREDUCE, NumelIn=1, N" / "umelOut=1, Timeout(ms)=600000) ran for …"
// The two are joined when their bytes allow it (HardWrapGate, hard_wrap.h) and
// the joined line gives a specific finding that the first alone does not, or
// the same with more captured (a tolerant pattern matches the cut line too).
// Both are always in one chunk: the reader never cuts between such lines.
bool JoinsHardWrap(const RuleSet& rules, Chunk* c, std::string_view first, std::string_view next,
                   std::string_view* joined) {
  // A CRLF file's lines end in '\r', a paste from tmux or screen in the blanks
  // that pad it to the terminal's width: the wrap is judged, and joined,
  // without them. A line cut after a blank fills the width and ends in that one
  // blank; more blanks are padding, of a line that ended there.
  const bool cut_at_blank = TrimWrapPadding(&first) == 1;
  TrimWrapPadding(&next);
  if (HardWrapGate(first, cut_at_blank, next, true) == WrapGate::kNo) return false;
  // Only a row some rule could read is worth a second look: one that names
  // NCCL (ProcessGroupNCCL, WorkNCCL), or holds one of the rules' key atoms (a
  // launcher's, a crash handler's, a store's line); a long line of the
  // application's own output stays at one parse.
  const bool names_nccl = NamesNccl(first);
  if (!names_nccl) {
    c->scratch.atoms.clear();
    rules.matcher().FindAll(first, &c->scratch.atoms, &c->scratch.seen);
    if (c->scratch.atoms.empty()) {
      // The cut may fall inside the atom ("… only subset of ranks is submitting" /
      // " tensors, which will cause deadlock."): the two rows together hold it.
      std::string rows(first);
      if (cut_at_blank) rows += ' ';
      rows.append(next.data(), next.size());
      rules.matcher().FindAll(rows, &c->scratch.atoms, &c->scratch.seen);
      if (c->scratch.atoms.empty()) return false;
    }
  }
  if (cut_at_blank) {
    // The one blank is kept as a space: the line's own byte when it is one (no copy).
    if (first.data()[first.size()] == ' ') {
      first = std::string_view(first.data(), first.size() + 1);
    } else {
      std::string padded(first);
      padded += ' ';
      first = c->arena.Store(padded);
    }
  }
  // Another rank's line glued at the end of this one is the line that wraps.
  const std::string_view whole = first;
  if (first[0] == '[') first.remove_prefix(LastGluedRankPrefix(first));
  Family fam;
  // A line cut after a blank ("… Watchdog caught ") was wrapped mid-sentence:
  // its continuation may read as a PyTorch fragment by itself ("collective
  // operation timeout: WorkNCCL(…) ran for …") and is still joined when the
  // whole says strictly more than either part.
  const Strength next_alone = FindingStrength(rules, c, next, &fam);
  const bool mid_sentence = first.back() == ' ' && next[0] != '[' && fam == Family::kTorch;
  // A row cut mid-word ("… Watchdog cau" / "ght collective operation timeout: WorkNCCL(…")
  // may read as a PyTorch fragment too; it has no finding of its own.
  const bool mid_word = IsAlpha(first.back()) && IsAlpha(next[0]) && next[0] >= 'a' && fam == Family::kTorch;
  if (!mid_sentence && (next_alone.level != 0 || (fam != Family::kOther && !mid_word))) return false;
  std::string both(first);
  both.append(next.data(), next.size());
  std::string_view j = c->arena.Store(both);
  const Strength with_next = FindingStrength(rules, c, j, &fam);
  if (with_next.level != 2) return false;  // (the first row alone is not read for nothing)
  const Strength alone = FindingStrength(rules, c, first, &fam);
  if (alone.level == 2 && with_next.captured <= alone.captured) return false;
  // A row that does not name NCCL (a launcher's, a store's, a crash handler's)
  // is joined only when the whole fills more captures or matches more rules:
  // "… of binary: /usr/bin/python" / "Traceback (most recent call last):" only
  // lengthens a capture that ends the line.
  if (!names_nccl && alone.level == 2 && with_next.groups <= alone.groups && with_next.rules <= alone.rules) {
    return false;
  }
  if (next_alone.level != 0 && with_next.captured <= next_alone.captured) return false;
  if (whole.size() != first.size()) {  // the glued lines before it stay in front
    std::string all(whole);
    all.append(next.data(), next.size());
    j = c->arena.Store(all);
  }
  *joined = j;
  return true;
}

// A third (fourth, …) row of a line JoinsHardWrap joined: `row`, the row just
// joined, filled the terminal as wide as the first (`width`), and the whole
// with `next` says strictly more than without it ("… NumelOut=1, Timeout(ms)="
// / "600000) ran for 600081 milliseconds before timing out.").
bool JoinsWrapContinuation(const RuleSet& rules, Chunk* c, std::string_view joined, std::string_view row, size_t width,
                           std::string_view next, std::string_view* out) {
  const bool blank = TrimWrapPadding(&row) == 1;
  TrimWrapPadding(&next);
  if (row.size() + (blank ? 1 : 0) != width) return false;
  if (HardWrapGate(row, blank, next, true) == WrapGate::kNo) return false;
  Family fam;
  const Strength next_alone = FindingStrength(rules, c, next, &fam);
  if (next_alone.level != 0 || fam != Family::kOther) return false;
  std::string_view tail = joined;
  if (tail[0] == '[') tail.remove_prefix(LastGluedRankPrefix(tail));
  const Strength before = FindingStrength(rules, c, tail, &fam);
  std::string both(joined);
  if (blank) both += ' ';
  both.append(next.data(), next.size());
  const std::string_view j = c->arena.Store(both);
  tail = j.substr(joined.size() - tail.size());
  const Strength after = FindingStrength(rules, c, tail, &fam);
  if (after.level != 2 || after.captured <= before.captured) return false;
  *out = j;
  return true;
}

// Remembers raw line `index` as the latest in this chunk of its rank under its
// process (ranks past kMaxNotedRank are not noted: a rank hint that large is a
// misread number).
void RememberRankLine(Chunk* c, const ParsedLine& pl, std::string_view raw, uint32_t index) {
  constexpr int kMaxNotedRank = 1 << 16;
  const int rank = pl.rank_hint;
  if (rank >= kMaxNotedRank) return;
  const bool process = !pl.host.empty() && pl.pid >= 0;
  const Chunk::RankKey key{rank, process ? pl.host : std::string_view(), process ? pl.pid : -1};
  uint32_t& cached = c->rank_slot_cache[SpreadBits(static_cast<uint64_t>(key.pid) * 65599 + rank) >> 56];
  uint32_t k = cached - 1;
  if (cached == 0 || !(c->rank_slots[k].key == key)) {
    auto [it, added] = c->rank_slot_of.try_emplace(key, static_cast<uint32_t>(c->rank_slots.size()));
    if (added) c->rank_slots.push_back(Chunk::RankSlot{key, raw, index, index, pl.rank_hint_is_label});
    k = it->second;
    cached = k + 1;
  }
  c->rank_slots[k].raw = raw;
  c->rank_slots[k].index = index;
}

// CutLine's place: the next '\n' (end if none), found once for the CR-split
// pieces of a long line (per piece would be quadratic), and whether the line,
// measured from its start, is longer than kCrSplitMin (chunk.h).
struct LineCut {
  const char* next_nl = nullptr;
  bool long_line = false;
};

// The end of the piece that starts at p: *le where its text ends, the return
// value where the next starts (end if none). In a long line (or a CR-only
// file) a CR that does not end a CRLF ends a piece; other lines pay nothing.
const char* CutLine(const Chunk& c, const char* p, const char* end, LineCut* cut, const char** le) {
  if (cut->next_nl == nullptr || cut->next_nl < p) {
    // p starts a line (or the chunk, perhaps inside a line cut at a CR).
    cut->next_nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
    if (cut->next_nl == nullptr) cut->next_nl = end;
    cut->long_line = cut->next_nl - p > scan_detail::kCrSplitMin || (p == c.data.data() && c.cr_continues);
  }
  const char* nl = cut->next_nl < end ? cut->next_nl : nullptr;
  *le = cut->next_nl;
  // A chunk's last line without '\n': a small CR-only file, or cut at a CR.
  if (c.cr_lines || cut->long_line || nl == nullptr) {
    const char* cr = static_cast<const char*>(std::memchr(p, '\r', *le - p));
    if (cr && cr + 1 < *le) nl = *le = cr;
  }
  return nl ? nl + 1 : end;
}

// The detail PyTorch appends to an NCCL error (NCCLUtils: "ncclRemoteError: A
// call failed …", "Last error:", then the last NCCL WARN's text) has no prefix
// of its own: it belongs to the rank whose error line it continues.
bool IsNcclErrorDetail(std::string_view text) {
  text = TrimSpace(text);
  if (StartsWith(text, "Last error:")) return true;
  if (!StartsWith(text, "nccl") || text.size() < 6 || text[4] < 'A' || text[4] > 'Z') return false;
  size_t i = 5;
  while (i < text.size() && IsAlpha(text[i])) ++i;
  return i + 1 < text.size() && text[i] == ':' && text[i + 1] == ' ';
}

// Counts a parsed line (or glued piece), carries its rank context to the
// continuation lines after it, and notes the process that printed it. True
// when the line is an orphan: a continuation before any line of the chunk
// that sets the context (the output stage gives it the previous chunk's).
bool NoteLine(Chunk* c, ParsedLine& pl, int piece, std::string_view raw, uint32_t index, std::string_view* last_host,
              int64_t* last_pid) {
  if (piece == 0) {
    if (pl.rank_hint >= 0) RememberRankLine(c, pl, raw, index);  // its own prefix, not inherited context
    if (pl.binary) c->counters.binary_lines++;
    if (pl.had_nul) c->counters.nul_lines++;
    if (pl.bad_number) c->counters.bad_numbers++;
    if (pl.year) c->counters.NoteYear(pl.year);
    c->counters.family_lines[static_cast<int>(pl.family)]++;
  } else {
    c->counters.glued_lines++;
  }
  bool orphan = false;
  CarryRank& carry = c->carry;
  const bool detail = pl.family == Family::kOther && (c->after_last_error || IsNcclErrorDetail(pl.text));
  c->after_last_error = pl.family == Family::kOther && TrimSpace(pl.text) == "Last error:";
  if (pl.severity != 0 || pl.family == Family::kNccl ||
      (pl.family == Family::kTorch && (pl.rank_hint >= 0 || pl.pg_rank >= 0))) {
    carry = CarryRank{pl.rank_hint, pl.family == Family::kTorch ? pl.pg_rank : -1, pl.pg_id, pl.rank_hint_is_label};
    c->carry_set = true;
  } else if ((pl.family == Family::kTorch || detail) && pl.rank_hint < 0 && pl.pg_rank < 0) {
    carry.InheritTo(&pl);
    orphan = !c->carry_set;
  }
  if (!pl.host.empty() && pl.pid >= 0 && (pl.pid != *last_pid || !SameText(pl.host, *last_host))) {
    *last_host = pl.host;
    *last_pid = pl.pid;
    // Interleaved dumps alternate between many processes: a set, not a scan.
    if (c->process_seen.insert(ProcessNote{pl.host, pl.pid}).second)
      c->processes.push_back(ProcessNote{pl.host, pl.pid, index});
  }
  if (pl.LabelIsNotRank() && !c->label_conflict) {
    c->label_conflict = true;
    c->label_conflict_index = index;
  }
  return orphan;
}

// The rules' matches of one parsed line: folded into the current run when the
// line's only match folds, else an event of their own.
void MatchLine(const RuleSet& rules, bool fold, const ParsedLine& pl, uint32_t index, bool orphan, Folder* folder,
               Chunk* c) {
  uint32_t mbegin = static_cast<uint32_t>(c->matches.size());
  rules.Match(pl, &c->scratch, [&](int rule, const re2::StringPiece* g, int n) {
    c->matches.push_back(MatchEvent{rule, n, static_cast<uint32_t>(c->groups.size())});
    c->groups.insert(c->groups.end(), g, g + n);
  });
  uint32_t mend = static_cast<uint32_t>(c->matches.size());
  if (mend == mbegin) return;
  if (fold && mend == mbegin + 1 && folder->Add(pl, index, c->matches[mbegin])) {
    c->groups.resize(c->matches[mbegin].group_begin);
    c->matches.resize(mbegin);
    return;
  }
  folder->FlushFor(pl);
  c->events.push_back(LineEvent{pl, index, mbegin, mend});
  c->events.back().orphan = orphan;
}

// One line per rank, its last, parsed again (a trial parse: one per rank, not
// one copy per line of an interleaved log).
void ParseRankLines(Chunk* c) {
  for (const Chunk::RankSlot& slot : c->rank_slots) {
    c->probe.ResetStream();
    c->probe.ParseEach(slot.raw, &c->arena, [&](ParsedLine& pl, int piece) {
      if (piece == 0 && pl.rank_hint == slot.key.rank) c->rank_lines.push_back(LineEvent{pl, slot.index, 0, 0});
    });
  }
}

void ParseChunk(const RuleSet& rules, bool fold, Chunk* c) {
  const char* p = c->data.data();
  const char* end = p + c->size;
  uint32_t index = 0;
  std::string_view last_host;
  int64_t last_pid = -1;
  // PyTorch messages span several physical lines (wrapped text, "Last error:",
  // what() copies); continuation lines have no header and inherit the rank of
  // the last c10 line before them (NoteLine), so results do not depend on
  // where chunks end.
  Folder folder(rules, c);
  // Context from earlier lines belongs to the file's stream: none here, the
  // serial stage brings the previous chunk's (see Chunk::leading).
  c->parser.ResetStream();
  bool leading = true;
  LineCut cut;
  while (p < end) {
    const char* le;
    const char* start = p;
    p = CutLine(*c, p, end, &cut, &le);
    std::string_view raw = c->Dedent(std::string_view(start, le - start));
    c->counters.lines++;
    uint32_t consumed = 0;
    if (raw.size() >= kMinWrapWidth && p < end) {
      // Peek at the next physical line; the next iteration reuses its '\n'.
      const char* nle;
      const char* after = CutLine(*c, p, end, &cut, &nle);
      std::string_view joined;
      std::string_view row = c->Dedent(std::string_view(p, nle - p));
      if (JoinsHardWrap(rules, c, raw, row, &joined)) {
        // The width of the first row, which every further row must fill.
        std::string_view first_row = raw;
        const bool first_blank = TrimWrapPadding(&first_row) == 1;
        const size_t width = first_row.size() + (first_blank ? 1 : 0);
        raw = joined;
        p = after;
        c->counters.lines++;
        c->counters.wrapped_joined++;
        consumed = 1;  // the continuation's line; evidence cites the first
        // More rows of the same line, each as wide as the first.
        while (p < end && consumed < scan_detail::kMaxWrapRows) {
          const char* nle2;
          const char* after2 = CutLine(*c, p, end, &cut, &nle2);
          std::string_view more;
          const std::string_view next_row = c->Dedent(std::string_view(p, nle2 - p));
          if (!JoinsWrapContinuation(rules, c, raw, row, width, next_row, &more)) break;
          row = next_row;
          raw = more;
          p = after2;
          c->counters.lines++;
          c->counters.wrapped_joined++;
          ++consumed;
        }
      }
    }
    bool candidate = false;
    c->parser.ParseEach(raw, &c->arena, [&](ParsedLine& pl, int piece) {
      if (piece == 0 && leading && consumed == 0 && LineParser::MayContinueInterfaceList(pl)) {
        candidate = true;
        c->leading.push_back(Chunk::LeadingLine{raw, index, pl.family});
      } else if (piece > 0 && candidate) {  // glued pieces: not a line of only items
        candidate = false;
        c->leading.pop_back();
      }
      const bool orphan = NoteLine(c, pl, piece, raw, index, &last_host, &last_pid);
      MatchLine(rules, fold, pl, index, orphan, &folder, c);
    });
    if (!candidate) leading = false;
    index += 1 + consumed;
  }
  ParseRankLines(c);
  c->all_leading = leading;
  c->end_list = c->parser.list_context();
  folder.FlushAll();
  // A run's event was added when the run closed: back to its first line's place.
  std::stable_sort(c->events.begin(), c->events.end(),
                   [](const LineEvent& a, const LineEvent& b) { return a.line_index < b.line_index; });
  if (c->overlong) c->counters.overlong_lines++;
  c->lines = index;
}

// The serial stage's half of Chunk::leading: the chunk's first lines parsed
// again in the list context the previous chunk of the file left (*open), as a
// sequential read would have parsed them. Those that continue the list are
// applied here, as the joined list line, with the rank context they set
// (*carry, its pg in *carry_pg); the parallel stage's events for them are then
// skipped (their line indexes are below the returned bound, 0 if none).
// *open becomes the context after the chunk when every line of it was leading.
uint32_t ContinueOpenList(const RuleSet& rules, Chunk* c, uint64_t base, JobState* state, LineParser* parser,
                          MatchScratch* scratch, LineParser::ListContext* open, CarryRank* carry,
                          std::string* carry_pg) {
  if (!open->open() || c->leading.empty()) {
    if (!c->all_leading) *open = c->end_list;
    return 0;
  }
  parser->ResetStream();
  parser->SetListContext(*open);
  uint32_t bound = 0;
  for (const Chunk::LeadingLine& l : c->leading) {
    bool continued = false;
    parser->ParseEach(l.raw, &c->arena, [&](ParsedLine& pl, int piece) {
      if (piece != 0 || pl.family != Family::kNccl) return;
      continued = true;
      c->counters.family_lines[static_cast<int>(l.family)]--;
      c->counters.family_lines[static_cast<int>(Family::kNccl)]++;
      carry_pg->assign(pl.pg_id.data(), pl.pg_id.size());
      *carry = CarryRank{pl.rank_hint, -1, *carry_pg, pl.rank_hint_is_label};
      rules.Match(pl, scratch, [&](int rule, const re2::StringPiece* g, int n) {
        state->Apply(c->file, static_cast<int64_t>(base + l.index + 1), pl, rule, g, n);
      });
    });
    if (!continued) break;
    bound = l.index + 1;
  }
  *open = c->all_leading ? parser->list_context() : c->end_list;
  return bound;
}

}  // namespace

void Scanner::Scan(const std::vector<std::string>& paths, JobState* state,
                   const std::function<void(const std::string&)>& on_error) {
  std::vector<InputPath> inputs;
  for (const auto& p : paths) inputs.push_back(InputPath{p, false, false});
  Scan(inputs, state, on_error);
}

void Scanner::Scan(const std::vector<InputPath>& inputs, JobState* state,
                   const std::function<void(const std::string&)>& on_error) {
  int jobs = opts_.jobs > 0 ? opts_.jobs : tbb::info::default_concurrency();
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(jobs));
  ChunkPool pool;
  // Files are registered by the output stage as their first chunk arrives (the
  // stages run on different threads and JobState is written by the output
  // stage only), the rest after the pipeline.
  const int first_file = static_cast<int>(state->files().size());
  ChunkReader reader(inputs, first_file, opts_, on_error);
  // Chunks in flight: enough that a worker rarely waits on the in-order stages
  // (measured: 4 per thread beat 2 per thread by ~4% wall at -j2); each costs
  // about chunk_size plus its parse results, so their number is bounded
  // whatever -j says: memory must not grow with the thread count (-j16 had
  // 66 in flight, 73 MiB against 22 MiB at -j1).
  const size_t tokens = std::min<size_t>(static_cast<size_t>(jobs) * 4 + 2, kMaxChunksInFlight);
  std::vector<JobState::FoldedFact> folded;  // output-stage scratch
  // ... and the chunk's notes in line order.
  struct Note {
    enum Kind : uint8_t { kLabels, kProcess, kRank, kRankLine };
    uint32_t line_index;
    Kind kind;
    uint32_t item;  // index into Chunk::processes, rank_slots or rank_lines
    bool operator<(const Note& o) const {
      return std::tie(line_index, kind, item) < std::tie(o.line_index, o.kind, o.item);
    }
  };
  std::vector<Note> notes;
  // Output stage: the rank context at the end of the last chunk applied
  // (`last_carry.pg` views `last_carry_pg`: the chunk's buffer is recycled).
  int carry_file = -1;
  CarryRank last_carry;
  std::string last_carry_pg;
  // ... and the interface list it left open (see ContinueOpenList).
  LineParser::ListContext open_list;
  LineParser list_parser;
  MatchScratch list_scratch;

  tbb::parallel_pipeline(
      tokens,
      tbb::make_filter<void, Chunk*>(tbb::filter_mode::serial_in_order, [&](tbb::flow_control& fc) -> Chunk* {
        auto c = pool.Get();
        c->Reset();
        if (!reader.Next(c.get())) {
          pool.Put(std::move(c));
          fc.stop();
          return nullptr;
        }
        return c.release();
      }) & tbb::make_filter<Chunk*, Chunk*>(tbb::filter_mode::parallel, [&](Chunk* c) {
        if (opts_.on_text) opts_.on_text(std::string_view(c->data.data(), c->size));
        ParseChunk(*rules_, opts_.fold, c);
        return c;
      }) & tbb::make_filter<Chunk*, void>(tbb::filter_mode::serial_in_order, [&](Chunk* c) {
        std::unique_ptr<Chunk> owned(c);
        for (const std::string& name : c->new_files) state->AddFile(name);
        // Lines of the file counted so far (0 for a file registered just now).
        uint64_t base = state->file(c->file).lines;
        // The chunk's notes (labels that are no ranks, processes, ranks, ranks'
        // last lines) are applied at their lines, between the events: subjects
        // are then made in the order of the lines that name them, and labels
        // stop being ranks at the same line, whatever the chunk size.
        notes.clear();
        if (c->label_conflict) notes.push_back(Note{c->label_conflict_index, Note::kLabels, 0});
        for (size_t i = 0; i < c->processes.size(); ++i) {
          notes.push_back(Note{c->processes[i].line_index, Note::kProcess, static_cast<uint32_t>(i)});
        }
        for (size_t i = 0; i < c->rank_slots.size(); ++i) {
          const Chunk::RankSlot& slot = c->rank_slots[i];
          if (slot.key.pid < 0) notes.push_back(Note{slot.first_index, Note::kRank, static_cast<uint32_t>(i)});
        }
        for (size_t i = 0; i < c->rank_lines.size(); ++i) {
          notes.push_back(Note{c->rank_lines[i].line_index, Note::kRankLine, static_cast<uint32_t>(i)});
        }
        std::sort(notes.begin(), notes.end());
        size_t next_note = 0;
        auto notes_through = [&](uint64_t index) {
          for (; next_note < notes.size() && notes[next_note].line_index <= index; ++next_note) {
            const Note& n = notes[next_note];
            if (n.kind == Note::kLabels) {
              state->NoteLabelsNotRanks(c->file);
            } else if (n.kind == Note::kProcess) {
              const ProcessNote& pn = c->processes[n.item];
              state->NoteProcess(c->file, pn.host, pn.pid);
            } else if (n.kind == Note::kRank) {
              const Chunk::RankSlot& slot = c->rank_slots[n.item];
              state->TouchRank(c->file, slot.key.rank, slot.first_is_label);
            } else {
              const LineEvent& rl = c->rank_lines[n.item];
              state->NoteRankLine(c->file, static_cast<int64_t>(base + rl.line_index + 1), rl.line);
            }
          }
        };
        // Context from the previous chunk of the same file, for orphans.
        if (c->file != carry_file) {
          carry_file = c->file;
          last_carry = CarryRank();
          open_list = LineParser::ListContext();
        }
        const uint32_t continued = ContinueOpenList(*rules_, c, base, state, &list_parser, &list_scratch, &open_list,
                                                    &last_carry, &last_carry_pg);
        for (LineEvent& e : c->events) {
          notes_through(e.line_index);
          if (e.line_index < continued) continue;  // applied by ContinueOpenList
          if (e.orphan) last_carry.InheritTo(&e.line);
          if (e.fold >= 0) {
            const FoldedRun& run = c->folds[e.fold];
            folded.clear();
            for (uint32_t k = run.entry_begin; k < run.entry_end; ++k) {
              const FoldEntry& fe = c->fold_entries[k];
              int64_t line_no = static_cast<int64_t>(base + fe.line_index + 1);
              EvidenceRef ev{c->file, line_no, fe.text, fe.time};
              ev.origin_file = fe.src_file;
              ev.origin_line = fe.src_line;
              ev.rank = SelfRank(e.line);  // a run's lines share their rank prefix
              folded.push_back(JobState::FoldedFact{fe.fact, fe.key, fe.value, fe.count, ev, fe.fields, fe.num_fields});
            }
            state->ApplyFolded(c->file, e.line, run.lines, folded.data(), static_cast<int>(folded.size()));
            continue;
          }
          for (uint32_t m = e.match_begin; m < e.match_end; ++m) {
            const MatchEvent& me = c->matches[m];
            state->Apply(c->file, static_cast<int64_t>(base + e.line_index + 1), e.line, me.rule,
                         c->groups.data() + me.group_begin, me.num_groups);
          }
        }
        notes_through(UINT64_MAX);
        if (c->carry_set) {
          last_carry_pg.assign(c->carry.pg.data(), c->carry.pg.size());
          last_carry = c->carry;
          last_carry.pg = last_carry_pg;
        }
        state->file(c->file).lines += c->lines;
        state->counters().Add(c->counters);
        pool.Put(std::move(owned));
      }));
  // Files that gave no chunk (empty, unreadable) after the last chunk.
  for (size_t i = state->files().size() - static_cast<size_t>(first_file); i < reader.files(); ++i) {
    state->AddFile(reader.name(i));
  }
  for (size_t i = 0; i < reader.files(); ++i) {
    FileInfo& f = state->file(first_file + static_cast<int>(i));
    f.bytes = reader.bytes(i);
    f.error = reader.error(i);
  }
  state->skipped().Merge(reader.skipped());
  state->counters().over_fr_entry_cap += reader.fr_dropped();
  for (FrFile& d : reader.dumps()) state->AddFlightRecorder(std::move(d));
  uint64_t bytes = 0;
  for (const auto& f : state->files()) bytes += f.bytes;
  state->counters().bytes = bytes;
}

}  // namespace ncclscan
