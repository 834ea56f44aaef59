// LineParser: turns one raw physical line into one or more ParsedLines.
//
//   raw bytes -> unwrap (grep/srun/MPI/torchrun/kubectl/ray/docker/shipper/ANSI/CRLF)
//             -> NCCL header | c10/glog header -> family (nccl/torch/elastic/other)
//
// Unwrapping keeps what wrappers say (rank hint, host, timestamp, origin file and
// line). Two NCCL lines glued into one physical line come back one at a time:
// Parse() returns the remainder in *rest, and the caller calls Parse() again.
//
// Thread-safety: a LineParser holds scratch state (the simdjson parser); use one
// per thread. Output views point into `raw` or into `arena`.
#ifndef NCCLSCAN_PARSERS_LINE_PARSER_H_
#define NCCLSCAN_PARSERS_LINE_PARSER_H_

#include <memory>
#include <string>
#include <string_view>

#include "parsers/arena.h"
#include "parsers/parsed_line.h"
#include "parsers/wrappers.h"

namespace ncclscan {

// Another rank's output glued onto a line ("[default0]:Grouping texts: 8%|…
// examples/s][default2]:[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught…",
// a progress bar redrawn without a newline): the position of the second
// "[defaultN]:" / "[rankN]:" prefix of the kind the line starts with, 0 if none
// (the parser splits the line there), and of the last such prefix.
size_t GluedRankPrefix(std::string_view raw);
size_t LastGluedRankPrefix(std::string_view raw);

class LineParser {
 public:
  LineParser();
  ~LineParser();
  LineParser(const LineParser&) = delete;
  LineParser& operator=(const LineParser&) = delete;

  // Parses `raw` (one line without its '\n'). Returns the logical line in *out and
  // sets *rest to a glued second line (empty if none).
  void Parse(std::string_view raw, Arena* arena, ParsedLine* out, std::string_view* rest);

  // Parses one physical line into its logical lines (a glued second NCCL line
  // included, up to kMaxGluedPieces) and calls fn(ParsedLine&, piece) for each;
  // later pieces inherit the wrapper hints of the physical line.
  static constexpr int kMaxGluedPieces = 8;
  template <typename F>
  void ParseEach(std::string_view raw, Arena* arena, F&& fn) {
    if (raw.empty()) return;
    ParsedLine pl;
    std::string_view rest;
    ParseFresh(raw, arena, &pl, &rest);
    if (rest.empty()) {  // nearly every line: one piece
      fn(pl, 0);
      return;
    }
    const int rank = pl.rank_hint, local_rank = pl.local_rank_hint, label = pl.label;
    const bool is_label = pl.rank_hint_is_label;
    const std::string_view host = pl.host_hint;
    const double time = pl.time;
    fn(pl, 0);
    for (int piece = 1; piece < kMaxGluedPieces && !rest.empty(); ++piece) {
      std::string_view next;
      Parse(rest, arena, &pl, &next);
      if (pl.rank_hint < 0) {
        pl.rank_hint = rank;
        pl.rank_hint_is_label = is_label;
      }
      if (pl.label < 0) pl.label = label;
      if (pl.local_rank_hint < 0) pl.local_rank_hint = local_rank;
      if (pl.host_hint.empty()) pl.host_hint = host;
      if (pl.time < 0) pl.time = time;
      fn(pl, piece);
      rest = next;
    }
  }

  // Bounds of an interface list joined from re-wrapped lines (see list_): NCCL
  // lists at most 32 devices, and its own line buffer is smaller than the text bound.
  static constexpr int kMaxListItems = 32;
  static constexpr size_t kMaxListText = 2048;

  // The context a line leaves for the lines after it in the same stream: the
  // last line when it ended inside a "Using [0]… [1]…" interface list. A next
  // line of only the following items is that line continued, and parses as the
  // list joined so far (each continuation re-matches the whole list, so a fact
  // taken from it ends up with every item). Bounded by kMaxListItems and
  // kMaxListText: each continuation stores the list so far.
  //
  // It belongs to one file's sequential stream, not to the parser: the scanner
  // resets it at every chunk (ResetStream) and carries it from one chunk to the
  // next of the same file in its serial stage (list_context / SetListContext),
  // so results depend neither on the thread count nor on which pooled parser a
  // chunk gets.
  struct ListContext {
    int next = -1;     // index of the next item; -1: no list open
    std::string text;  // the joined line so far
    size_t message_at = 0;
    std::string host, host_hint, src_file;  // the views of `line`, kept
    ParsedLine line;                        // header and wrapper fields; its views are cleared
    bool continued = false;                 // the current line was a continuation
    bool open() const { return next >= 0; }
  };
  const ListContext& list_context() const { return list_; }
  void SetListContext(const ListContext& c) { list_ = c; }
  // Forgets everything earlier lines left: the open list and the header cache.
  void ResetStream();
  // Whether `line`, parsed without context, could continue an open interface
  // list (a line of only "[N]name:addr<port>" items): the lines a chunk starts
  // with that the serial stage parses again with the previous chunk's context.
  static bool MayContinueInterfaceList(const ParsedLine& line);

  // Stage 1 alone: strips outer wrappers, filling text and the hint fields.
  void Unwrap(std::string_view raw, Arena* arena, ParsedLine* out);

 private:
  bool UnwrapDockerJson(std::string_view s, Arena* arena, ParsedLine* out);

  // Parse() into a default-initialised *out.
  void ParseFresh(std::string_view raw, Arena* arena, ParsedLine* out, std::string_view* rest);
  void ParseFreshPieces(std::string_view raw, Arena* arena, ParsedLine* out, std::string_view* rest);
  bool ParseRepeatedHeader(std::string_view raw, ParsedLine* out, std::string_view* rest);
  // Interface lists re-wrapped one item per line (see nccl_fragments.h).
  void NoteInterfaceList(const ParsedLine& line);
  bool ContinueInterfaceList(Arena* arena, ParsedLine* out);

  struct Json;
  std::unique_ptr<Json> json_;
  NcclProcess bare_;         // what Unwrap's bare-line check matched on the final text
  bool bare_clean_ = false;  // ... on the raw line itself, which had no control byte
  // The last clean bare NCCL header ("host:pid:tid [dev] NCCL LEVEL ") and
  // what it parsed to (see ParseRepeatedHeader).
  struct RepeatHeader {
    std::string bytes;  // empty: none yet
    size_t host_len = 0;
    int64_t pid = -1, tid = -1;
    int dev = -1;
    NcclLevel level = NcclLevel::kNone;
  } repeat_;
  ListContext list_;
};

// Stage 2 pieces, exposed for tests. Both look at line->text and fill the
// header fields, message and family on success.
bool ParseNcclHeader(ParsedLine* line, std::string_view* rest);
// Ends line->text where a glued second line `rest` (a view into it) begins.
void CutGluedText(ParsedLine* line, std::string_view rest);
bool ParseTorchHeader(ParsedLine* line);
// Family for lines without a recognised header (continuations, tracebacks).
Family ClassifyHeaderless(std::string_view text);

}  // namespace ncclscan

#endif  // NCCLSCAN_PARSERS_LINE_PARSER_H_
