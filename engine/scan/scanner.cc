#include "engine/scan/scanner.h"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_pipeline.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "engine/io/source.h"
#include "parsers/flight_recorder.h"
#include "parsers/line_parser.h"
#include "parsers/text_util.h"

namespace ncclscan {

namespace {

std::string DisplayName(const std::string& path) { return path == "-" ? "<stdin>" : path; }

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
  int32_t fold = -1;    // >= 0: a folded run (Chunk::folds), `line` its first line
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
};

struct FoldedRun {
  uint32_t lines;
  uint32_t entry_begin, entry_end;  // in Chunk::fold_entries
};

struct ProcessNote {
  std::string_view host;
  int64_t pid;
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
  std::vector<char> data;
  size_t size = 0;
  bool overlong = false;   // the chunk ends with a line cut at max_line
  bool cr_lines = false;   // its file ends lines with CR alone: split at every CR
  bool label_conflict = false;  // an srun label and an explicit [rankN] disagreed on a line

  // Results of the parallel stage.
  uint32_t lines = 0;
  Counters counters;
  std::vector<LineEvent> events;
  std::vector<MatchEvent> matches;
  std::vector<re2::StringPiece> groups;
  std::vector<ProcessNote> processes;
  std::unordered_set<ProcessNote, ProcessNoteHash> process_seen;
  std::vector<FoldedRun> folds;
  std::vector<FoldEntry> fold_entries;
  bool carry_set = false;  // some line set the rank context; `carry` is the last one
  CarryRank carry;
  // The lines the chunk starts with that may continue an interface list left
  // open by the previous chunk of the file (LineParser::MayContinueInterfaceList):
  // the serial stage parses them again in that context (ContinueOpenList).
  struct LeadingLine {
    std::string_view raw;
    uint32_t index;
    Family family;  // as parsed without context
  };
  std::vector<LeadingLine> leading;
  bool all_leading = false;  // every line of the chunk is one of them
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
    cr_lines = false;
    label_conflict = false;
    lines = 0;
    counters = Counters();
    events.clear();
    matches.clear();
    groups.clear();
    processes.clear();
    process_seen.clear();
    folds.clear();
    fold_entries.clear();
    carry_set = false;
    carry = CarryRank();
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

// Squeezes each run of NUL bytes in buf[0, n) to one NUL; returns the new size.
size_t SqueezeNulRuns(char* buf, size_t n) {
  size_t out = 0;
  for (size_t i = 0; i < n; ++i) {
    if (buf[i] == '\0' && out > 0 && buf[out - 1] == '\0') continue;
    buf[out++] = buf[i];
  }
  return out;
}

// Whether more lines of buf[0, n) end in a lone CR (not CR LF) than in '\n':
// a CR-only log, perhaps with a LF somewhere (its last line, a first line
// written by another program). A tqdm bar redrawn on a LF log is not: its
// redraws are far fewer than the log's lines.
bool MostlyLoneCrs(const char* buf, size_t n) {
  const char* cr = static_cast<const char*>(std::memchr(buf, '\r', n));
  if (!cr) return false;
  size_t lone = 0, lf = 0;
  for (const char* p = buf; p < buf + n; ++p) {
    if (*p == '\n') ++lf;
    if (*p == '\r' && (p + 1 == buf + n || p[1] != '\n')) ++lone;
  }
  return lone > lf;
}

// The serial input stage: turns inputs into chunks of whole lines of one file
// (a plain file, or one member of an archive). It runs concurrently with the
// serial output stage, so it never touches JobState: names, bytes and errors
// are kept here, names travel with the chunks, and the rest is copied over
// when the pipeline is done.
class ChunkReader {
 public:
  ChunkReader(const std::vector<InputPath>& inputs, int first_file, const ScanOptions& opts,
              const std::function<void(const std::string&)>& on_error)
      : inputs_(inputs), first_file_(first_file), opts_(opts), on_error_(on_error) {}

  size_t files() const { return names_.size(); }
  const std::string& name(size_t i) const { return names_[i]; }
  uint64_t bytes(size_t i) const { return bytes_[i]; }
  const std::string& error(size_t i) const { return errors_[i]; }
  const SkippedInputs& skipped() const { return skipped_; }
  // The Flight Recorder dumps read, in input order (for JobState after the pipeline).
  std::vector<FrFile>& dumps() { return dumps_; }
  // Flight Recorder entries not kept under the bound (HoldFlightRecorder).
  uint64_t fr_dropped() const { return fr_dropped_; }

  // Fills c with the next chunk; returns false at the end of all input.
  bool Next(Chunk* c) {
    for (;;) {
      if (!member_open_) {
        if (!input_) {
          if (next_input_ >= inputs_.size()) return false;
          const InputPath& in = inputs_[next_input_++];
          std::string err;
          input_ = InputReader::Open(in, &opts_.globs, &err);
          if (!input_) {
            Register(DisplayName(in.path));
            Fail(err);
            continue;
          }
          input_name_ = DisplayName(in.path);
        }
        std::string name, err;
        if (!input_->NextMember(&name, &err)) {
          if (!err.empty()) {
            // A damaged archive: the error belongs to the archive itself.
            Register(input_name_);
            Fail(err);
          }
          CloseInput();
          continue;
        }
        Register(name);
        member_open_ = true;
        failed_ = false;
        carry_.clear();
        skipping_ = false;
        cr_lines_ = false;
        first_chunk_ = true;
        // A Flight Recorder dump (or any pickle: never a log) is one value,
        // not lines: it is read whole here and gives no chunk.
        std::string_view head = input_->Head();
        if (LooksLikeFlightRecorder(head) || LooksLikePickle(head)) {
          ReadDump();
          continue;
        }
      }
      if (FillChunk(c)) {
        c->new_files.assign(names_.begin() + static_cast<std::ptrdiff_t>(sent_), names_.end());
        sent_ = names_.size();
        return true;
      }
    }
  }

 private:
  void Register(const std::string& name) {
    names_.push_back(name);
    bytes_.push_back(0);
    errors_.emplace_back();
    index_ = names_.size() - 1;
    file_ = first_file_ + static_cast<int>(index_);
  }

  // The current file could not be read (fully): FileInfo::error keeps the
  // reason, the message names the file.
  void Fail(const std::string& reason) {
    if (errors_[index_].empty()) errors_[index_] = reason;
    on_error_("cannot read " + names_[index_] + ": " + reason);
  }

  void CloseInput() {
    if (input_) skipped_.Merge(input_->skipped());
    input_.reset();
  }

  // Reads the current member whole (dumps are a few MiB: a ring buffer of
  // ~2000 entries) up to kMaxFlightRecorderBytes and parses it in this
  // stage, which never touches JobState: the dump waits in dumps_. A dump that
  // cannot be read or parsed is the file's error, like any unreadable input.
  void ReadDump() {
    std::string bytes, err;
    bool too_large = false;
    for (;;) {
      size_t have = bytes.size();
      if (have > kMaxFlightRecorderBytes) {
        too_large = true;
        break;
      }
      bytes.resize(have + (size_t{1} << 20));
      ssize_t r = input_->Read(&bytes[have], bytes.size() - have, &err);
      bytes.resize(have + static_cast<size_t>(std::max<ssize_t>(r, 0)));
      if (r < 0) {
        Fail(err);
        failed_ = true;
        break;
      }
      if (r == 0) break;
      bytes_[index_] += static_cast<uint64_t>(r);
      if (opts_.progress_bytes) opts_.progress_bytes->fetch_add(static_cast<uint64_t>(r), std::memory_order_relaxed);
    }
    EndMember();
    if (failed_) return;
    if (too_large) {
      Fail("Flight Recorder dump larger than " + std::to_string(kMaxFlightRecorderBytes >> 20) + " MiB");
      return;
    }
    FrFile f;
    f.path = names_[index_];
    f.rank = RankFromDumpName(f.path);
    if (!ParseFlightRecorder(bytes, &f.dump, &err)) {
      Fail(err);
      return;
    }
    fr_dropped_ += HoldFlightRecorder(&dumps_, &fr_held_, std::move(f));
  }

  // The current member is done; after a read error, so is its input unless
  // it reads on (a tar member whose own compression was damaged: the tar
  // itself goes on to the next header).
  void EndMember() {
    member_open_ = false;
    if (failed_ && !input_->ReadsOnAfterMemberError()) CloseInput();
  }

  // Reads until the buffer holds at least one whole line (or the file ends).
  // Returns false when the current file is finished without producing a chunk.
  bool FillChunk(Chunk* c) {
    c->file = file_;
    std::vector<char>& buf = c->data;
    size_t want = opts_.chunk_size + opts_.max_line + 1;
    if (buf.size() < want) buf.resize(want);
    size_t n = carry_.size();
    if (n) std::memcpy(buf.data(), carry_.data(), n);
    carry_.clear();
    bool eof = false;
    for (;;) {
      // Read up to chunk_size new bytes.
      size_t limit = std::min(buf.size(), n + opts_.chunk_size);
      while (n < limit) {
        if (failed_) {  // the member's reader failed: what it gave is all there is
          eof = true;
          break;
        }
        std::string err;
        ssize_t r = input_->Read(buf.data() + n, limit - n, &err);
        if (r < 0) {
          Fail(err);
          failed_ = true;
          eof = true;
          break;
        }
        if (r == 0) {
          eof = true;
          break;
        }
        bytes_[index_] += static_cast<uint64_t>(r);
        if (opts_.progress_bytes) opts_.progress_bytes->fetch_add(static_cast<uint64_t>(r), std::memory_order_relaxed);
        // Fill the chunk completely (or to EOF) even from a pipe: chunk
        // boundaries must not depend on how the writer's data arrived, or the
        // output would (continuation lines inherit ranks within a chunk).
        n += static_cast<size_t>(r);
      }
      if (skipping_) {
        // Discard the rest of an overlong line.
        const void* nl = std::memchr(buf.data(), '\n', n);
        if (!nl) {
          n = 0;
          if (eof) break;
          continue;
        }
        size_t k = static_cast<const char*>(nl) - buf.data() + 1;
        std::memmove(buf.data(), buf.data() + k, n - k);
        n -= k;
        skipping_ = false;
      }
      const void* last = n ? memrchr(buf.data(), '\n', n) : nullptr;
      if (!last && n >= opts_.max_line) {
        // A zero-filled hole (what a file system leaves after a crash) is no
        // text, and the parser drops NULs anyway: each run of them counts as
        // one byte, so a hole longer than max_line does not make the line
        // after it overlong (cut away unseen).
        size_t m = SqueezeNulRuns(buf.data(), n);
        if (m < n) {
          n = m;
          if (!eof) continue;
        }
      }
      // A file whose lines end in CR alone (old Mac, some terminal captures):
      // most line ends of its first chunk are lone CRs, or a whole chunk has
      // no '\n'; its chunks end after their last CR and every CR ends a line.
      if (first_chunk_) {
        first_chunk_ = false;
        if (!cr_lines_ && MostlyLoneCrs(buf.data(), n)) cr_lines_ = true;
      }
      if (!last && (cr_lines_ || n >= std::min(opts_.chunk_size, opts_.max_line))) {
        last = memrchr(buf.data(), '\r', n);
        if (last) cr_lines_ = true;
      }
      c->cr_lines = cr_lines_;
      if (last) {
        size_t k = static_cast<const char*>(last) - buf.data() + 1;
        carry_.assign(buf.data() + k, n - k);
        c->size = k;
        // At EOF a final line without '\n' stays in carry_ and is sent by the next call.
        if (eof && carry_.empty()) EndMember();
        return true;
      }
      if (n >= opts_.max_line) {
        // One line longer than max_line: keep its head, skip the rest.
        c->size = opts_.max_line;
        c->overlong = true;
        skipping_ = true;
        if (eof) EndMember();
        return true;
      }
      if (eof) {
        EndMember();
        if (n == 0) return false;
        c->size = n;  // last line without trailing newline
        return true;
      }
    }
    EndMember();
    return false;
  }

  const std::vector<InputPath>& inputs_;
  const int first_file_;
  const ScanOptions& opts_;
  const std::function<void(const std::string&)>& on_error_;
  std::vector<std::string> names_;  // files registered, in reading order
  std::vector<uint64_t> bytes_;
  std::vector<std::string> errors_;
  std::vector<FrFile> dumps_;
  size_t fr_held_ = 0;
  uint64_t fr_dropped_ = 0;
  size_t sent_ = 0;                 // names_ handed to chunks so far
  SkippedInputs skipped_;
  size_t next_input_ = 0;
  std::unique_ptr<InputReader> input_;
  std::string input_name_;
  bool member_open_ = false;
  bool failed_ = false;
  size_t index_ = 0;
  int file_ = -1;                   // index_ as a JobState file number
  std::string carry_;
  bool skipping_ = false;
  bool cr_lines_ = false;  // this file had a chunk's worth of bytes without '\n' but with CRs
  bool first_chunk_ = false;  // the current member has not sent a chunk yet
};

// Builds the folded runs of one chunk (see FoldEntry).
class Folder {
 public:
  Folder(const RuleSet& rules, Chunk* c) : rules_(rules), c_(c) {}

  // Takes the single match of line `index` if its rule folds; false if the
  // caller must record it as a plain event (the run, if any, is then closed).
  bool Add(const ParsedLine& pl, uint32_t index, const MatchEvent& me) {
    const CompiledRule& r = rules_.rules()[me.rule];
    if (!r.foldable || pl.host.empty() || pl.pid < 0) {
      Flush();
      return false;
    }
    if (me.rule != rule_ || !SameText(pl.host, first_.host) || pl.pid != first_.pid || pl.rank_hint != first_.rank_hint ||
        pending_.size() >= kMaxEntries) {
      Flush();
      rule_ = me.rule;
      first_ = pl;
      first_index_ = index;
    }
    ++lines_;
    const MatchVars var{r, c_->groups.data() + me.group_begin, me.num_groups};
    for (const CompiledFact& cf : r.facts) {
      const FactSpec& spec = rules_.facts()[cf.fact];
      std::string_view key = spec.keyed ? Stable(var.Render(cf.key, &buf_)) : std::string_view();
      std::string_view value = Stable(var.Render(cf.value, &buf_));
      FoldEntry* e = nullptr;
      for (FoldEntry& x : pending_) {
        if (x.fact == cf.fact && SameText(x.key, key)) {
          e = &x;
          break;  // one entry per (fact, key)
        }
      }
      if (!e) {
        pending_.push_back(FoldEntry{cf.fact, key, value, 1, index, pl.text, pl.time, pl.src_file, pl.src_line});
        continue;
      }
      ++e->count;
      if (MergeReplaces(spec, value, e->value)) {  // as JobState::SetFact decides
        e->value = value;
        e->line_index = index;
        e->text = pl.text;
        e->time = pl.time;
        e->src_file = pl.src_file;
        e->src_line = pl.src_line;
      }
    }
    return true;
  }

  void Flush() {
    if (lines_ == 0) return;
    uint32_t begin = static_cast<uint32_t>(c_->fold_entries.size());
    c_->fold_entries.insert(c_->fold_entries.end(), pending_.begin(), pending_.end());
    c_->folds.push_back(FoldedRun{lines_, begin, static_cast<uint32_t>(c_->fold_entries.size())});
    LineEvent ev{first_, first_index_, 0, 0};
    ev.fold = static_cast<int32_t>(c_->folds.size()) - 1;
    c_->events.push_back(ev);
    pending_.clear();
    lines_ = 0;
    rule_ = -1;
  }

 private:
  static constexpr size_t kMaxEntries = 32;

  // A rendered value that lives in buf_ is copied to the chunk's arena.
  std::string_view Stable(std::string_view v) {
    if (!buf_.empty() && v.data() == buf_.data()) return c_->arena.Store(v);
    return v;
  }

  const RuleSet& rules_;
  Chunk* c_;
  int rule_ = -1;
  ParsedLine first_;
  uint32_t first_index_ = 0;
  uint32_t lines_ = 0;
  std::vector<FoldEntry> pending_;
  std::string buf_;
};

// What the rules make of one line alone: 2 a specific finding, 1 only a
// catch-all's, 0 none; and how many bytes the specific findings' rules
// captured (a line cut short matches tolerant patterns with less). For the
// hard-wrap decision only (rare lines).
struct Strength {
  int level = 0;
  size_t captured = 0;
};
Strength FindingStrength(const RuleSet& rules, Chunk* c, std::string_view raw, Family* family) {
  Strength best;
  *family = Family::kOther;
  c->probe.ResetStream();
  c->probe.ParseEach(raw, &c->arena, [&](ParsedLine& pl, int piece) {
    if (piece == 0) *family = pl.family;
    rules.Match(pl, &c->scratch, [&](int ri, const re2::StringPiece* g, int n) {
      const CompiledRule& r = rules.rules()[ri];
      if (!r.has_finding) return;
      best.level = std::max(best.level, r.spec.fallback ? 1 : 2);
      if (r.spec.fallback) return;
      for (int i = 1; i < n; ++i) best.captured += g[i].size();
    });
  });
  return best;
}

// A terminal that hard-wraps at a fixed column cuts a long line mid-word and
// the rest lands on the next line without any header:
//   "... WorkNCCL(SeqNum=9387, OpType=ALLREDUCE, NumelIn=1, N" / "umelOut=1, Timeout(ms)=600000) ran for …"
// The two are joined when the first is long, ends mid-token, the second has no
// header and starts mid-token, and the joined line gives a specific finding
// that the first alone does not, or the same with more captured (a tolerant
// pattern matches the cut line too). (Both must be in one chunk: a wrap that
// straddles a chunk boundary stays two lines.)
constexpr size_t kMinWrapWidth = 79;
// A wrap may fall right after a space ("... PG status: " / "last enqueued work: ..."):
// the strength test below decides; a line that ends a sentence is not cut.
bool WrapTail(char ch) { return ch != '.' && ch != ';'; }
bool WrapHead(char ch) { return IsDigit(ch) || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == ')' || ch == ','; }

bool JoinsHardWrap(const RuleSet& rules, Chunk* c, std::string_view first, std::string_view next,
                   std::string_view* joined) {
  if (first.size() < kMinWrapWidth || next.empty() || !WrapTail(first.back()) || !WrapHead(next[0])) return false;
  // Another rank's line glued at the end of this one is the line that wraps.
  const std::string_view whole = first;
  if (first[0] == '[') first.remove_prefix(LastGluedRankPrefix(first));
  // Cheap tests first, before any parse. A continuation has no header: a next
  // line that starts like this one (the same "host:pid:tid" or "[rankN]:"
  // prefix) is a line of its own, and so is one with an NCCL keyword.
  const size_t same = std::min<size_t>({8, first.size(), next.size()});
  if (EqualBytes(first.data(), next.data(), same)) return false;
  static const LiteralFinder kNcclLevel("NCCL ");
  if (kNcclLevel.Find(next) != std::string_view::npos) return false;
  // Only NCCL and PyTorch (ProcessGroupNCCL / WorkNCCL) messages are worth a
  // second look; this keeps long application lines at one parse each.
  static const LiteralFinder kNccl("NCCL");
  if (kNccl.Find(first) == std::string_view::npos) return false;
  Family fam;
  // A line cut after a blank ("… Watchdog caught ") was wrapped mid-sentence:
  // its continuation may read as a PyTorch fragment by itself ("collective
  // operation timeout: WorkNCCL(…) ran for …") and is still joined when the
  // whole says strictly more than either part.
  const Strength next_alone = FindingStrength(rules, c, next, &fam);
  const bool mid_sentence = first.back() == ' ' && next[0] != '[' && fam == Family::kTorch;
  if (!mid_sentence && (next_alone.level != 0 || fam != Family::kOther)) return false;
  Family first_fam;
  const Strength alone = FindingStrength(rules, c, first, &first_fam);
  if (first_fam == Family::kOther) return false;
  std::string both(first);
  both.append(next.data(), next.size());
  std::string_view j = c->arena.Store(both);
  const Strength with_next = FindingStrength(rules, c, j, &fam);
  if (with_next.level != 2 || (alone.level == 2 && with_next.captured <= alone.captured)) return false;
  if (next_alone.level != 0 && with_next.captured <= next_alone.captured) return false;
  if (whole.size() != first.size()) {  // the glued lines before it stay in front
    std::string all(whole);
    all.append(next.data(), next.size());
    j = c->arena.Store(all);
  }
  *joined = j;
  return true;
}

void ParseChunk(const RuleSet& rules, bool fold, Chunk* c) {
  const char* p = c->data.data();
  const char* end = p + c->size;
  uint32_t index = 0;
  std::string_view last_host;
  int64_t last_pid = -1;
  // PyTorch messages span several physical lines (wrapped text, "Last error:",
  // what() copies); continuation lines have no header and inherit the rank of
  // the last c10 line before them. Those before the chunk's first such line
  // are marked orphans and get the previous chunk's context in the output stage,
  // so results do not depend on where chunks end.
  CarryRank& carry = c->carry;
  Folder folder(rules, c);
  // Context from earlier lines belongs to the file's stream: none here, the
  // serial stage brings the previous chunk's (see Chunk::leading).
  c->parser.ResetStream();
  bool leading = true;
  // In a line longer than kCrSplitMin, a CR that does not end a CRLF ends a
  // line too (CR-only files).
  // Only a line longer than kCrSplitMin is looked at for CRs, so ordinary
  // lines pay nothing; the '\n' found is kept for the CR-split pieces of one
  // long line (a CR-only chunk has none, and searching again per piece would be
  // quadratic).
  constexpr ptrdiff_t kCrSplitMin = 4096;
  const char* next_nl = nullptr;  // the next '\n' at or after p (end if none), once known
  while (p < end) {
    if (next_nl == nullptr || next_nl < p) {
      next_nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
      if (next_nl == nullptr) next_nl = end;
    }
    const char* nl = next_nl < end ? next_nl : nullptr;
    const char* le = next_nl;
    // The last line of a file without '\n' may be a whole small CR-only file.
    if (c->cr_lines || le - p > kCrSplitMin || nl == nullptr) {
      const char* cr = static_cast<const char*>(std::memchr(p, '\r', le - p));
      if (cr && cr + 1 < le) {
        nl = cr;
        le = cr;
      }
    }
    std::string_view raw(p, le - p);
    p = nl ? nl + 1 : end;
    c->counters.lines++;
    uint32_t consumed = 0;
    if (raw.size() >= kMinWrapWidth && p < end) {
      // Peek at the next physical line (a lone CR ends it too, as above).
      const char* nnl = static_cast<const char*>(std::memchr(p, '\n', end - p));
      next_nl = nnl ? nnl : end;  // the next iteration's line end, found once
      const char* nle = next_nl;
      if (c->cr_lines || nle - p > kCrSplitMin || nnl == nullptr) {
        const char* cr = static_cast<const char*>(std::memchr(p, '\r', nle - p));
        if (cr && cr + 1 < nle) nnl = nle = cr;
      }
      std::string_view joined;
      if (JoinsHardWrap(rules, c, raw, std::string_view(p, nle - p), &joined)) {
        raw = joined;
        p = nnl ? nnl + 1 : end;
        c->counters.lines++;
        c->counters.wrapped_joined++;
        consumed = 1;  // the continuation's line; evidence cites the first
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
      if (piece == 0) {
        if (pl.binary) c->counters.binary_lines++;
        if (pl.had_nul) c->counters.nul_lines++;
        if (pl.bad_number) c->counters.bad_numbers++;
        c->counters.family_lines[static_cast<int>(pl.family)]++;
      } else {
        c->counters.glued_lines++;
      }
      bool orphan = false;
      if (pl.severity != 0 || pl.family == Family::kNccl ||
          (pl.family == Family::kTorch && (pl.rank_hint >= 0 || pl.pg_rank >= 0))) {
        carry = CarryRank{pl.rank_hint, pl.family == Family::kTorch ? pl.pg_rank : -1, pl.pg_id, pl.rank_hint_is_label};
        c->carry_set = true;
      } else if (pl.family == Family::kTorch && pl.rank_hint < 0 && pl.pg_rank < 0) {
        carry.InheritTo(&pl);
        orphan = !c->carry_set;
      }
      if (!pl.host.empty() && pl.pid >= 0 && (pl.pid != last_pid || !SameText(pl.host, last_host))) {
        last_host = pl.host;
        last_pid = pl.pid;
        // Interleaved dumps alternate between many processes: a set, not a scan.
        if (c->process_seen.insert(ProcessNote{pl.host, pl.pid}).second) {
          c->processes.push_back(ProcessNote{pl.host, pl.pid});
        }
      }
      if (pl.LabelIsNotRank()) c->label_conflict = true;
      uint32_t mbegin = static_cast<uint32_t>(c->matches.size());
      rules.Match(pl, &c->scratch, [&](int rule, const re2::StringPiece* g, int n) {
        c->matches.push_back(MatchEvent{rule, n, static_cast<uint32_t>(c->groups.size())});
        c->groups.insert(c->groups.end(), g, g + n);
      });
      uint32_t mend = static_cast<uint32_t>(c->matches.size());
      if (mend == mbegin) return;
      if (fold && mend == mbegin + 1 && folder.Add(pl, index, c->matches[mbegin])) {
        c->groups.resize(c->matches[mbegin].group_begin);
        c->matches.resize(mbegin);
        return;
      }
      folder.Flush();
      c->events.push_back(LineEvent{pl, index, mbegin, mend});
      c->events.back().orphan = orphan;
    });
    if (!candidate) leading = false;
    index += 1 + consumed;
  }
  c->all_leading = leading;
  c->end_list = c->parser.list_context();
  folder.Flush();
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
      tbb::make_filter<void, Chunk*>(tbb::filter_mode::serial_in_order,
                                     [&](tbb::flow_control& fc) -> Chunk* {
                                       auto c = pool.Get();
                                       c->Reset();
                                       if (!reader.Next(c.get())) {
                                         pool.Put(std::move(c));
                                         fc.stop();
                                         return nullptr;
                                       }
                                       return c.release();
                                     }) &
          tbb::make_filter<Chunk*, Chunk*>(tbb::filter_mode::parallel,
                                           [&](Chunk* c) {
                                             ParseChunk(*rules_, opts_.fold, c);
                                             return c;
                                           }) &
          tbb::make_filter<Chunk*, void>(tbb::filter_mode::serial_in_order, [&](Chunk* c) {
            std::unique_ptr<Chunk> owned(c);
            for (const std::string& name : c->new_files) state->AddFile(name);
            // Lines of the file counted so far (0 for a file registered just now).
            uint64_t base = state->file(c->file).lines;
            for (const ProcessNote& pn : c->processes) state->NoteProcess(c->file, pn.host, pn.pid);
            if (c->label_conflict) state->NoteLabelsNotRanks(c->file);
            // Context from the previous chunk of the same file, for orphans.
            if (c->file != carry_file) {
              carry_file = c->file;
              last_carry = CarryRank();
              open_list = LineParser::ListContext();
            }
            const uint32_t continued = ContinueOpenList(*rules_, c, base, state, &list_parser, &list_scratch,
                                                        &open_list, &last_carry, &last_carry_pg);
            for (LineEvent& e : c->events) {
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
                  folded.push_back(JobState::FoldedFact{fe.fact, fe.key, fe.value, fe.count, ev});
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
