#include "engine/io/source.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <lzma.h>
#include <re2/re2.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

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

// A reader whose first bytes can be looked at before they are read (magic
// numbers, tar headers, content sniffing). A read error met while peeking is
// returned by Read after the bytes decoded before it, as the decoders do.
class Peekable : public ByteReader {
 public:
  explicit Peekable(std::unique_ptr<ByteReader> in) : in_(std::move(in)) {}
  // Buffers up to n bytes (fewer at the end of input or before an error;
  // short reads from pipes are retried).
  void Peek(size_t n) {
    while (head_.size() - pos_ < n && !eof_ && !failed_) {
      size_t have = head_.size();
      head_.resize(pos_ + n);
      ssize_t r = in_->Read(&head_[have], head_.size() - have, &error_);
      head_.resize(have + static_cast<size_t>(std::max<ssize_t>(r, 0)));
      if (r < 0) failed_ = true;
      if (r == 0) eof_ = true;
    }
  }
  std::string_view head() const { return std::string_view(head_).substr(pos_); }
  ssize_t Read(char* buf, size_t n, std::string* err) override {
    if (pos_ < head_.size()) {
      size_t k = std::min(n, head_.size() - pos_);
      std::memcpy(buf, head_.data() + pos_, k);
      pos_ += k;
      if (pos_ == head_.size()) {
        head_.clear();
        pos_ = 0;
      }
      return static_cast<ssize_t>(k);
    }
    if (failed_) {
      failed_ = false;
      eof_ = true;
      *err = error_;
      return -1;
    }
    if (eof_) return 0;
    return in_->Read(buf, n, err);
  }

 private:
  std::unique_ptr<ByteReader> in_;
  std::string head_;
  size_t pos_ = 0;
  bool eof_ = false, failed_ = false;
  std::string error_;
};

class GzipReader : public ByteReader {
 public:
  explicit GzipReader(std::unique_ptr<ByteReader> in) : in_(std::move(in)), inbuf_(1 << 18) {
    std::memset(&zs_, 0, sizeof(zs_));
    ok_ = inflateInit2(&zs_, 15 + 32) == Z_OK;
  }
  ~GzipReader() override { inflateEnd(&zs_); }
  ssize_t Read(char* buf, size_t n, std::string* err) override {
    if (!ok_) {
      *err = "zlib initialisation failed";
      return -1;
    }
    if (done_) {
      if (pending_error_.empty()) return 0;
      *err = pending_error_;
      pending_error_.clear();
      return -1;
    }
    zs_.next_out = reinterpret_cast<Bytef*>(buf);
    zs_.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    while (zs_.avail_out > 0) {
      if (zs_.avail_in == 0 && !eof_) {
        ssize_t r = in_->Read(inbuf_.data(), inbuf_.size(), err);
        if (r < 0) {
          size_t produced = n - zs_.avail_out;
          if (produced == 0) return -1;
          done_ = true;
          pending_error_ = *err;
          return static_cast<ssize_t>(produced);
        }
        if (r == 0) eof_ = true;
        zs_.next_in = reinterpret_cast<Bytef*>(inbuf_.data());
        zs_.avail_in = static_cast<uInt>(r);
      }
      if (zs_.avail_in == 0 && eof_) {
        size_t produced = n - zs_.avail_out;
        if (in_stream_) {
          if (produced > 0) return static_cast<ssize_t>(produced);
          done_ = true;
          *err = "truncated gzip stream (unexpected end of file)";
          return -1;
        }
        done_ = true;
        return static_cast<ssize_t>(produced);
      }
      int rc = inflate(&zs_, Z_NO_FLUSH);
      in_stream_ = true;
      if (rc == Z_STREAM_END) {
        in_stream_ = false;
        // Concatenated members ("cat a.gz b.gz") continue.
        if (inflateReset(&zs_) != Z_OK) {
          *err = "zlib reset failed";
          return -1;
        }
        if (zs_.avail_in == 0 && eof_) break;
        continue;
      }
      if (rc == Z_BUF_ERROR) continue;  // needs more input
      if (rc != Z_OK) {
        size_t produced = n - zs_.avail_out;
        done_ = true;
        if (produced > 0) {
          pending_error_ = std::string("corrupt gzip data: ") + (zs_.msg ? zs_.msg : "inflate failed");
          return static_cast<ssize_t>(produced);
        }
        *err = std::string("corrupt gzip data: ") + (zs_.msg ? zs_.msg : "inflate failed");
        return -1;
      }
    }
    return static_cast<ssize_t>(n - zs_.avail_out);
  }

 private:
  std::unique_ptr<ByteReader> in_;
  std::vector<char> inbuf_;
  z_stream zs_;
  bool ok_ = false, eof_ = false, done_ = false, in_stream_ = false;
  std::string pending_error_;
};

class ZstdReader : public ByteReader {
 public:
  explicit ZstdReader(std::unique_ptr<ByteReader> in) : in_(std::move(in)), inbuf_(ZSTD_DStreamInSize()) {
    ds_ = ZSTD_createDStream();
    ZSTD_initDStream(ds_);
    // Bound the decoder window so a hostile frame cannot ask for gigabytes.
    ZSTD_DCtx_setParameter(ds_, ZSTD_d_windowLogMax, 27);
  }
  ~ZstdReader() override { ZSTD_freeDStream(ds_); }
  ssize_t Read(char* buf, size_t n, std::string* err) override {
    if (done_) {
      if (pending_error_.empty()) return 0;
      *err = pending_error_;
      pending_error_.clear();
      return -1;
    }
    ZSTD_outBuffer out{buf, n, 0};
    while (out.pos < out.size) {
      if (zin_.pos == zin_.size && !eof_) {
        ssize_t r = in_->Read(inbuf_.data(), inbuf_.size(), err);
        if (r < 0) return -1;
        if (r == 0) eof_ = true;
        zin_ = ZSTD_inBuffer{inbuf_.data(), static_cast<size_t>(r), 0};
      }
      if (zin_.pos == zin_.size && eof_) {
        if (out.pos > 0) return static_cast<ssize_t>(out.pos);
        done_ = true;
        if (mid_frame_) {
          *err = "truncated zstd stream (unexpected end of file)";
          return -1;
        }
        return 0;
      }
      size_t rc = ZSTD_decompressStream(ds_, &out, &zin_);
      if (ZSTD_isError(rc)) {
        done_ = true;
        std::string msg = std::string("corrupt zstd data: ") + ZSTD_getErrorName(rc);
        if (out.pos > 0) {
          pending_error_ = msg;  // reported by the next Read, after these bytes
          return static_cast<ssize_t>(out.pos);
        }
        *err = msg;
        return -1;
      }
      mid_frame_ = rc != 0;
    }
    return static_cast<ssize_t>(out.pos);
  }

 private:
  std::unique_ptr<ByteReader> in_;
  std::vector<char> inbuf_;
  ZSTD_inBuffer zin_{nullptr, 0, 0};
  ZSTD_DStream* ds_;
  bool eof_ = false, done_ = false, mid_frame_ = false;
  std::string pending_error_;
};

// xz through liblzma with a memory limit, as ZstdReader bounds its window:
// the decoder allocates what the stream's dictionary size asks for, so a
// 200 KB file declaring a 1.5 GiB dictionary is refused instead of taking
// 1.5 GiB (libarchive's xz filter sets no limit). 128 MiB decodes any preset
// (xz -9 uses a 64 MiB dictionary).
constexpr uint64_t kXzMemoryLimit = uint64_t{128} << 20;

class XzReader : public ByteReader {
 public:
  explicit XzReader(std::unique_ptr<ByteReader> in) : in_(std::move(in)), inbuf_(1 << 17) {
    ok_ = lzma_stream_decoder(&zs_, kXzMemoryLimit, LZMA_CONCATENATED) == LZMA_OK;
  }
  ~XzReader() override { lzma_end(&zs_); }
  ssize_t Read(char* buf, size_t n, std::string* err) override {
    if (!ok_) {
      *err = "corrupt or truncated xz data: liblzma initialisation failed";
      return -1;
    }
    if (done_) {
      if (pending_error_.empty()) return 0;
      *err = pending_error_;
      pending_error_.clear();
      return -1;
    }
    zs_.next_out = reinterpret_cast<uint8_t*>(buf);
    zs_.avail_out = n;
    while (zs_.avail_out > 0) {
      if (zs_.avail_in == 0 && !eof_) {
        ssize_t r = in_->Read(inbuf_.data(), inbuf_.size(), err);
        if (r < 0) return Fail(n, *err, err);
        if (r == 0) eof_ = true;
        zs_.next_in = reinterpret_cast<const uint8_t*>(inbuf_.data());
        zs_.avail_in = static_cast<size_t>(r);
      }
      lzma_ret rc = lzma_code(&zs_, eof_ ? LZMA_FINISH : LZMA_RUN);
      if (rc == LZMA_STREAM_END) {
        done_ = true;
        break;
      }
      if (rc == LZMA_OK) continue;
      if (rc == LZMA_BUF_ERROR && eof_) return Fail(n, "corrupt or truncated xz data: unexpected end of file", err);
      if (rc == LZMA_MEMLIMIT_ERROR) {
        return Fail(n,
                    "xz data needs more than " + std::to_string(kXzMemoryLimit >> 20) +
                        " MiB to decode (its dictionary is too large): not read",
                    err);
      }
      return Fail(n,
                  std::string("corrupt or truncated xz data: ") + (rc == LZMA_FORMAT_ERROR    ? "not xz"
                                                                   : rc == LZMA_DATA_ERROR    ? "data is corrupt"
                                                                   : rc == LZMA_OPTIONS_ERROR ? "unsupported options"
                                                                   : rc == LZMA_MEM_ERROR     ? "cannot allocate memory"
                                                                                              : "decoder error"),
                  err);
    }
    return static_cast<ssize_t>(n - zs_.avail_out);
  }

 private:
  // An error after some bytes: they are returned first, the error next.
  ssize_t Fail(size_t n, const std::string& msg, std::string* err) {
    done_ = true;
    size_t produced = n - zs_.avail_out;
    if (produced > 0) {
      pending_error_ = msg;
      return static_cast<ssize_t>(produced);
    }
    *err = msg;
    return -1;
  }

  std::unique_ptr<ByteReader> in_;
  std::vector<char> inbuf_;
  lzma_stream zs_ = LZMA_STREAM_INIT;
  bool ok_ = false, eof_ = false, done_ = false;
  std::string pending_error_;
};

// libarchive reading from a ByteReader (our decoders, stdin, a pipe): it never
// seeks, so pipes and tar streams under any compression work alike.
struct ArchiveSource {
  ByteReader* in = nullptr;
  std::vector<char> buf = std::vector<char>(1 << 17);
  std::string error;  // the ByteReader's own message, clearer than libarchive's

  static la_ssize_t ReadCallback(struct archive* a, void* self, const void** out) {
    auto* s = static_cast<ArchiveSource*>(self);
    std::string err;
    ssize_t r = s->in->Read(s->buf.data(), s->buf.size(), &err);
    if (r < 0) {
      s->error = err;
      archive_set_error(a, EIO, "%s", err.c_str());
      return -1;
    }
    *out = s->buf.data();
    return r;
  }
  std::string Error(struct archive* a) const {
    if (!error.empty()) return error;
    const char* m = archive_error_string(a);
    return m ? m : "archive read failed";
  }
};

struct ArchiveDeleter {
  void operator()(struct archive* a) const { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<struct archive, ArchiveDeleter>;

// Opens `a` over src; false with *err when the stream is not readable as configured.
bool OpenArchive(struct archive* a, ArchiveSource* src, std::string* err) {
  if (archive_read_open(a, src, nullptr, &ArchiveSource::ReadCallback, nullptr) != ARCHIVE_OK) {
    *err = src->Error(a);
    return false;
  }
  return true;
}

// archive_read_data as ByteReader::Read (warnings are not errors).
ssize_t ReadArchiveData(struct archive* a, const ArchiveSource& src, char* buf, size_t n, std::string* err) {
  for (;;) {
    la_ssize_t r = archive_read_data(a, buf, n);
    if (r >= 0) return static_cast<ssize_t>(r);
    if (r == ARCHIVE_RETRY || r == ARCHIVE_WARN) continue;
    *err = src.Error(a);
    return -1;
  }
}

// bzip2 single streams, through libarchive's "raw" format.
class FilterReader : public ByteReader {
 public:
  static std::unique_ptr<ByteReader> Open(std::unique_ptr<ByteReader> in, const char* what, std::string* err) {
    std::unique_ptr<FilterReader> r(new FilterReader(std::move(in)));
    struct archive* a = r->a_.get();
    archive_read_support_filter_bzip2(a);
    archive_read_support_format_raw(a);
    struct archive_entry* e;
    if (!OpenArchive(a, &r->src_, err)) {
      *err = std::string("corrupt or truncated ") + what + " data: " + *err;
      return nullptr;
    }
    if (archive_read_next_header(a, &e) < ARCHIVE_WARN) {
      *err = std::string("corrupt or truncated ") + what + " data: " + r->src_.Error(a);
      return nullptr;
    }
    r->what_ = what;
    return r;
  }
  ssize_t Read(char* buf, size_t n, std::string* err) override {
    ssize_t r = ReadArchiveData(a_.get(), src_, buf, n, err);
    if (r < 0 && src_.error.empty()) *err = std::string("corrupt or truncated ") + what_ + " data: " + *err;
    return r;
  }

 private:
  explicit FilterReader(std::unique_ptr<ByteReader> in) : in_(std::move(in)), a_(archive_read_new()) {
    src_.in = in_.get();
  }
  std::unique_ptr<ByteReader> in_;
  ArchiveSource src_;
  ArchivePtr a_;
  const char* what_ = "";
};

// Wraps raw bytes in the decoder their magic number asks for.
std::unique_ptr<ByteReader> Decompressed(std::unique_ptr<ByteReader> raw, std::string* err) {
  auto in = std::make_unique<Peekable>(std::move(raw));
  in->Peek(6);
  std::string_view m = in->head();
  auto at = [&](size_t i) { return i < m.size() ? static_cast<unsigned char>(m[i]) : 0u; };
  if (at(0) == 0x1f && at(1) == 0x8b) return std::make_unique<GzipReader>(std::move(in));
  if (at(0) == 0x28 && at(1) == 0xb5 && at(2) == 0x2f && at(3) == 0xfd) {
    return std::make_unique<ZstdReader>(std::move(in));
  }
  if (StartsWith(m, "BZh") && at(3) >= '1' && at(3) <= '9') return FilterReader::Open(std::move(in), "bzip2", err);
  if (StartsWith(m, std::string_view("\3757zXZ\0", 6))) return std::make_unique<XzReader>(std::move(in));
  return in;
}

// A ustar / GNU / pax tar header: "ustar" at 257 and a valid header checksum.
bool IsTarHeader(std::string_view h) {
  if (h.size() < 512 || h.compare(257, 5, "ustar") != 0) return false;
  unsigned sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
  unsigned stored = 0;
  size_t i = 148;
  while (i < 156 && h[i] == ' ') ++i;
  for (; i < 156 && h[i] >= '0' && h[i] <= '7'; ++i) stored = stored * 8 + static_cast<unsigned>(h[i] - '0');
  return stored == sum;
}

std::string_view BaseName(std::string_view p) {
  size_t slash = p.rfind('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// The name content hygiene looks at: the base name without a compression suffix.
std::string SniffName(std::string_view path) {
  std::string b = Lower(BaseName(path));
  for (const char* ext : {".gz", ".zst", ".bz2", ".xz"}) {
    if (EndsWith(b, ext)) {
      b.resize(b.size() - std::strlen(ext));
      break;
    }
  }
  return b;
}

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

// ---- Hygiene ----

const char* SkipByName(std::string_view name) {
  std::string b = Lower(BaseName(name));
  for (const char* ext : {".md", ".markdown", ".rst"}) {
    if (EndsWith(b, ext)) return kSkipNotALog;
  }
  return nullptr;
}

const char* SkipByContent(std::string_view name, std::string_view head) {
  if (head.empty()) return nullptr;
  // Formats that are never logs, by magic number. (A Python pickle, "\x80\x02",
  // is kept: PyTorch Flight Recorder dumps are pickles.)
  static const std::string_view kMagic[] = {
      std::string_view("\x89PNG", 4),
      "\xff\xd8\xff",
      "GIF8",
      "%PDF-",
      "\177ELF",
      std::string_view("PK\x03\x04", 4),  // zip: also PyTorch checkpoints, wheels
      std::string_view("SQLite format 3\0", 16),
      std::string_view("7z\xbc\xaf\x27\x1c", 6),
      "Rar!",
      std::string_view("II*\0", 4),
      std::string_view("MM\0*", 4),
      "RIFF",
      std::string_view("\0asm", 4),
  };
  for (std::string_view m : kMagic) {
    if (StartsWith(head, m)) return kSkipBinary;
  }
  // A pickle is kept when it looks like a Flight Recorder dump (the scanner
  // reads it whole, parsers/flight_recorder.h); any other pickle is binary.
  if (LooksLikePickle(head)) return LooksLikeFlightRecorder(head) ? nullptr : kSkipBinary;
  if (IsTarHeader(head)) return kSkipBinary;  // an archive inside an archive is not opened
  // Text or not: NUL, control bytes other than whitespace / ESC / BS, and bytes
  // that are not UTF-8. Long NUL runs are left out of the count: a log the
  // file system zero-filled after a crash is still a log.
  size_t counted = 0, bad = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(head.data());
  size_t n = head.size();
  for (size_t i = 0; i < n;) {
    unsigned c = p[i];
    if (c == 0) {
      size_t j = i;
      while (j < n && p[j] == 0) ++j;
      if (j - i < 64 && j < n) {
        counted += j - i;
        bad += j - i;
      }
      i = j;
      continue;
    }
    if (c < 0x80) {
      ++counted;
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != 0x1b && c != '\b') ||
          c == 0x7f) {
        ++bad;
      }
      ++i;
      continue;
    }
    size_t len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    bool ok = len != 0 && c != 0xc0 && c != 0xc1 && c <= 0xf4;
    for (size_t k = 1; ok && k < len; ++k) ok = i + k >= n || (p[i + k] & 0xc0) == 0x80;  // cut at the end: fine
    if (ok) {
      counted += len;
      i += len;
    } else {
      ++counted;
      ++bad;
      ++i;
    }
  }
  if (counted > 0 && bad * 100 > counted * 30) return kSkipBinary;

  // A .json file is a log only as docker json-file lines or a Flight Recorder dump.
  if (EndsWith(SniffName(name), ".json")) {
    std::string_view t = head;
    if (StartsWith(t, "\xef\xbb\xbf")) t.remove_prefix(3);
    size_t k = t.find_first_not_of(" \t\r\n");
    if (k == std::string_view::npos) return nullptr;
    t.remove_prefix(k);
    if (t[0] != '{' && t[0] != '[') return nullptr;  // not JSON at all: read it
    std::string_view first_line = t.substr(0, t.find('\n'));
    if (t[0] == '{' && first_line.find("\"log\":") != std::string_view::npos && first_line.back() == '}') {
      return nullptr;  // docker json-file
    }
    if (LooksLikeFlightRecorder(t)) return nullptr;  // Flight Recorder (JSON form)
    return kSkipNotALog;
  }
  return nullptr;
}

namespace {

// The kMaxPaths smallest (reason, path) pairs, sorted: the same whatever the
// order they were met in, so merged partials name what one scan names.
void KeepSkippedPath(std::vector<std::pair<std::string, std::string>>* paths, std::pair<std::string, std::string> p) {
  auto it = std::lower_bound(paths->begin(), paths->end(), p);
  if (it != paths->end() && *it == p) return;
  if (paths->size() >= SkippedInputs::kMaxPaths) {
    if (it == paths->end()) return;
    paths->pop_back();
  }
  paths->insert(it, std::move(p));
}

}  // namespace

void SkippedInputs::Add(const char* reason, const std::string& path) {
  ++count[reason];
  KeepSkippedPath(&paths, {reason, path});
}

void SkippedInputs::Merge(const SkippedInputs& o) {
  for (const auto& kv : o.count) count[kv.first] += kv.second;
  for (const auto& p : o.paths) KeepSkippedPath(&paths, p);
  walk_errors += o.walk_errors;
}

uint64_t SkippedInputs::Total() const {
  uint64_t t = 0;
  for (const auto& kv : count) t += kv.second;
  return t;
}

std::string SkippedInputs::Summary() const {
  if (Total() == 0 && walk_errors == 0) return "";
  std::string out;
  auto part = [&](const char* reason, const char* one, const char* many) {
    auto it = count.find(reason);
    if (it == count.end() || it->second == 0) return;
    std::string names;
    size_t shown = 0;
    for (const auto& p : paths) {
      if (p.first != reason) continue;
      if (shown == 3) {
        names += ", ...";
        break;
      }
      names += (shown++ ? ", " : "") + std::string(BaseName(p.second));
    }
    out += (out.empty() ? "" : ", ") + std::to_string(it->second) + " " + (it->second == 1 ? one : many);
    if (!names.empty()) out += " (" + names + ")";
  };
  part(kSkipNotALog, "non-log file", "non-log files");
  part(kSkipBinary, "binary file", "binary files");
  part(kSkipDuplicate, "duplicate", "duplicates");
  part(kSkipHidden, "hidden file", "hidden files");
  std::string line = out.empty() ? "" : "skipped: " + out;
  auto not_a_log = count.find(kSkipNotALog);
  if (not_a_log != count.end())
    line += not_a_log->second == 1 ? "; use -g GLOB to include it" : "; use -g GLOB to include them";
  if (count.count(kSkipHidden)) line += "; use --hidden to read hidden files";
  if (walk_errors) {
    line += (line.empty() ? "" : "; ") + std::to_string(walk_errors) + " path" + (walk_errors == 1 ? "" : "s") +
            " could not be read (see errors)";
  }
  return line;
}

// ---- Globs ----

namespace {

// Translates a glob (without its '!') to an RE2 pattern; false on a malformed glob.
bool GlobToRegex(std::string_view g, std::string* re, std::string* err) {
  std::string out;
  int braces = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    char c = g[i];
    if (c == '*') {
      if (i + 1 < g.size() && g[i + 1] == '*') {
        bool at_start = i == 0 || g[i - 1] == '/';
        ++i;
        if (at_start && i + 1 < g.size() && g[i + 1] == '/') {
          out += "(?:.*/)?";  // "**/": zero or more directories
          ++i;
        } else {
          out += ".*";
        }
      } else {
        out += "[^/]*";
      }
    } else if (c == '?') {
      out += "[^/]";
    } else if (c == '[') {
      size_t j = i + 1;
      bool neg = j < g.size() && (g[j] == '!' || g[j] == '^');
      if (neg) ++j;
      size_t k = j;
      if (k < g.size() && g[k] == ']') ++k;  // "[]...]": a literal ']'
      while (k < g.size() && g[k] != ']') ++k;
      if (k >= g.size()) {
        *err = "unclosed '[' in glob '" + std::string(g) + "'";
        return false;
      }
      out += neg ? "[^/" : "[";
      for (size_t x = j; x < k; ++x) {
        if (g[x] == '\\' || g[x] == '[' || g[x] == ']' || (g[x] == '^' && x == j)) out += '\\';
        out += g[x];
      }
      out += ']';
      i = k;
    } else if (c == '{') {
      ++braces;
      out += "(?:";
    } else if (c == '}' && braces > 0) {
      --braces;
      out += ")";
    } else if (c == ',' && braces > 0) {
      out += "|";
    } else if (c == '\\' && i + 1 < g.size()) {
      out += RE2::QuoteMeta(std::string(1, g[++i]));
    } else {
      out += RE2::QuoteMeta(std::string(1, c));
    }
  }
  if (braces) {
    *err = "unclosed '{' in glob '" + std::string(g) + "'";
    return false;
  }
  *re = out;
  return true;
}

}  // namespace

GlobFilter::GlobFilter() = default;
GlobFilter::~GlobFilter() = default;
GlobFilter::GlobFilter(const GlobFilter&) = default;
GlobFilter& GlobFilter::operator=(const GlobFilter&) = default;

bool GlobFilter::Add(const std::string& glob, std::string* err) {
  std::string_view g = glob;
  Glob x;
  if (StartsWith(g, "!")) {
    x.exclude = true;
    g.remove_prefix(1);
  }
  while (StartsWith(g, "/")) g.remove_prefix(1);  // anchored at the walked directory
  while (g.size() > 1 && g.back() == '/') g.remove_suffix(1);
  if (g.empty()) {
    *err = "empty glob '" + glob + "'";
    return false;
  }
  x.basename = g.find('/') == std::string_view::npos && glob.find('/') == std::string::npos;
  std::string re;
  if (!GlobToRegex(g, &re, err)) return false;
  RE2::Options o;
  o.set_dot_nl(true);
  o.set_log_errors(false);
  auto compiled = std::make_shared<const RE2>(re, o);
  if (!compiled->ok()) {
    *err = "invalid glob '" + glob + "': " + compiled->error();
    return false;
  }
  x.re = std::move(compiled);
  any_include_ |= !x.exclude;
  globs_.push_back(std::move(x));
  return true;
}

GlobFilter::Verdict GlobFilter::Match(std::string_view rel) const {
  while (StartsWith(rel, "./")) rel.remove_prefix(2);
  std::string_view base = BaseName(rel);
  for (auto it = globs_.rbegin(); it != globs_.rend(); ++it) {
    re2::StringPiece subject(it->basename ? base.data() : rel.data(), it->basename ? base.size() : rel.size());
    if (RE2::FullMatch(subject, *it->re)) return it->exclude ? Verdict::kExclude : Verdict::kInclude;
  }
  return Verdict::kNone;
}

bool GlobFilter::Selects(std::string_view rel) const {
  Verdict v = Match(rel);
  return v == Verdict::kInclude || (v == Verdict::kNone && !any_include_);
}

// ---- Expansion ----

std::string WithoutDotSegments(std::string_view p) {
  std::string out;
  while (StartsWith(p, "./")) p.remove_prefix(2);
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '/' && p.substr(i + 1, 2) == "./") {
      ++i;  // drop "/." of "/./"
      continue;
    }
    out += p[i];
  }
  return out;
}

namespace {

struct Candidate {
  InputPath in;
  dev_t dev = 0;
  ino_t ino = 0;
  bool has_id = false;
  bool via_link = false;  // reached through a symbolic link
};

class Walker {
 public:
  Walker(const GlobFilter& globs, ExpandedInputs* out, std::vector<Candidate>* found, std::vector<std::string>* errors)
      : globs_(globs), out_(out), found_(found), errors_(errors) {}

  void Walk(const std::string& dir, const std::string& rel, bool via_link, std::set<std::pair<dev_t, ino_t>>* active,
            int depth) {
    if (depth > 64) {
      Error(dir, "directory nesting too deep");
      return;
    }
    DIR* d = opendir(dir.c_str());
    if (!d) {
      Error(dir, strerror(errno));
      return;
    }
    std::vector<std::string> names;
    while (dirent* e = readdir(d)) {
      const std::string_view n = e->d_name;
      if (n == "." || n == "..") continue;
      if (n[0] == '.' && !globs_.hidden()) {
        // Hidden, as in ripgrep: counted (a directory once), not read; --hidden reads it.
        out_->skipped.Add(kSkipHidden, dir + (dir.back() == '/' ? "" : "/") + std::string(n));
        continue;
      }
      names.push_back(e->d_name);
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      std::string p = dir + (dir.back() == '/' ? "" : "/") + n;
      std::string r = rel.empty() ? n : rel + "/" + n;
      struct stat lst, st;
      bool link = lstat(p.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode);
      if (stat(p.c_str(), &st) != 0) {
        int e = errno;
        Error(p, link && e == ENOENT ? "dangling symbolic link (its target does not exist)"
                 : e == ELOOP        ? "symbolic link loop"
                                     : strerror(e));
        continue;
      }
      if (S_ISDIR(st.st_mode)) {
        if (!globs_.Walks(r)) continue;
        auto key = std::make_pair(st.st_dev, st.st_ino);
        if (active->count(key)) {
          Error(p, "symbolic link loop (directory already being scanned)");
          continue;
        }
        active->insert(key);
        Walk(p, r, via_link || link, active, depth + 1);
        active->erase(key);
      } else if (S_ISREG(st.st_mode)) {
        GlobFilter::Verdict v = globs_.Match(r);
        if (!globs_.Selects(r)) continue;  // the user's choice: not counted
        bool globbed = v == GlobFilter::Verdict::kInclude;
        if (!globbed) {
          if (const char* why = SkipByName(n)) {
            out_->skipped.Add(why, p);
            continue;
          }
        }
        Candidate c;
        c.in = InputPath{p, true, globbed};
        c.dev = st.st_dev;
        c.ino = st.st_ino;
        c.has_id = true;
        c.via_link = via_link || link;
        found_->push_back(std::move(c));
      }
      // FIFOs, sockets and devices inside directories are skipped: reading them could block.
    }
  }

  void Error(const std::string& path, const std::string& why) {
    errors_->push_back("cannot read " + path + ": " + why);
    out_->skipped.walk_errors++;
  }

 private:
  const GlobFilter& globs_;
  ExpandedInputs* out_;
  std::vector<Candidate>* found_;
  std::vector<std::string>* errors_;
};

}  // namespace

ExpandedInputs ExpandInputs(const std::vector<std::string>& args, const GlobFilter& globs,
                            std::vector<std::string>* errors) {
  ExpandedInputs out;
  std::vector<Candidate> found;
  Walker walker(globs, &out, &found, errors);
  for (const auto& a : args) {
    if (a == "-") {
      Candidate c;
      c.in.path = a;
      found.push_back(std::move(c));
      continue;
    }
    struct stat st;
    if (stat(a.c_str(), &st) != 0) {
      walker.Error(a, strerror(errno));
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      std::set<std::pair<dev_t, ino_t>> active{{st.st_dev, st.st_ino}};
      std::string d = a;
      while (d.size() > 1 && d.back() == '/') d.pop_back();
      struct stat lst;
      bool link = lstat(d.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode);
      walker.Walk(d, "", link, &active, 0);
    } else {
      // Regular files, and FIFOs/devices named explicitly: always read.
      Candidate c;
      c.in.path = a;
      c.dev = st.st_dev;
      c.ino = st.st_ino;
      c.has_id = true;
      found.push_back(std::move(c));
    }
  }
  // Each real file once. Of the paths that reach it, the one kept is: named
  // on the command line (no hygiene) before walked, reached without a link
  // before through one, then the first in path order ("./" aside).
  auto better = [](const Candidate& x, const Candidate& y) {
    if (x.in.walked != y.in.walked) return !x.in.walked;
    if (x.via_link != y.via_link) return !x.via_link;
    std::string a = WithoutDotSegments(x.in.path), b = WithoutDotSegments(y.in.path);  // "a.log" before "./a.log"
    if (a != b) return a < b;
    return x.in.path.size() < y.in.path.size();
  };
  std::sort(found.begin(), found.end(), [&](const Candidate& x, const Candidate& y) {
    if (x.has_id != y.has_id) return x.has_id < y.has_id;
    if (!x.has_id) return x.in.path < y.in.path;
    if (x.dev != y.dev) return x.dev < y.dev;
    if (x.ino != y.ino) return x.ino < y.ino;
    return better(x, y);
  });
  std::vector<Candidate> dups;
  for (size_t i = 0; i < found.size(); ++i) {
    const Candidate& c = found[i];
    bool dup = i > 0 && (c.has_id ? found[i - 1].has_id && found[i - 1].dev == c.dev && found[i - 1].ino == c.ino
                                  : !found[i - 1].has_id && found[i - 1].in.path == c.in.path);
    if (dup) {
      dups.push_back(c);
    } else {
      out.files.push_back(c.in);
    }
  }
  std::sort(out.files.begin(), out.files.end(), [](const InputPath& x, const InputPath& y) { return x.path < y.path; });
  std::sort(dups.begin(), dups.end(), [](const Candidate& x, const Candidate& y) { return x.in.path < y.in.path; });
  for (const auto& d : dups) out.skipped.Add(kSkipDuplicate, d.in.path);
  return out;
}

std::vector<std::string> ExpandInputs(const std::vector<std::string>& args, std::vector<std::string>* errors) {
  std::vector<std::string> paths;
  for (auto& f : ExpandInputs(args, GlobFilter(), errors).files) paths.push_back(std::move(f.path));
  return paths;
}

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
  if (IsTarHeader(peek->head())) {
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
    if (input_.walked) {
      const char* why = SkipByContent(SniffName(input_.path), static_cast<Peekable*>(stream_.get())->head());
      if (why && (why == kSkipBinary || !input_.globbed)) {
        skipped_.Add(why, display_);
        return false;
      }
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
