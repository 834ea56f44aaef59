// The scanner's serial input stage (engine/scan/scanner.cc): inputs (files,
// directories' files, archive members, stdin) to chunks of whole lines of one
// file. Internal to engine/scan; header-only (the pipeline inlines it).
//
// Thread-safety: one thread (the pipeline's first, serial stage).
#ifndef NCCLSCAN_ENGINE_SCAN_CHUNK_READER_H_
#define NCCLSCAN_ENGINE_SCAN_CHUNK_READER_H_

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/io/source.h"
#include "engine/scan/chunk.h"
#include "engine/scan/hard_wrap.h"
#include "engine/scan/scanner.h"
#include "parsers/flight_recorder.h"
#include "parsers/wrappers.h"

namespace ncclscan {
namespace scan_detail {

// Squeezes each run of NUL bytes in buf[0, n) to one NUL; returns the new size.
inline size_t SqueezeNulRuns(char* buf, size_t n) {
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
// redraws are far fewer than the log's lines. Asked of a file's head (its
// first 8 KiB, InputReader::Head), never of a chunk: the answer must not
// depend on the chunk size.
inline bool MostlyLoneCrs(std::string_view buf) {
  if (buf.find('\r') == std::string_view::npos) return false;
  size_t lone = 0, lf = 0;
  for (size_t i = 0; i < buf.size(); ++i) {
    if (buf[i] == '\n') ++lf;
    if (buf[i] == '\r' && (i + 1 == buf.size() || buf[i + 1] != '\n')) ++lone;
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
            Register(DisplayPath(in.path));
            Fail(err);
            continue;
          }
          input_name_ = DisplayPath(in.path);
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
        cr_cut_ = false;
        // A Flight Recorder dump (or any pickle: never a log) is one value,
        // not lines: it is read whole here and gives no chunk.
        std::string_view head = input_->Head();
        if (LooksLikeFlightRecorder(head) || LooksLikePickle(head)) {
          ReadDump();
          continue;
        }
        indent_.assign(PasteIndent(head));
        cr_file_ = MostlyLoneCrs(head);
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
    auto& buf = c->data;
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
      // A file whose lines end in CR alone (old Mac, some terminal captures:
      // its head says so) has its chunks end after their last CR, and every CR
      // ends a line. In other files a line with no '\n' in a chunk's worth of
      // bytes and in more than kCrSplitMin (its CRs end lines, whatever the
      // chunk size: progress bars redrawn on one line) is cut after its last
      // CR; the next chunk continues it (Chunk::cr_continues).
      bool cut_at_cr = false;
      if (!last && (cr_file_ ||
                    n >= std::min(std::max(opts_.chunk_size, static_cast<size_t>(kCrSplitMin) + 1), opts_.max_line))) {
        last = memrchr(buf.data(), '\r', n);
        cut_at_cr = last != nullptr;
      }
      c->cr_lines = cr_file_;
      c->cr_continues = cr_cut_;
      c->indent = indent_;
      if (last && !eof && !cut_at_cr) {
        // Never between two lines the scanner might join as one hard-wrapped
        // line (hard_wrap.h): the join must not depend on the chunk size.
        const size_t safe =
            WrapSafeCut(buf.data(), static_cast<const char*>(last) - buf.data() + 1, n, opts_.max_line / 2);
        if (safe == 0 && n < opts_.chunk_size + opts_.max_line / 2) continue;  // read on
        if (safe != 0) last = buf.data() + safe - 1;
      }
      if (last) {
        size_t k = static_cast<const char*>(last) - buf.data() + 1;
        carry_.assign(buf.data() + k, n - k);
        c->size = k;
        cr_cut_ = cut_at_cr;
        // At EOF a final line without '\n' stays in carry_ and is sent by the next call.
        if (eof && carry_.empty()) EndMember();
        return true;
      }
      if (n >= opts_.max_line) {
        // One line longer than max_line: keep its head, skip the rest.
        c->size = opts_.max_line;
        c->overlong = true;
        cr_cut_ = false;
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
  size_t sent_ = 0;  // names_ handed to chunks so far
  SkippedInputs skipped_;
  size_t next_input_ = 0;
  std::unique_ptr<InputReader> input_;
  std::string input_name_;
  bool member_open_ = false;
  bool failed_ = false;
  size_t index_ = 0;
  int file_ = -1;  // index_ as a JobState file number
  std::string carry_;
  bool skipping_ = false;
  std::string indent_;    // this file is an indented paste: the indent (PasteIndent)
  bool cr_cut_ = false;   // the last chunk sent ended at a CR inside a line (Chunk::cr_continues)
  bool cr_file_ = false;  // the member's head is mostly lone CRs (Chunk::cr_lines)
};

}  // namespace scan_detail
}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_SCAN_CHUNK_READER_H_
