// Internal to engine/io: what the source files (source.cc: opening inputs and
// reading them, tar members included; source_decode.cc: the decoders;
// source_select.cc: which files are read) share.
//
// Thread-safety: as ByteReader (one reader per thread); the functions are pure.
#ifndef NCCLSCAN_ENGINE_IO_SOURCE_INTERNAL_H_
#define NCCLSCAN_ENGINE_IO_SOURCE_INTERNAL_H_

#include <archive.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/io/source.h"

namespace ncclscan {

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
bool OpenArchive(struct archive* a, ArchiveSource* src, std::string* err);

// archive_read_data as ByteReader::Read (warnings are not errors).
ssize_t ReadArchiveData(struct archive* a, const ArchiveSource& src, char* buf, size_t n, std::string* err);

// Wraps raw bytes in the decoder their magic number asks for.
std::unique_ptr<ByteReader> Decompressed(std::unique_ptr<ByteReader> raw, std::string* err);

// A ustar / GNU / pax tar header: "ustar" at 257 and a valid header checksum.
bool IsTarHeader(std::string_view h);
bool IsZipHeader(std::string_view h);

// The name content hygiene looks at: the base name without a compression suffix.
std::string SniffName(std::string_view path);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_IO_SOURCE_INTERNAL_H_
