#include "engine/source.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

namespace ncclscan {

namespace {

void Walk(const std::string& dir, std::set<std::pair<dev_t, ino_t>>* active, std::vector<std::string>* out,
          std::vector<std::string>* errors, int depth) {
  if (depth > 64) {
    errors->push_back("cannot read " + dir + ": directory nesting too deep");
    return;
  }
  DIR* d = opendir(dir.c_str());
  if (!d) {
    errors->push_back("cannot read " + dir + ": " + strerror(errno));
    return;
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;  // ".", "..", hidden files
    names.push_back(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& n : names) {
    std::string p = dir + (dir.back() == '/' ? "" : "/") + n;
    struct stat st;
    if (stat(p.c_str(), &st) != 0) {
      errors->push_back("cannot read " + p + ": " + strerror(errno));
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      auto key = std::make_pair(st.st_dev, st.st_ino);
      if (active->count(key)) {
        errors->push_back("cannot read " + p + ": symbolic link loop (directory already being scanned)");
        continue;
      }
      active->insert(key);
      Walk(p, active, out, errors, depth + 1);
      active->erase(key);
    } else if (S_ISREG(st.st_mode)) {
      out->push_back(p);
    }
    // FIFOs, sockets and devices inside directories are skipped: reading them could block.
  }
}

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

 protected:
  int fd_;
  bool own_;
};

// Bytes already read while sniffing the magic number, then the fd.
class SniffedFd {
 public:
  SniffedFd(int fd, bool own) : fd_(fd, own) {}
  ssize_t Read(char* buf, size_t n, std::string* err) {
    if (pos_ < head_.size()) {
      size_t k = std::min(n, head_.size() - pos_);
      std::memcpy(buf, head_.data() + pos_, k);
      pos_ += k;
      return static_cast<ssize_t>(k);
    }
    return fd_.Read(buf, n, err);
  }
  std::string head_;
  size_t pos_ = 0;
  FdReader fd_;
};

class PlainReader : public ByteReader {
 public:
  explicit PlainReader(std::unique_ptr<SniffedFd> in) : in_(std::move(in)) {}
  ssize_t Read(char* buf, size_t n, std::string* err) override { return in_->Read(buf, n, err); }

 private:
  std::unique_ptr<SniffedFd> in_;
};

class GzipReader : public ByteReader {
 public:
  explicit GzipReader(std::unique_ptr<SniffedFd> in) : in_(std::move(in)), inbuf_(1 << 18) {
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
  std::unique_ptr<SniffedFd> in_;
  std::vector<char> inbuf_;
  z_stream zs_;
  bool ok_ = false, eof_ = false, done_ = false, in_stream_ = false;
  std::string pending_error_;
};

class ZstdReader : public ByteReader {
 public:
  explicit ZstdReader(std::unique_ptr<SniffedFd> in) : in_(std::move(in)), inbuf_(ZSTD_DStreamInSize()) {
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
  std::unique_ptr<SniffedFd> in_;
  std::vector<char> inbuf_;
  ZSTD_inBuffer zin_{nullptr, 0, 0};
  ZSTD_DStream* ds_;
  bool eof_ = false, done_ = false, mid_frame_ = false;
  std::string pending_error_;
};

}  // namespace

std::vector<std::string> ExpandInputs(const std::vector<std::string>& args, std::vector<std::string>* errors) {
  std::vector<std::string> out;
  for (const auto& a : args) {
    if (a == "-") {
      out.push_back(a);
      continue;
    }
    struct stat st;
    if (stat(a.c_str(), &st) != 0) {
      errors->push_back("cannot read " + a + ": " + strerror(errno));
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      std::set<std::pair<dev_t, ino_t>> active{{st.st_dev, st.st_ino}};
      std::string d = a;
      while (d.size() > 1 && d.back() == '/') d.pop_back();
      Walk(d, &active, &out, errors, 0);
    } else {
      out.push_back(a);  // regular files, and FIFOs/devices named explicitly
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::unique_ptr<ByteReader> ByteReader::Open(const std::string& path, std::string* err) {
  int fd;
  bool own = true;
  if (path == "-") {
    fd = 0;
    own = false;
  } else {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
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
  }
  auto in = std::make_unique<SniffedFd>(fd, own);
  // Sniff up to 4 bytes of magic (short reads from pipes are retried).
  char magic[4];
  size_t got = 0;
  while (got < 4) {
    ssize_t r = in->fd_.Read(magic + got, 4 - got, err);
    if (r < 0) return nullptr;
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  in->head_.assign(magic, got);
  const unsigned char* m = reinterpret_cast<const unsigned char*>(magic);
  if (got >= 2 && m[0] == 0x1f && m[1] == 0x8b) return std::make_unique<GzipReader>(std::move(in));
  if (got >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) {
    return std::make_unique<ZstdReader>(std::move(in));
  }
  return std::make_unique<PlainReader>(std::move(in));
}

}  // namespace ncclscan
