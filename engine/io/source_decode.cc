// The decoders ByteReader::Open puts over raw bytes, chosen by magic number
// (Decompressed): gzip (zlib), zstd, xz (liblzma) and bzip2 (libarchive's
// filter); and libarchive reading from a ByteReader, for bzip2 and for tar.
#include <archive.h>
#include <archive_entry.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "engine/io/source_internal.h"
#include "parsers/text_util.h"

namespace ncclscan {

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

}  // namespace ncclscan
