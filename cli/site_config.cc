#include "cli/site_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cli/cli_internal.h"

#ifndef NCCLSCAN_SYSCONFDIR
#define NCCLSCAN_SYSCONFDIR "/etc"
#endif
#ifndef NCCLSCAN_INSTALL_PREFIX
#define NCCLSCAN_INSTALL_PREFIX "/usr/local"
#endif

namespace ncclscan::cli {

namespace {

// A config file is a page of flags: past this it is a mistake (a log named by
// NCCLSCAN_CONFIG_PATH, /dev/zero), said as one.
constexpr size_t kMaxConfigBytes = 1 << 20;

std::string DirName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The prefix the running binary is installed under (PREFIX of PREFIX/bin/ncclscan),
// "" when it is not in a bin/ directory.
std::string InstalledPrefix() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  const std::string bin = DirName(std::string(buf, static_cast<size_t>(n)));
  if (bin != "/bin" && (bin.size() < 4 || bin.compare(bin.size() - 4, 4, "/bin") != 0)) return "";
  return DirName(bin);
}

// `var`'s value; *set says whether it is set at all (set and empty differ).
std::string Env(const char* var, bool* set) {
  const char* v = getenv(var);
  *set = v != nullptr;
  return v ? v : "";
}

std::string Trim(const std::string& s) {
  const char* blanks = " \t\r\f\v";
  const size_t b = s.find_first_not_of(blanks);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(blanks) - b + 1);
}

// *out: the file's bytes, at most kMaxConfigBytes. False with *err set when
// it cannot be read, is not a file to read (a FIFO would block) or is larger.
bool ReadSmallFile(const std::string& path, std::string* out, std::string* err) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    *err = std::strerror(errno);
    return false;
  }
  // /dev/null is a config file with nothing in it.
  if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
    *err = S_ISDIR(st.st_mode) ? "is a directory, not a file" : "not a regular file";
    return false;
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *err = std::strerror(errno);
    return false;
  }
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) {
    out->append(buf, static_cast<size_t>(n));
    if (out->size() > kMaxConfigBytes) break;
  }
  const int read_errno = errno;
  close(fd);
  if (n < 0) {
    *err = std::strerror(read_errno);
    return false;
  }
  if (out->size() > kMaxConfigBytes) {
    *err = "larger than 1 MiB: not a config file";
    return false;
  }
  return true;
}

}  // namespace

std::string SystemRulesDir() {
  bool set = false;
  std::string dir = Env("NCCLSCAN_SYSTEM_RULES", &set);
  if (set) return dir;
  // Where the binary is installed, not only where the build meant it to be:
  // `cmake --install --prefix P` and the .deb (built from a /usr/local
  // configuration, installed under /usr) move it after it was compiled.
  std::string sysconfdir = NCCLSCAN_SYSCONFDIR;
  const std::string prefix = InstalledPrefix();
  if (!prefix.empty() && prefix != NCCLSCAN_INSTALL_PREFIX) {
    sysconfdir = prefix == "/usr" || prefix == "/" ? "/etc" : prefix + "/etc";
  }
  return sysconfdir + "/ncclscan/rules.d";
}

bool SiteRuleDirs(std::vector<SiteRuleDir>* dirs) {
  struct stat st;
  const std::string system = SystemRulesDir();
  // Missing is the usual case; anything else (no permission) is the loader's
  // to say, as for any rule directory.
  if (!system.empty() && (stat(system.c_str(), &st) == 0 || (errno != ENOENT && errno != ENOTDIR))) {
    dirs->push_back({system, "system"});
  }
  bool set = false;
  const std::string list = Env("NCCLSCAN_RULES", &set);
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    const std::string dir = list.substr(start, end - start);
    start = end + 1;
    if (dir.empty()) continue;
    if (stat(dir.c_str(), &st) != 0) {
      Error("NCCLSCAN_RULES names '" + dir + "': " + std::strerror(errno) +
            " (NCCLSCAN_RULES is a ':'-separated list of rule directories; nothing was scanned)");
      return false;
    }
    dirs->push_back({dir, "NCCLSCAN_RULES"});
  }
  return true;
}

std::string ConfigFile::Where(const std::string& arg) const {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == arg || args[i].rfind(arg + "=", 0) == 0) return path + ":" + std::to_string(lines[i]);
  }
  return path;
}

bool ReadConfigFile(ConfigFile* cfg) {
  bool named = false;
  std::string path = Env("NCCLSCAN_CONFIG_PATH", &named);
  if (!named) {
    bool set = false;
    const std::string xdg = Env("XDG_CONFIG_HOME", &set);
    const std::string home = Env("HOME", &set);
    // The XDG base directory spec: a relative XDG_CONFIG_HOME is to be ignored.
    if (!xdg.empty() && xdg[0] == '/') {
      path = xdg + "/ncclscan/config";
    } else if (!home.empty()) {
      path = home + "/.config/ncclscan/config";
    }
    // Not there, or not reachable (sudo keeps another user's HOME): none.
    struct stat st;
    if (path.empty() || stat(path.c_str(), &st) != 0) return true;
  }
  if (path.empty()) return true;  // NCCLSCAN_CONFIG_PATH= : no config file
  std::string text, err;
  if (!ReadSmallFile(path, &text, &err)) {
    Error("config file " + path + ": " + err + (named ? " (named by NCCLSCAN_CONFIG_PATH)" : "") +
          "; --no-config ignores it");
    return false;
  }
  cfg->path = path;
  size_t start = 0;
  int line = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    ++line;
    const std::string arg = Trim(text.substr(start, nl - start));
    start = nl + 1;
    if (arg.empty() || arg[0] == '#') continue;
    cfg->args.push_back(arg);
    cfg->lines.push_back(line);
  }
  return true;
}

bool HasNoConfig(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--") return false;
    if (a == "--no-config") return true;
  }
  return false;
}

}  // namespace ncclscan::cli
