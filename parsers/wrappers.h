// Outer wrappers real dumps carry in front of the NCCL / PyTorch text (see
// docs/formats.md §G): grep -H/-n, srun labels, MPI tags, torchrun and [rankN]
// prefixes, kubectl, ray, pdsh, shippers' timestamps, syslog, Kaggle, ANSI
// colour codes. Each Strip* call removes one layer and records what it says.
//
// Thread-safety: pure functions (StripAnsi writes into the caller's Arena).
#ifndef NCCLSCAN_PARSERS_WRAPPERS_H_
#define NCCLSCAN_PARSERS_WRAPPERS_H_

#include <cstddef>
#include <string_view>

#include "parsers/arena.h"
#include "parsers/parsed_line.h"

namespace ncclscan {

// What one pass over a line's bytes found.
struct ByteScan {
  bool nul = false, cr = false, ansi = false;
  bool nccl_keyword = false;  // "NCCL " occurs (a glued second NCCL line may)
  size_t control = 0;         // control bytes in the first 256 (binary detection)
};
ByteScan ScanBytes(std::string_view s);
// The same, byte by byte without SIMD: the reference ScanBytes is tested against.
ByteScan ScanBytesReference(std::string_view s);

// Removes ANSI SGR sequences (also without their ESC byte: a stray "[0m").
std::string_view StripAnsi(std::string_view s, Arena* arena);

// "host:pid:tid " at the very start (host of letters, digits, '.', '-', '_'): a bare
// NCCL line, no wrapper to strip. Fills *np (pid/tid -1 when too long to be numbers).
struct NcclProcess {
  size_t host_len = 0;
  size_t len = 0;  // of "host:pid:tid", without the blank; 0 = no match
  int64_t pid = -1, tid = -1;
};
bool MatchNcclProcess(std::string_view s, NcclProcess* np);

// One wrapper layer at the front of *s: removes it, records its hints on *out,
// and returns true; false if *s starts with no known wrapper.
bool StripOneWrapper(std::string_view* s, ParsedLine* out);

// Ray's log deduplication (RAY_DEDUP_LOGS, on by default since Ray 2.3) prints a
// line that several workers printed once, ending in " [repeated 15x across
// cluster]": the line without that ending (s itself when it has none).
std::string_view WithoutRayRepeatSuffix(std::string_view s);

// An indented paste: a log copied out of a code block inside a markdown list
// item or a forum quote carries the page's indent on every line. The indent
// (blanks and tabs) that every non-blank line of a file's head shares, when
// there are at least kMinIndentedLines such lines; empty otherwise. A last line
// without its '\n' (cut by the head's end, or the file's) is not looked at.
inline constexpr int kMinIndentedLines = 2;
std::string_view PasteIndent(std::string_view head);

}  // namespace ncclscan

#endif  // NCCLSCAN_PARSERS_WRAPPERS_H_
