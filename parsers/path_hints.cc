#include "parsers/path_hints.h"

#include <vector>

#include "parsers/parsed_line.h"
#include "parsers/text_util.h"

namespace ncclscan {

namespace {

std::vector<std::string_view> SplitPath(std::string_view p) {
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i <= p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    if (j > i) parts.push_back(p.substr(i, j - i));
    i = j + 1;
  }
  return parts;
}

bool AllDigits(std::string_view s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (!IsDigit(c)) return false;
  return true;
}

bool LooksLikeHost(std::string_view t) {
  if (t.empty() || t.size() > 63 || t.find_first_of("0123456789-") == std::string_view::npos) return false;
  for (char c : t) {
    if (!(IsAlpha(c) || IsDigit(c) || c == '-' || c == '.' || c == '_')) return false;
  }
  return IsAlpha(t[0]) || IsDigit(t[0]);
}

// The host a kernel-log or tool-output file name carries ("" if none).
std::string_view KernelDumpHost(std::string_view base) {
  for (std::string_view ext : {".log", ".txt", ".out"}) {
    if (EndsWith(base, ext)) {
      base.remove_suffix(ext.size());
      break;
    }
  }
  for (std::string_view kind :
       {"dmesg", "kern", "kernel", "syslog", "journal", "journalctl", "nvidia-smi", "ibstat", "ibstatus", "topo"}) {
    // <host>.<kind>
    if (base.size() > kind.size() + 1 && EndsWith(base, kind) && base[base.size() - kind.size() - 1] == '.') {
      std::string_view host = base.substr(0, base.size() - kind.size() - 1);
      if (LooksLikeHost(host)) return host;
    }
    // <kind>.<host>, <kind>-<host>, <kind>_<host>
    if (base.size() > kind.size() + 1 && StartsWith(base, kind) &&
        (base[kind.size()] == '.' || base[kind.size()] == '-' || base[kind.size()] == '_')) {
      std::string_view host = base.substr(kind.size() + 1);
      if (LooksLikeHost(host)) return host;
    }
  }
  return {};
}

}  // namespace

PathHints ParsePathHints(std::string_view path) {
  PathHints h;
  std::vector<std::string_view> parts = SplitPath(path);
  if (parts.empty()) return h;
  std::string_view base = parts.back();
  // Strip compression suffixes for name matching.
  for (std::string_view ext : {".gz", ".zst", ".bz2", ".xz"}) {
    if (EndsWith(base, ext)) base.remove_suffix(ext.size());
  }
  // rank3.log / rank_3 / rank-3 / rank.3 (case-insensitive "rank").
  for (size_t i = 0; i + 4 < base.size(); ++i) {
    char c0 = base[i] | 0x20, c1 = base[i + 1] | 0x20, c2 = base[i + 2] | 0x20, c3 = base[i + 3] | 0x20;
    if (c0 != 'r' || c1 != 'a' || c2 != 'n' || c3 != 'k') continue;
    if (i > 0 && IsAlpha(base[i - 1])) continue;  // "crank", "frank"
    std::string_view rest = base.substr(i + 4);
    if (!rest.empty() && (rest[0] == '_' || rest[0] == '-' || rest[0] == '.')) rest.remove_prefix(1);
    int64_t v;
    if (ConsumeInt(&rest, &v) && (rest.empty() || !IsDigit(rest[0])) && v < kMaxRanks) {
      h.rank = static_cast<int>(v);
      break;
    }
  }
  // torchrun --log-dir: <run>/attempt_<k>/<local_rank>/{stdout,stderr}.log
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    std::string_view a = parts[i];
    if (!StartsWith(a, "attempt_")) continue;
    a.remove_prefix(8);
    int64_t att;
    if (!ConsumeInt(&a, &att) || !a.empty()) continue;
    if (i + 2 < parts.size() && AllDigits(parts[i + 1])) {
      std::string_view lr = parts[i + 1];
      int64_t v;
      // A number that does not fit is no local rank or attempt (not cast down).
      if (ConsumeIntBelow(&lr, kMaxRanks, &v) == IntParse::kOk) h.local_rank = static_cast<int>(v);
      if (att < kMaxRanks) h.attempt = static_cast<int>(att);
    }
  }
  // A host's kernel log or tool output saved under its name: node-7.dmesg.log,
  // dmesg.node-7.txt, dmesg-node-7.log, cn-234.nvidia-smi.log (the host alone, no pid).
  h.host = std::string(KernelDumpHost(base));
  // NCCL_DEBUG_FILE=…/nccl.%h.%p
  if (StartsWith(base, "nccl.")) {
    std::string_view rest = base.substr(5);
    size_t dot = rest.rfind('.');
    if (dot != std::string_view::npos && dot > 0 && AllDigits(rest.substr(dot + 1))) {
      std::string_view pid = rest.substr(dot + 1);
      int64_t v;
      ConsumeInt(&pid, &v);
      h.host = std::string(rest.substr(0, dot));
      h.pid = v;
    }
  }
  return h;
}

}  // namespace ncclscan
