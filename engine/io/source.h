// Input sources: expanding command-line paths into the files to scan, and
// reading each as a sequence of members of decompressed bytes.
//
// Hygiene, as ripgrep does it: what a directory walk finds is scanned only if it
// can be a log (prose markdown, JSON documents and binaries are skipped and
// counted), -g globs include or exclude by path, and each real file is read
// once (by device and inode). Files named on the command line are always read.
//
// Readers: plain, gzip, zstd and xz have their own streaming decoders (zstd
// and xz with a bound on decoder memory); bzip2 goes through libarchive; a tar stream (plain or under any
// of those) is read member by member, each member its own file
// ("job.tar.gz:rank3.log"). "-" is stdin.
//
// Thread-safety: GlobFilter is immutable after Add (shared read-only); a
// ByteReader or InputReader is used by one thread at a time.
#ifndef NCCLSCAN_ENGINE_IO_SOURCE_H_
#define NCCLSCAN_ENGINE_IO_SOURCE_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace re2 {
class RE2;
}

namespace ncclscan {

// Why an input was left out (the keys of SkippedInputs::count and the JSON).
// Arrays, not pointers to literals: code compares a reason by address
// (why == kSkipBinary), and one array has one address in every file, where
// equal literals of two files need not (ASan keeps them apart).
inline constexpr char kSkipNotALog[] = "not_a_log";    // prose markdown, a JSON document
inline constexpr char kSkipBinary[] = "binary";        // images, executables, other binaries
inline constexpr char kSkipDuplicate[] = "duplicate";  // the same file reached again
inline constexpr char kSkipHidden[] = "hidden";        // a dot-file or dot-directory met by a walk

// Inputs left out of the scan and problems met while walking directories.
// Bounded: counts are complete; the kMaxPaths smallest (reason, path) pairs are
// kept, sorted, so the list does not depend on the order inputs were met in.
struct SkippedInputs {
  static constexpr size_t kMaxPaths = 20;
  std::map<std::string, uint64_t> count;                   // reason -> files
  std::vector<std::pair<std::string, std::string>> paths;  // (reason, path), sorted, at most kMaxPaths
  uint64_t walk_errors = 0;  // missing paths, unreadable directories, dangling links, link loops
  // When set, every (reason, path) added is also appended here, unbounded
  // (--files lists them all); not copied by Merge.
  std::vector<std::pair<std::string, std::string>>* every = nullptr;

  void Add(const char* reason, const std::string& path);
  void Merge(const SkippedInputs& o);
  uint64_t Total() const;
  // One line for the text report, "" when nothing was skipped:
  // "skipped: 2 non-log files (README.md, expected.json); use -g to include them".
  std::string Summary() const;
};

// -g/--glob with ripgrep's semantics. A glob without '/' matches the base name,
// one with '/' the path relative to the directory walked (or inside the
// archive); '*' and '?' stop at '/', '**' crosses it, [abc], [!a-z] and {a,b}
// work as in shells. A leading '!' excludes. The last glob that matches a path
// decides; a path no glob matches is excluded when some glob includes (a
// whitelist) and kept otherwise. Directories are pruned only by an exclude.
class GlobFilter {
 public:
  GlobFilter();
  ~GlobFilter();
  GlobFilter(const GlobFilter&);
  GlobFilter& operator=(const GlobFilter&);

  // False, with *err, for a malformed glob (an unclosed '[' or '{').
  bool Add(const std::string& glob, std::string* err);
  bool empty() const { return globs_.empty(); }

  enum class Verdict { kNone, kInclude, kExclude };
  // The decision of the last glob that matches `rel` (kNone: none matches).
  Verdict Match(std::string_view rel) const;
  // Whether a file at `rel` is scanned (whitelist rule applied).
  bool Selects(std::string_view rel) const;
  // Whether a directory at `rel` is walked.
  bool Walks(std::string_view rel) const { return Match(rel) != Verdict::kExclude; }
  // --hidden: walks read dot-files and enter dot-directories too (by default
  // each is skipped and counted, as ripgrep skips them).
  void set_hidden(bool hidden) { hidden_ = hidden; }
  bool hidden() const { return hidden_; }

 private:
  struct Glob {
    bool exclude = false;
    bool basename = false;  // no '/': matched against the last component
    std::shared_ptr<const re2::RE2> re;
  };
  std::vector<Glob> globs_;
  bool any_include_ = false;
  bool hidden_ = false;
};

// How reports name input `path`: "<stdin>" for "-", else the path itself.
std::string DisplayPath(const std::string& path);

// A file to scan. One found by a walk (not named on the command line) is
// still skipped if its content is binary, or not a log unless a -g glob
// included it by name.
struct InputPath {
  std::string path;
  bool walked = false;
  bool globbed = false;  // an including -g glob matched it
};

struct ExpandedInputs {
  std::vector<InputPath> files;  // sorted by path, each real file once
  SkippedInputs skipped;         // by name, by glob... and duplicates
};

// Expands paths: directories are walked recursively (sorted, symlinks followed,
// loops detected, hidden entries skipped and counted unless globs.hidden(), globs and name hygiene applied),
// files are kept, "-" is stdin. The result is sorted and each real file
// (st_dev, st_ino) appears once, preferring a path reached without a symbolic
// link, so output does not depend on argument order. Problems (missing path,
// unreadable directory, dangling link, loop) go to *errors, are counted in
// skipped.walk_errors, and the rest is still returned.
// `every` (may be null): each skip appended, unbounded (SkippedInputs::every).
ExpandedInputs ExpandInputs(const std::vector<std::string>& args, const GlobFilter& globs,
                            std::vector<std::string>* errors,
                            std::vector<std::pair<std::string, std::string>>* every = nullptr);
// The same without globs, paths only.
std::vector<std::string> ExpandInputs(const std::vector<std::string>& args, std::vector<std::string>* errors);

// "./a/./b.log" -> "a/b.log": the same name written another way (of the
// spellings of one file, the one ExpandInputs and a merge keep sorts first).
std::string WithoutDotSegments(std::string_view p);

// Input hygiene by name: kSkipNotALog for prose markdown (.md, .markdown, .rst),
// else null. `name` is a base name.
const char* SkipByName(std::string_view name);
// Input hygiene by the first (decompressed) bytes: kSkipBinary for binary
// content (known binary magic, a pickle that is not a Flight Recorder dump,
// or mostly NUL / control bytes / invalid UTF-8),
// kSkipNotALog for a .json file that is neither docker json-file lines
// ({"log": ...} per line) nor a PyTorch Flight Recorder dump; else null.
const char* SkipByContent(std::string_view name, std::string_view head);

class ByteReader {
 public:
  virtual ~ByteReader() = default;
  // Opens path ("-" = stdin), decompressing by magic bytes (gzip, zstd, bzip2,
  // xz). Returns null and sets *err on failure.
  static std::unique_ptr<ByteReader> Open(const std::string& path, std::string* err);
  // Reads up to n decompressed bytes. Returns the count, 0 at end of input, -1 on
  // error (with *err; bytes decoded before the error were already returned).
  virtual ssize_t Read(char* buf, size_t n, std::string* err) = 0;
};

// One input path as the members to scan: a tar stream has one per regular file
// inside it (globs, name and content hygiene applied to each); anything else
// has one, the path itself (content hygiene applied when it was walked).
class InputReader {
 public:
  ~InputReader();
  // Returns null and sets *err when the path cannot be opened. `globs` (may be
  // null) must outlive the reader.
  static std::unique_ptr<InputReader> Open(const InputPath& input, const GlobFilter* globs, std::string* err);
  // Moves to the next member and sets *name ("path" or "path:member"). Returns
  // false at the end; false with *err set when the archive is damaged.
  bool NextMember(std::string* name, std::string* err);
  // The current member's bytes, as ByteReader::Read.
  ssize_t Read(char* buf, size_t n, std::string* err);
  // The current member's first bytes (up to 8 KiB, what content hygiene
  // looked at), before the first Read; "" when there is no member.
  std::string_view Head() const;
  // Whether the members after one that failed to read can still be read: a
  // tar whose stream is intact (the member's own compression was damaged).
  bool ReadsOnAfterMemberError() const;
  // Members skipped so far (hygiene).
  const SkippedInputs& skipped() const { return skipped_; }
  // From now on, each member skipped is also appended to *every (--files).
  void ListSkipsInto(std::vector<std::pair<std::string, std::string>>* every) { skipped_.every = every; }

 private:
  class Tar;
  InputReader();

  InputPath input_;
  std::string display_;  // the path, "<stdin>" for "-"
  const GlobFilter* globs_ = nullptr;
  std::unique_ptr<ByteReader> stream_;  // the path's decompressed bytes (single file)
  std::unique_ptr<Tar> tar_;            // set for a tar stream
  std::unique_ptr<ByteReader> member_;  // what Read reads
  bool started_ = false;
  SkippedInputs skipped_;
};

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_IO_SOURCE_H_
