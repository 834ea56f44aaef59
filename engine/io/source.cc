// Opening inputs and reading them: files and stdin (ByteReader::Open, under
// their decoder, source_decode.cc) and InputReader, one input's members (a
// plain stream is one; a tar archive's regular files are each one), with the
// content hygiene of source_select.cc applied to walked files.
#include "engine/io/source.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "engine/io/source_internal.h"
#include "parsers/flight_recorder.h"
#include "parsers/text_util.h"

namespace ncclscan {

std::string DisplayPath(const std::string& path) { return path == "-" ? "<stdin>" : path; }

namespace {

class FdReader : public ByteReader {
 public:
  FdReader(int fd, bool own) : fd_(fd), own_(own) {}
  ~FdReader() override {
    if (own_) close(fd_);
  }
  ssize_t Read(char* buf, size_t n, std::string* err) override {
    for (;;) {
      ssize_t r = ::read(fd_, buf, n);
      if (r >= 0) return r;
      if (errno == EINTR) continue;
      *err = strerror(errno);
      return -1;
    }
  }

 private:
  int fd_;
  bool own_;
};

// The bytes of the current tar member. A failure here is the archive's own
// (cut, unreadable): *damaged is set, and nothing after it can be read.
class MemberBytes : public ByteReader {
 public:
  MemberBytes(struct archive* a, const ArchiveSource* src, bool* damaged) : a_(a), src_(src), damaged_(damaged) {}
  ssize_t Read(char* buf, size_t n, std::string* err) override {
    ssize_t r = ReadArchiveData(a_, *src_, buf, n, err);
    if (r < 0) *damaged_ = true;
    return r;
  }

 private:
  struct archive* a_;
  const ArchiveSource* src_;
  bool* damaged_;
};

// A member that cannot be decoded from its first byte (a foreign .xz header):
// every Read is its error, so the member is counted and named like any other.
class FailedReader : public ByteReader {
 public:
  explicit FailedReader(std::string error) : error_(std::move(error)) {}
  ssize_t Read(char*, size_t, std::string* err) override {
    *err = error_;
    return -1;
  }

 private:
  std::string error_;
};

// How much of a file content hygiene looks at.
constexpr size_t kSniffBytes = 8192;

}  // namespace

// ---- Readers ----

namespace {

std::unique_ptr<ByteReader> OpenRaw(const std::string& path, std::string* err) {
  if (path == "-") return std::make_unique<FdReader>(0, false);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *err = strerror(errno);
    return nullptr;
  }
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    *err = "is a directory";
    return nullptr;
  }
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::make_unique<FdReader>(fd, true);
}

}  // namespace

std::unique_ptr<ByteReader> ByteReader::Open(const std::string& path, std::string* err) {
  auto raw = OpenRaw(path, err);
  if (!raw) return nullptr;
  return Decompressed(std::move(raw), err);
}

// The tar members of one input, one at a time.
class InputReader::Tar {
 public:
  explicit Tar(std::unique_ptr<ByteReader> in) : in_(std::move(in)), a_(archive_read_new()) {
    src_.in = in_.get();
    archive_read_support_format_tar(a_.get());  // ustar, pax, GNU
    archive_read_support_format_zip(a_.get());  // streamed: members in the order they are stored
  }
  bool Open(std::string* err) { return OpenArchive(a_.get(), &src_, err); }
  // The next regular file: 1 with *member set, 0 at the end, -1 on error.
  int Next(std::string* member, std::string* err) {
    if (damaged_) return 0;  // reported already, as the member it cut
    for (;;) {
      struct archive_entry* e;
      int rc = archive_read_next_header(a_.get(), &e);
      if (rc == ARCHIVE_EOF) return 0;
      if (rc < ARCHIVE_WARN) {
        *err = src_.Error(a_.get());
        return -1;
      }
      if (archive_entry_filetype(e) != AE_IFREG) continue;
      const char* name = archive_entry_pathname(e);
      if (!name) continue;
      std::string_view m = name;
      while (StartsWith(m, "./")) m.remove_prefix(2);
      while (StartsWith(m, "/")) m.remove_prefix(1);
      if (m.empty()) continue;
      member->assign(m.data(), m.size());
      return 1;
    }
  }
  std::unique_ptr<ByteReader> Bytes() { return std::make_unique<MemberBytes>(a_.get(), &src_, &damaged_); }
  // Whether reading a member failed in the tar stream itself (not in the
  // member's own compression, which the next header skips past).
  bool damaged() const { return damaged_; }

 private:
  std::unique_ptr<ByteReader> in_;
  ArchiveSource src_;
  ArchivePtr a_;
  bool damaged_ = false;
};

InputReader::InputReader() = default;
InputReader::~InputReader() {
  member_.reset();  // reads through tar_
}

std::unique_ptr<InputReader> InputReader::Open(const InputPath& input, const GlobFilter* globs, std::string* err) {
  auto raw = OpenRaw(input.path, err);
  if (!raw) return nullptr;
  auto stream = Decompressed(std::move(raw), err);
  if (!stream) return nullptr;
  std::unique_ptr<InputReader> r(new InputReader());
  r->input_ = input;
  r->display_ = DisplayPath(input.path);
  r->globs_ = globs;
  auto peek = std::make_unique<Peekable>(std::move(stream));
  peek->Peek(kSniffBytes);
  // A zip is read as an archive when named on the command line or called
  // *.zip; one a walk finds under another name (a PyTorch checkpoint, a
  // wheel) stays a binary the walk skips.
  const bool zip = IsZipHeader(peek->head()) && (!input.walked || EndsWith(SniffName(input.path), ".zip"));
  if (IsTarHeader(peek->head()) || zip) {
    r->tar_ = std::make_unique<Tar>(std::move(peek));
    if (!r->tar_->Open(err)) return nullptr;
  } else {
    r->stream_ = std::move(peek);
  }
  return r;
}

bool InputReader::NextMember(std::string* name, std::string* err) {
  member_.reset();
  if (!tar_) {
    if (started_) return false;
    started_ = true;
    const std::string_view head = static_cast<Peekable*>(stream_.get())->head();
    const char* why = SkipByContent(SniffName(input_.path), head);
    if (input_.walked) {
      if (why && (why == kSkipBinary || !input_.globbed)) {
        skipped_.Add(why, display_);
        return false;
      }
    } else if (why == kSkipBinary && !LooksLikePickle(head)) {
      // Named on the command line (or piped in): a binary is an error, not
      // "no problem found" over bytes that were never a log.
      *err = "a binary file, not a log (images, executables and archives other than tar and zip are not read)";
      return false;
    }
    *name = display_;
    member_ = std::move(stream_);
    return true;
  }
  std::string m;
  for (;;) {
    int rc = tar_->Next(&m, err);
    if (rc <= 0) return false;
    std::string full = display_ + ":" + m;
    GlobFilter::Verdict v = globs_ ? globs_->Match(m) : GlobFilter::Verdict::kNone;
    if (globs_ && !globs_->Selects(m)) continue;
    bool globbed = v == GlobFilter::Verdict::kInclude;
    if (!globbed) {
      if (const char* why = SkipByName(m)) {
        skipped_.Add(why, full);
        continue;
      }
    }
    // A member may be compressed itself (rank3.log.gz in a tar). One that
    // cannot be decoded is that member's error, read as such (FailedReader).
    std::string derr;
    auto bytes = Decompressed(tar_->Bytes(), &derr);
    if (!bytes) {
      if (tar_->damaged()) {
        *err = m + ": " + derr;
        return false;
      }
      bytes = std::make_unique<FailedReader>(derr);
    }
    auto peek = std::make_unique<Peekable>(std::move(bytes));
    peek->Peek(kSniffBytes);
    const char* why = SkipByContent(SniffName(m), peek->head());
    if (why && (why == kSkipBinary || !globbed)) {
      skipped_.Add(why, full);
      continue;
    }
    *name = full;
    member_ = std::move(peek);
    return true;
  }
}

bool InputReader::ReadsOnAfterMemberError() const { return tar_ && !tar_->damaged(); }

std::string_view InputReader::Head() const {
  // Both kinds of member are Peekable (NextMember).
  return member_ ? static_cast<const Peekable*>(member_.get())->head() : std::string_view();
}

ssize_t InputReader::Read(char* buf, size_t n, std::string* err) {
  if (!member_) return 0;
  return member_->Read(buf, n, err);
}

}  // namespace ncclscan
