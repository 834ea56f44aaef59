#include "engine/io/replace_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace ncclscan {

namespace {

mode_t FileMode() {
  static const mode_t mode = [] {
    mode_t mask = umask(0);
    umask(mask);
    return static_cast<mode_t>(0666 & ~mask);
  }();
  return mode;
}

}  // namespace

bool ReplaceFile(const std::string& path, std::string_view bytes, std::string* err) {
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string tmpl = (slash == std::string::npos ? "" : dir) + "." + base + ".XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  auto fail = [&](int e) {
    *err = "cannot write " + path + ": " + std::strerror(e);
    return false;
  };
  int fd = mkstemp(name.data());
  if (fd < 0) return fail(errno);
  int e = WriteAll(fd, bytes) ? 0 : errno;
  if (e == 0 && fchmod(fd, FileMode()) != 0) e = errno;
  if (::close(fd) != 0 && e == 0) e = errno;
  if (e == 0 && std::rename(name.data(), path.c_str()) != 0) e = errno;
  if (e != 0) {
    ::unlink(name.data());
    return fail(e);
  }
  return true;
}

bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t w = ::write(fd, bytes.data(), bytes.size());
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(w));
  }
  return true;
}

}  // namespace ncclscan
