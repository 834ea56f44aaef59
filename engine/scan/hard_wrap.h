// The cheap half of the hard-wrap join (scanner.cc, JoinsHardWrap): whether a
// line and the one after it could be a single line cut by a terminal at a fixed
// column, judged on their bytes alone, before any parse. The chunk reader asks
// it too: a chunk never ends between two lines that might be joined, so the
// join, and everything after it, is the same whatever the chunk size.
#ifndef NCCLSCAN_ENGINE_SCAN_HARD_WRAP_H_
#define NCCLSCAN_ENGINE_SCAN_HARD_WRAP_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "parsers/line_parser.h"
#include "parsers/text_util.h"

namespace ncclscan {
namespace scan_detail {

// A wrapped line fills the terminal: shorter lines are never joined.
constexpr size_t kMinWrapWidth = 79;
// The most rows one joined line takes (a 300-byte watchdog line is four
// rows of an 80-column terminal).
constexpr uint32_t kMaxWrapRows = 16;
// A wrap may fall right after a space ("... PG status: " / "last enqueued work: ..."):
// the strength test decides; a line that ends a sentence is not cut.
inline bool WrapTail(char ch) { return ch != '.' && ch != ';'; }
// A row may start with what a cut leaves in the middle of a word or a value
// ("status" / "=12 opcode=129", "peer 10.0.0.2" / "<44206>"); not with what
// starts lines of their own ('[' of a rank prefix, '-' of a result chain or a
// rule, '#', '*', '.', a blank).
inline bool WrapHead(char ch) {
  return IsDigit(ch) || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == ')' || ch == ',' || ch == '=' ||
         ch == ':' || ch == '<' || ch == '>' || ch == '(' || ch == '/' || ch == '_' || ch == '"' || ch == '\'';
}

// Drops a CRLF line's '\r' and the blanks a tmux or screen paste pads lines
// with; returns how many blanks it dropped.
inline int TrimWrapPadding(std::string_view* s) {
  if (!s->empty() && s->back() == '\r') s->remove_suffix(1);
  int blanks = 0;
  while (!s->empty() && (s->back() == ' ' || s->back() == '\t')) {
    ++blanks;
    s->remove_suffix(1);
  }
  return blanks;
}

// Whether a row names NCCL (an NCCL line, ProcessGroupNCCL, WorkNCCL).
inline bool NamesNccl(std::string_view row) {
  static const LiteralFinder kNccl("NCCL");
  return kNccl.Find(row) != std::string_view::npos;
}

// The length of an `srun -l` task label at the start of a row ("12: ",
// "  3: "); 0 if none.
inline size_t SrunLabelLength(std::string_view row) {
  size_t i = 0;
  while (i < row.size() && row[i] == ' ') ++i;
  const size_t digits = i;
  while (i < row.size() && IsDigit(row[i]) && i - digits < 6) ++i;
  if (i == digits || i + 1 >= row.size() || row[i] != ':' || row[i + 1] != ' ') return 0;
  return i + 2;
}

enum class WrapGate {
  kNo,     // the two lines are never joined
  kMaybe,  // only the rules can tell (or, for a partly known next line, its bytes)
};

// `first` and `next` as the scanner cuts them (terminator excluded), after
// TrimWrapPadding; `first_blank` when exactly one blank was trimmed from
// `first` (a line cut after a blank keeps it). `next_complete` is false when
// only a prefix of the next line is known (the chunk reader at its buffer's
// end): the answer then holds for every line that starts so.
// Whether the row names NCCL, or holds a rule's key atom, is the scanner's
// question (JoinsHardWrap): the chunk reader, which must never end a chunk
// inside a joined line, asks only this one.
inline WrapGate HardWrapGate(std::string_view first, bool first_blank, std::string_view next, bool next_complete) {
  const size_t width = first.size() + (first_blank ? 1 : 0);
  const char tail = first_blank ? ' ' : (first.empty() ? '\0' : first.back());
  if (width < kMinWrapWidth || !WrapTail(tail)) return WrapGate::kNo;
  if (next.empty()) return next_complete ? WrapGate::kNo : WrapGate::kMaybe;
  // A cut right before a blank leaves the blank at the head of the next row
  // (" - Abort COMPLETE", " 'invalid usage …'"): one blank, then what a line
  // goes on with; an indented line (a traceback's "  File") has two or more.
  if (next[0] == ' ' && !first_blank) {
    if (next.size() == 1) return next_complete ? WrapGate::kNo : WrapGate::kMaybe;
    if (!WrapHead(next[1]) && next[1] != '-') return WrapGate::kNo;
  } else if (!WrapHead(next[0])) {
    return WrapGate::kNo;
  }
  // Another rank's line glued at the end of this one is the line that wraps.
  if (first[0] == '[') first.remove_prefix(LastGluedRankPrefix(first));
  // A continuation has no header: a next line that starts like this one (the
  // same "host:pid:tid" or "[rankN]:" prefix) is a line of its own, and so is
  // one with an NCCL line's level word.
  // A partly known next line is compared only when enough of it is known.
  // Two rows with task labels of `srun -l` (other tasks' labels differ from
  // the first byte on) are two lines: the terminal's cut leaves no label.
  if (SrunLabelLength(first) > 0 && SrunLabelLength(next) > 0) return WrapGate::kNo;
  const size_t want = std::min<size_t>(8, first.size());
  if ((next_complete || next.size() >= want) && EqualBytes(first.data(), next.data(), std::min(want, next.size()))) {
    return WrapGate::kNo;
  }
  // An NCCL line's level word ("NCCL INFO", "NCCL WARN"); a message's "NCCL
  // error", "NCCL version" or "the NCCL developers" may well be a cut's rest.
  static const LiteralFinder kNcclWord("NCCL ");
  for (size_t at = kNcclWord.Find(next); at != std::string_view::npos; at = kNcclWord.Find(next, at + 1)) {
    const std::string_view word = next.substr(at + 5);
    if (StartsWith(word, "INFO") || StartsWith(word, "WARN") || StartsWith(word, "TRACE")) return WrapGate::kNo;
  }
  return WrapGate::kMaybe;
}

// Where a chunk read into buf[0, n) may end, given `cut` just past its last
// '\n' and more of the file to come: the latest line end (at most
// kMaxWrapBacktrack lines and `max_back` bytes before `cut`) whose two sides
// are never joined. 0 when there is none: the reader reads on. (Lines split at
// a lone CR, which the scanner cuts there, count as "might be joined".)
constexpr int kMaxWrapBacktrack = 64;
inline size_t WrapSafeCut(const char* buf, size_t cut, size_t n, size_t max_back) {
  size_t end = cut;
  for (int step = 0; step < kMaxWrapBacktrack && cut - end <= max_back; ++step) {
    // The line after the cut, as far as the buffer holds it.
    const char* nx = buf + end;
    const char* nl = static_cast<const char*>(std::memchr(nx, '\n', n - end));
    bool complete = nl != nullptr;
    size_t len = complete ? static_cast<size_t>(nl - nx) : n - end;
    const char* cr = static_cast<const char*>(std::memchr(nx, '\r', len));
    if (cr && cr + 1 < nx + len) {  // its first piece may end at this CR
      len = static_cast<size_t>(cr - nx);
      complete = false;
    }
    std::string_view next(nx, len);
    if (complete) TrimWrapPadding(&next);
    // The line before it.
    const char* prev_nl = end >= 2 ? static_cast<const char*>(memrchr(buf, '\n', end - 1)) : nullptr;
    const char* ls = prev_nl ? prev_nl + 1 : buf;
    std::string_view first(ls, static_cast<size_t>(buf + end - 1 - ls));
    const char* lone_cr = static_cast<const char*>(std::memchr(first.data(), '\r', first.size()));
    if (lone_cr == nullptr || lone_cr + 1 == first.data() + first.size()) {
      const bool blank = TrimWrapPadding(&first) == 1;
      // Nor after PyTorch's bare "Last error:": the line after it is the NCCL
      // error it introduces, which takes that line's rank (scanner.cc).
      if (!EndsWith(TrimSpace(first), "Last error:") && HardWrapGate(first, blank, next, complete) == WrapGate::kNo)
        return end;
    }
    if (prev_nl == nullptr) return 0;
    end = static_cast<size_t>(prev_nl - buf) + 1;
  }
  return 0;
}

}  // namespace scan_detail
}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_SCAN_HARD_WRAP_H_
