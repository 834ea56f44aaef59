// simulate — fault-injecting NCCL / PyTorch cluster log simulator for ncclscan.
//
// Generates the logs a distributed training job of N ranks on M hosts would leave behind
// (NCCL_DEBUG=INFO init lines in the shape of a chosen NCCL version, COLL trace lines,
// application output, PyTorch ProcessGroupNCCL watchdog lines, torchrun agent lines), with one
// injected fault, plus the ground truth `expected.json` the regression runner reads.
//
// Self-contained on purpose: C++17 standard library only, so it builds anywhere with
//   g++ -O2 -std=c++17 -Wall -Wextra bench/simulate.cc -o simulate
// Output is a pure function of the arguments: every random choice comes from std::mt19937_64
// (whose sequence the standard fixes) through distributions written here, never from the
// std:: distributions (their algorithms differ between standard libraries), and no floating
// point from libm reaches the text.
//
// Shape references: docs/formats.md (section letters in comments refer to it).

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace fs = std::filesystem;

constexpr uint64_t kNsPerUs = 1000;
constexpr uint64_t kNsPerMs = 1000 * 1000;
constexpr uint64_t kNsPerSec = 1000 * 1000 * 1000;
constexpr uint32_t kOut = 0;  // stdout
constexpr uint32_t kErr = 1;  // stderr

// ----------------------------------------------------------------------------------------
// Randomness.

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  uint64_t Next() { return engine_(); }
  // Modulo bias is irrelevant here; what matters is that the mapping is ours, not the library's.
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : engine_() % n; }
  int64_t Range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(Below(hi - lo + 1)); }
  bool Chance(uint64_t num, uint64_t den) { return Below(den) < num; }

 private:
  std::mt19937_64 engine_;
};

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// ----------------------------------------------------------------------------------------
// Calendar (UTC, proleptic Gregorian; H. Hinnant's algorithms).

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

struct Civil {
  int64_t sec = -1;
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;

  void Set(int64_t s) {
    if (s == sec) return;
    sec = s;
    int64_t days = s / 86400;
    int64_t rem = s % 86400;
    hour = static_cast<int>(rem / 3600);
    minute = static_cast<int>(rem / 60 % 60);
    second = static_cast<int>(rem % 60);
    days += 719468;
    const int64_t era = days / 146097;
    const unsigned doe = static_cast<unsigned>(days - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
    month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
    year = static_cast<int>(yoe + era * 400 + (month <= 2));
  }
};

// ----------------------------------------------------------------------------------------
// Text building without printf on the hot path.

// An append-only byte buffer whose appends inline to a bounds check and a memcpy
// (std::string::append is an out-of-line call and showed at the top of the profile).
class Buf {
 public:
  // Forced inline so that appends of literals become fixed-size moves.
  [[gnu::always_inline]] void append(const char* p, size_t n) {
    if (n_ + n > v_.size()) Grow(n);
    std::memcpy(v_.data() + n_, p, n);
    n_ += n;
  }
  void append(std::string_view s) { append(s.data(), s.size()); }
  void push_back(char c) {
    if (n_ == v_.size()) Grow(1);
    v_[n_++] = c;
  }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  void clear() { n_ = 0; }
  const char* data() const { return v_.data(); }
  std::string_view view(size_t off, size_t len) const { return std::string_view(v_.data() + off, len); }

 private:
  [[gnu::noinline]] void Grow(size_t n) { v_.resize(std::max(v_.size() * 2, n_ + n + 4096)); }
  std::vector<char> v_;
  size_t n_ = 0;
};

// Digits are produced backwards into a small array and appended in one call: per-character
// push_back dominated the profile.
template <class Out>
void AppendDec(Out& s, uint64_t v) {
  char tmp[24];
  char* p = tmp + sizeof(tmp);
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  s.append(p, static_cast<size_t>(tmp + sizeof(tmp) - p));
}

template <class Out>
void AppendPadded(Out& s, uint64_t v, int width, char fill) {
  char tmp[48];
  char* end = tmp + sizeof(tmp);
  char* p = end;
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (end - p < width && p > tmp) *--p = fill;
  s.append(p, static_cast<size_t>(end - p));
}

template <class Out>
void AppendHex(Out& s, uint64_t v) {
  static const char kDigits[] = "0123456789abcdef";
  char tmp[16];
  char* p = tmp + sizeof(tmp);
  do {
    *--p = kDigits[v & 15];
    v >>= 4;
  } while (v != 0);
  s.append(p, static_cast<size_t>(tmp + sizeof(tmp) - p));
}

template <class Out>
void AppendInt(Out& s, int64_t v) {
  if (v < 0) {
    s.push_back('-');
    AppendDec(s, static_cast<uint64_t>(-v));
  } else {
    AppendDec(s, static_cast<uint64_t>(v));
  }
}

// "x.yy" from an integer count of 1/10^decimals units.
template <class Out>
void AppendFixed(Out& s, uint64_t v, int decimals) {
  uint64_t div = 1;
  for (int i = 0; i < decimals; ++i) div *= 10;
  AppendDec(s, v / div);
  s.push_back('.');
  AppendPadded(s, v % div, decimals, '0');
}

// "YYYY-MM-DD"
template <class Out>
void AppendDate(Out& s, const Civil& c) {
  AppendPadded(s, static_cast<uint64_t>(c.year), 4, '0');
  s.push_back('-');
  AppendPadded(s, static_cast<uint64_t>(c.month), 2, '0');
  s.push_back('-');
  AppendPadded(s, static_cast<uint64_t>(c.day), 2, '0');
}

// "HH:MM:SS"
template <class Out>
void AppendHms(Out& s, const Civil& c) {
  AppendPadded(s, static_cast<uint64_t>(c.hour), 2, '0');
  s.push_back(':');
  AppendPadded(s, static_cast<uint64_t>(c.minute), 2, '0');
  s.push_back(':');
  AppendPadded(s, static_cast<uint64_t>(c.second), 2, '0');
}

// ----------------------------------------------------------------------------------------
// Options.

enum class Fault {
  kHealthy,
  kDivergentRank,
  kSocketHost,
  kGdrMissingHost,
  kEnvMismatch,
  kVersionMismatch,
  kIbErrorStorm,
  kOomCascade,
  kPeerClosedStorm,
  kStraggler,
};
const char* const kFaultNames[] = {"healthy",           "divergent_rank",   "socket_host",    "gdr_missing_host",
                                   "env_mismatch",      "version_mismatch", "ib_error_storm", "oom_cascade",
                                   "peer_closed_storm", "straggler"};
constexpr int kNumFaults = 10;

enum class Layout { kPerRank, kInterleaved, kTorchrun };
const char* const kLayoutNames[] = {"per-rank", "interleaved", "torchrun"};

enum class Wrapper { kNone, kSrun, kTorchrun, kKubectl, kDocker };
const char* const kWrapperNames[] = {"none", "srun", "torchrun", "kubectl", "docker"};

struct Options {
  std::string out_dir;
  std::string corpus_dir;
  int ranks = 16;
  int hosts = 2;
  Fault fault = Fault::kHealthy;
  int culprit = -1;
  uint64_t seed = 1;
  double size_mb = 0.2;
  int steps = 0;  // training steps; 0: as many as --size-mb asks for
  Layout layout = Layout::kPerRank;
  Wrapper wrapper = Wrapper::kNone;
  std::string nccl_version = "2.21.5";
  bool timestamps = false;
  bool socket_net = false;  // --net socket: every host without IB
  int channels = 4;
  bool tp = true;  // second communicator: the ranks of each host
  std::vector<std::pair<std::string, std::string>> env;
};

struct Ver {
  int minor = 21;
  int patch = 5;
  std::string text = "2.21.5";
  std::string cuda = "12.4";
  bool AtLeast(int mi, int pa = 0) const { return minor > mi || (minor == mi && patch >= pa); }
};

// Accepted: 2.18.x … 2.27.x (the shapes docs/formats.md documents for that span).
bool ParseVer(const std::string& s, Ver* v) {
  int maj = 0, mi = 0, pa = 0;
  char extra = 0;
  if (std::sscanf(s.c_str(), "%d.%d.%d%c", &maj, &mi, &pa, &extra) != 3) return false;
  if (maj != 2 || mi < 18 || mi > 27 || pa < 0 || pa > 99) return false;
  v->minor = mi;
  v->patch = pa;
  v->text = s;
  v->cuda = mi <= 18 ? "12.2" : mi <= 23 ? "12.4" : "12.8";
  return true;
}

// ----------------------------------------------------------------------------------------
// The static description of a job.

struct HostInfo {
  std::string name;
  std::string ip;
  int agent_pid = 0;
  int ver = 0;  // index into Job::vers
  bool socket = false;
  bool gdr = true;
  std::vector<std::pair<std::string, std::string>> env;
};

struct RankInfo {
  int host = 0, local = 0, dev = 0;
  int pid = 0;
  uint64_t bus = 0;
  uint64_t comm0 = 0, comm_tp = 0, stream0 = 0, stream_tp = 0;
  uint64_t buf[4] = {0, 0, 0, 0};
  int nic = 0;
  int port = 0;
  // "host:pid:tid [dev] " for the threads that log.
  std::string pfx_main, pfx_init, pfx_tp, pfx_proxy, pfx_service, pfx_watchdog;
  // Fixed pieces of this rank's COLL lines, precomputed (they are most of the output).
  std::string coll_head;     // pfx_main + "NCCL INFO "
  std::string coll_tail[2];  // " comm 0x… [nranks=N] stream 0x…" for comm0 / the TP comm
  std::string c10;           // "[rank3]:"
};

struct Job {
  Options opt;
  int n = 0, m = 0, rph = 0;
  bool has_tp = false;
  bool agents = false;  // torchrun agents exist (every wrapper but srun)
  std::vector<Ver> vers;
  std::vector<HostInfo> hosts;
  std::vector<RankInfo> ranks;
  uint64_t commid0 = 0;
  std::vector<uint64_t> commid_tp;
  int culprit = -1;   // rank
  int bad_host = -1;  // host
  int div_variant = 0;
  int extra_enq = 0;  // collectives enqueued after the one that hangs
  uint64_t t0 = 0;    // ns since epoch, job start
};

uint64_t BusId(int dev) {
  static const uint64_t kBus[8] = {0x18000, 0x2a000, 0x3a000, 0x5d000, 0x9a000, 0xab000, 0xba000, 0xdb000};
  return dev < 8 ? kBus[dev] : 0x1b000 + static_cast<uint64_t>(dev) * 0x10000;
}

std::string ThreadPrefix(const HostInfo& h, int pid, int tid, int dev) {
  std::string s = h.name;
  s.push_back(':');
  AppendDec(s, static_cast<uint64_t>(pid));
  s.push_back(':');
  AppendDec(s, static_cast<uint64_t>(tid));
  s.append(" [");
  AppendDec(s, static_cast<uint64_t>(dev));
  s.append("] ");
  return s;
}

uint64_t HeapPtr(Rng& rng) { return 0x550000000000ULL + (rng.Below(0xffffffffffULL) & ~0xfULL); }
uint64_t DevPtr(Rng& rng) { return 0x7f0000000000ULL + rng.Below(0x7ffffULL) * 0x200000ULL; }

std::string Hostname(int h) {
  std::string s = "gpu-node-";
  AppendPadded(s, static_cast<uint64_t>(h), 3, '0');
  return s;
}

std::string HostIp(int h) {
  std::string s = "10.0.";
  AppendDec(s, static_cast<uint64_t>(h / 250));
  s.push_back('.');
  AppendDec(s, static_cast<uint64_t>(h % 250 + 1));
  return s;
}

Job BuildJob(const Options& opt) {
  Job job;
  job.opt = opt;
  job.n = opt.ranks;
  job.m = opt.hosts;
  job.rph = opt.ranks / opt.hosts;
  job.has_tp = opt.tp && job.rph >= 2;
  job.agents = opt.wrapper != Wrapper::kSrun;
  Rng rng(SplitMix(opt.seed ^ 0x5eed0001ULL));

  // 2024-11-22 10:02:17 UTC plus a seed-dependent number of minutes.
  job.t0 =
      (static_cast<uint64_t>(DaysFromCivil(2024, 11, 22)) * 86400 + 10 * 3600 + 2 * 60 + 17 + rng.Below(240) * 60) *
          kNsPerSec +
      rng.Below(kNsPerSec);

  Ver main_ver;
  ParseVer(opt.nccl_version, &main_ver);
  job.vers.push_back(main_ver);

  // The culprit rank (host faults: the bad host is the culprit's). Drawn even when given, so
  // that --culprit does not shift every later random choice.
  uint64_t pick = rng.Below(static_cast<uint64_t>(job.n));
  job.culprit = opt.fault == Fault::kHealthy ? -1 : opt.culprit >= 0 ? opt.culprit : static_cast<int>(pick);
  bool host_fault = opt.fault == Fault::kSocketHost || opt.fault == Fault::kGdrMissingHost ||
                    opt.fault == Fault::kEnvMismatch || opt.fault == Fault::kVersionMismatch ||
                    opt.fault == Fault::kIbErrorStorm || opt.fault == Fault::kPeerClosedStorm;
  if (host_fault) job.bad_host = job.culprit / job.rph;
  job.div_variant = static_cast<int>(rng.Below(2));
  job.extra_enq = static_cast<int>(rng.Below(3));
  bool others_ll128 = rng.Chance(1, 2);

  if (opt.fault == Fault::kVersionMismatch) {
    // The odd host runs an image with another NCCL: older when the job is new, newer when old.
    Ver odd;
    ParseVer(main_ver.AtLeast(22) ? "2.21.5" : (main_ver.AtLeast(19) ? "2.18.3" : "2.21.5"), &odd);
    job.vers.push_back(odd);
  }

  job.commid0 = rng.Next() | (1ULL << 60);
  int pid_stride = std::max(4000, job.rph * 20 + 3000);
  for (int h = 0; h < job.m; ++h) {
    HostInfo hi;
    hi.name = Hostname(h);
    hi.ip = HostIp(h);
    hi.socket = opt.socket_net || (opt.fault == Fault::kSocketHost && h == job.bad_host);
    hi.gdr = !hi.socket && !(opt.fault == Fault::kGdrMissingHost && h == job.bad_host);
    hi.ver = (opt.fault == Fault::kVersionMismatch && h == job.bad_host) ? 1 : 0;
    hi.env = opt.env;
    if (opt.fault == Fault::kEnvMismatch) {
      if (h == job.bad_host) {
        hi.env.emplace_back("NCCL_PROTO", "Simple");
      } else if (others_ll128 && job.m > 2) {
        // With two hosts, two explicit values leave no odd one out: only a
        // majority (or the unset default) makes the bad host decidable.
        hi.env.emplace_back("NCCL_PROTO", "LL128");
      }
    }
    hi.agent_pid = 1000 + h * pid_stride + static_cast<int>(rng.Below(1500));
    job.hosts.push_back(hi);
    job.commid_tp.push_back(rng.Next() | (1ULL << 59));
  }
  for (int r = 0; r < job.n; ++r) {
    RankInfo k;
    k.host = r / job.rph;
    k.local = r % job.rph;
    k.dev = k.local;
    const HostInfo& hi = job.hosts[k.host];
    k.pid = hi.agent_pid + 60 + k.local;
    int tid_base = hi.agent_pid + 300 + k.local * 16 + static_cast<int>(rng.Below(4));
    k.pfx_main = ThreadPrefix(hi, k.pid, k.pid, k.dev);
    k.pfx_init = ThreadPrefix(hi, k.pid, tid_base, k.dev);
    k.pfx_tp = ThreadPrefix(hi, k.pid, tid_base + 5, k.dev);
    k.pfx_proxy = ThreadPrefix(hi, k.pid, tid_base + 9, k.dev);
    k.pfx_service = ThreadPrefix(hi, k.pid, tid_base + 7, k.dev);
    k.pfx_watchdog = ThreadPrefix(hi, k.pid, tid_base + 12, k.dev);
    k.c10 = "[rank";
    AppendDec(k.c10, static_cast<uint64_t>(r));
    k.c10.append("]:");
    k.bus = BusId(k.dev);
    k.comm0 = HeapPtr(rng);
    k.comm_tp = HeapPtr(rng);
    k.stream0 = HeapPtr(rng);
    k.stream_tp = HeapPtr(rng);
    for (uint64_t& b : k.buf) b = DevPtr(rng);
    k.coll_head = k.pfx_main + "NCCL INFO ";
    for (int tp = 0; tp < 2; ++tp) {
      std::string& s = k.coll_tail[tp];
      s = " comm 0x";
      AppendHex(s, tp ? k.comm_tp : k.comm0);
      s += " [nranks=";
      AppendDec(s, static_cast<uint64_t>(tp ? job.rph : job.n));
      s += "] stream 0x";
      AppendHex(s, tp ? k.stream_tp : k.stream0);
    }
    int nics = std::min(job.rph, 8);
    k.nic = k.local % nics;
    k.port = static_cast<int>(rng.Range(32768, 60999));
    job.ranks.push_back(k);
  }
  return job;
}

// ----------------------------------------------------------------------------------------
// An epoch: the lines of all ranks for one slice of time, built in one arena.

struct Rec {
  uint64_t t;
  uint32_t src;  // rank, or n + host for a torchrun agent
  uint32_t stream;
  size_t off;
  size_t len;
};

class Epoch {
 public:
  Epoch& Begin(uint32_t src, uint32_t stream, uint64_t t) {
    cur_ = Rec{t, src, stream, arena_.size(), 0};
    return *this;
  }
  Epoch& S(std::string_view s) {
    arena_.append(s.data(), s.size());
    return *this;
  }
  Epoch& S(const std::string& s) {
    arena_.append(s.data(), s.size());
    return *this;
  }
  Epoch& S(const char* s) {
    arena_.append(s, std::strlen(s));
    return *this;
  }
  // String literals: the length is known at compile time.
  template <size_t N>
  Epoch& S(const char (&s)[N]) {
    arena_.append(s, N - 1);
    return *this;
  }
  Epoch& C(char c) {
    arena_.push_back(c);
    return *this;
  }
  Epoch& D(uint64_t v) {
    AppendDec(arena_, v);
    return *this;
  }
  Epoch& I(int64_t v) {
    AppendInt(arena_, v);
    return *this;
  }
  Epoch& X(uint64_t v) {
    AppendHex(arena_, v);
    return *this;
  }
  Epoch& P(uint64_t v) {
    arena_.append("0x");
    AppendHex(arena_, v);
    return *this;
  }
  Epoch& F(uint64_t v, int decimals) {
    AppendFixed(arena_, v, decimals);
    return *this;
  }
  Epoch& Pad(uint64_t v, int width, char fill) {
    AppendPadded(arena_, v, width, fill);
    return *this;
  }
  Buf& raw() { return arena_; }
  void End() {
    cur_.len = arena_.size() - cur_.off;
    recs_.push_back(cur_);
  }
  void Clear() {
    arena_.clear();
    recs_.clear();
  }
  const std::vector<Rec>& recs() const { return recs_; }
  std::string_view Text(const Rec& r) const { return arena_.view(r.off, r.len); }

 private:
  Buf arena_;
  std::vector<Rec> recs_;
  Rec cur_{0, 0, 0, 0, 0};
};

// ----------------------------------------------------------------------------------------
// Output: layouts, wrappers, buffered files.

class Sink {
 public:
  Sink(const Job& job, bool dry) : job_(job), dry_(dry) {}

  bool Open(std::string* err) {
    if (dry_) return true;
    const Options& o = job_.opt;
    std::error_code ec;
    fs::create_directories(o.out_dir, ec);
    if (ec) {
      *err = "cannot create " + o.out_dir + ": " + ec.message();
      return false;
    }
    auto add = [&](const std::string& path) { files_.push_back(OutFile{path, {}, nullptr, false}); };
    switch (o.layout) {
      case Layout::kInterleaved:
        add(o.out_dir + "/job.log");
        break;
      case Layout::kPerRank:
        for (int r = 0; r < job_.n; ++r) {
          add(o.out_dir + "/" + job_.hosts[job_.ranks[r].host].name + "/rank" + std::to_string(r) + ".log");
        }
        for (int h = 0; h < job_.m; ++h) add(o.out_dir + "/" + job_.hosts[h].name + "/agent.log");
        break;
      case Layout::kTorchrun:
        for (int r = 0; r < job_.n; ++r) {
          std::string d = o.out_dir + "/" + job_.hosts[job_.ranks[r].host].name + "/attempt_0/" +
                          std::to_string(job_.ranks[r].local);
          add(d + "/stdout.log");
          add(d + "/stderr.log");
        }
        for (int h = 0; h < job_.m; ++h) add(o.out_dir + "/" + job_.hosts[h].name + "/agent.log");
        break;
    }
    for (const OutFile& f : files_) {
      fs::create_directories(fs::path(f.path).parent_path(), ec);
      if (ec) {
        *err = "cannot create directory for " + f.path + ": " + ec.message();
        return false;
      }
    }
    keep_open_ = files_.size() <= 256;
    // Small per-file buffers: the kernel copies them while they are still in the CPU cache,
    // which measured 2x faster than multi-megabyte buffers with 64 files.
    size_t cap = (size_t{16} << 20) / files_.size();
    buf_cap_ = std::min<size_t>(std::max<size_t>(cap, size_t{16} << 10), size_t{1} << 20);
    // Worker files exist even when empty (torchrun creates both); agent logs only when used.
    for (size_t i = 0; i < files_.size(); ++i) {
      if (!IsAgentFile(i) && !Create(files_[i], err)) return false;
    }
    return true;
  }

  bool Flush(Epoch& ep, std::string* err) {
    const std::vector<Rec>& recs = ep.recs();
    if (job_.opt.layout == Layout::kInterleaved) {
      // A combined dump: whatever each process wrote, in time order. Stable, so one process's
      // lines with equal stamps keep their order and multi-line blocks stay together.
      order_.resize(recs.size());
      for (size_t i = 0; i < recs.size(); ++i) order_[i] = static_cast<uint32_t>(i);
      std::stable_sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) { return recs[a].t < recs[b].t; });
      for (uint32_t i : order_) {
        if (!Write(recs[i], ep.Text(recs[i]), err)) return false;
      }
    } else {
      for (const Rec& r : recs) {
        if (!Write(r, ep.Text(r), err)) return false;
      }
    }
    ep.Clear();
    return true;
  }

  bool Close(std::string* err) {
    for (OutFile& f : files_) {
      if (!f.buf.empty() && !FlushFile(f, err)) return false;
      if (f.fp != nullptr) {
        if (std::fclose(f.fp) != 0) {
          *err = "cannot write " + f.path;
          return false;
        }
        f.fp = nullptr;
      }
    }
    return true;
  }

  uint64_t bytes() const { return bytes_; }

 private:
  struct OutFile {
    std::string path;
    Buf buf;
    FILE* fp;
    bool created;
  };

  bool IsAgentFile(size_t i) const {
    switch (job_.opt.layout) {
      case Layout::kInterleaved:
        return false;
      case Layout::kPerRank:
        return i >= static_cast<size_t>(job_.n);
      case Layout::kTorchrun:
        return i >= static_cast<size_t>(2 * job_.n);
    }
    return false;
  }

  size_t FileFor(const Rec& r) const {
    uint32_t n = static_cast<uint32_t>(job_.n);
    switch (job_.opt.layout) {
      case Layout::kInterleaved:
        return 0;
      case Layout::kPerRank:
        return r.src;
      case Layout::kTorchrun:
        return r.src < n ? 2 * r.src + r.stream : n + r.src;
    }
    return 0;
  }

  bool Create(OutFile& f, std::string* err) {
    f.fp = std::fopen(f.path.c_str(), "wb");
    if (f.fp == nullptr) {
      *err = "cannot open " + f.path + ": " + std::strerror(errno);
      return false;
    }
    f.created = true;
    if (!keep_open_) {
      std::fclose(f.fp);
      f.fp = nullptr;
    }
    return true;
  }

  bool FlushFile(OutFile& f, std::string* err) {
    if (!f.created && !Create(f, err)) return false;
    if (f.fp == nullptr) {
      f.fp = std::fopen(f.path.c_str(), "ab");
      if (f.fp == nullptr) {
        *err = "cannot open " + f.path + ": " + std::strerror(errno);
        return false;
      }
    }
    if (std::fwrite(f.buf.data(), 1, f.buf.size(), f.fp) != f.buf.size()) {
      *err = "cannot write " + f.path + ": " + std::strerror(errno);
      return false;
    }
    buffered_ -= f.buf.size();
    f.buf.clear();
    if (!keep_open_) {
      if (std::fclose(f.fp) != 0) {
        *err = "cannot write " + f.path;
        return false;
      }
      f.fp = nullptr;
    }
    return true;
  }

  bool Write(const Rec& r, std::string_view line, std::string* err) {
    Buf* out = &scratch_;
    OutFile* f = nullptr;
    if (!dry_) {
      f = &files_[FileFor(r)];
      out = &f->buf;
    }
    size_t before = out->size();
    Render(*out, r, line);
    size_t added = out->size() - before;
    bytes_ += added;
    if (dry_) {
      scratch_.clear();
      return true;
    }
    buffered_ += added;
    if (f->buf.size() >= buf_cap_) return FlushFile(*f, err);
    // Thousands of files each below its own threshold could still add up: bound the total.
    if (buffered_ > kMaxBuffered) {
      for (OutFile& g : files_) {
        if (!g.buf.empty() && !FlushFile(g, err)) return false;
      }
    }
    return true;
  }

  void Render(Buf& out, const Rec& r, std::string_view line) {
    bool agent = r.src >= static_cast<uint32_t>(job_.n);
    int host = agent ? static_cast<int>(r.src) - job_.n : job_.ranks[r.src].host;
    switch (job_.opt.wrapper) {
      case Wrapper::kNone:
        break;
      case Wrapper::kSrun:
        // srun --label: task id right-aligned to the width of the largest id (§G).
        if (!agent) {
          int width = 1;
          for (int v = job_.n - 1; v >= 10; v /= 10) ++width;
          AppendPadded(out, r.src, width, ' ');
          out.append(": ");
        }
        break;
      case Wrapper::kTorchrun:
        if (!agent) {
          out.append("[default");
          AppendDec(out, static_cast<uint64_t>(job_.ranks[r.src].local));
          out.append("]:");
        }
        break;
      case Wrapper::kKubectl:
        out.append("[pod/trainer-worker-");
        AppendDec(out, static_cast<uint64_t>(host));
        out.append("/pytorch] ");
        break;
      case Wrapper::kDocker: {
        out.append("{\"log\":\"");
        JsonEscape(out, line);
        out.append("\\n\",\"stream\":\"");
        out.append(r.stream == kOut ? "stdout" : "stderr");
        out.append("\",\"time\":\"");
        AppendRfc3339Nano(out, r.t);
        out.append("\"}\n");
        return;
      }
    }
    out.append(line.data(), line.size());
    out.push_back('\n');
  }

  static void JsonEscape(Buf& out, std::string_view s) {
    static const char kHex[] = "0123456789abcdef";
    struct Table {
      bool esc[256];
      Table() {
        for (int c = 0; c < 256; ++c) esc[c] = c < 0x20 || c == '"' || c == '\\';
      }
    };
    static const Table kTable;
    size_t run = 0;  // start of the pending span of characters that need no escaping
    for (size_t i = 0; i < s.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(s[i]);
      if (!kTable.esc[c]) continue;
      out.append(s.data() + run, i - run);
      run = i + 1;
      switch (c) {
        case '"':
          out.append("\\\"", 2);
          break;
        case '\\':
          out.append("\\\\", 2);
          break;
        case '\n':
          out.append("\\n", 2);
          break;
        case '\r':
          out.append("\\r", 2);
          break;
        case '\t':
          out.append("\\t", 2);
          break;
        default: {
          char u[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
          out.append(u, 6);
        }
      }
    }
    out.append(s.data() + run, s.size() - run);
  }

  // Go's time.RFC3339Nano, as docker writes it: trailing zeros of the fraction dropped.
  void AppendRfc3339Nano(Buf& out, uint64_t t) {
    civil_.Set(static_cast<int64_t>(t / kNsPerSec));
    AppendDate(out, civil_);
    out.push_back('T');
    AppendHms(out, civil_);
    uint64_t frac = t % kNsPerSec;
    if (frac != 0) {
      int digits = 9;
      while (frac % 10 == 0) {
        frac /= 10;
        --digits;
      }
      out.push_back('.');
      AppendPadded(out, frac, digits, '0');
    }
    out.push_back('Z');
  }

  const Job& job_;
  bool dry_;
  bool keep_open_ = true;
  size_t buf_cap_ = size_t{1} << 20;
  std::vector<OutFile> files_;
  std::vector<uint32_t> order_;
  static constexpr size_t kMaxBuffered = size_t{64} << 20;
  Buf scratch_;
  uint64_t bytes_ = 0;
  size_t buffered_ = 0;  // bytes held in file buffers
  Civil civil_;
};

// ----------------------------------------------------------------------------------------
// Collectives.

enum OpKind : uint8_t { kAllReduce, kAllGather, kReduceScatter, kBroadcast };
const char* const kOpNames[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast"};
const char* const kTorchOpNames[] = {"ALLREDUCE", "_ALLGATHER_BASE", "_REDUCE_SCATTER_BASE", "BROADCAST"};

struct Op {
  OpKind kind;
  bool tp;  // on the per-host tensor-parallel communicator
  uint64_t count;
  int dtype;
  int root;
  int buf;
};

constexpr uint64_t kGradBucket = 6553600;  // 25 MB of fp32

// ----------------------------------------------------------------------------------------
// The simulation proper. Copyable: a copy with a dry sink measures sizes without side effects.

struct Fate {
  uint64_t start = 0;   // failure output begins (0: none planned)
  uint64_t exit_t = 0;  // process gone
  int exitcode = 0;
};

class Sim {
 public:
  Sim(const Job& job, Epoch* ep) : job_(&job), ep_(ep), rng_(SplitMix(job.opt.seed ^ 0x5eed0002ULL)) {
    size_t srcs = static_cast<size_t>(job.n + job.m);
    last_t_.assign(srcs, 0);
    op0_.assign(static_cast<size_t>(job.n), 0);
    optp_.assign(static_cast<size_t>(job.n), 0);
    fate_.assign(static_cast<size_t>(job.n), Fate{});
    t_train_ = job.t0 + 12 * kNsPerSec + rng_.Below(2 * kNsPerSec);
  }

  void set_epoch(Epoch* ep) { ep_ = ep; }
  // The hosts whose ranks printed an IB completion error (ib_error_storm), once Tail() ran.
  const std::set<int>& ib_reporter_hosts() const { return ib_reporter_hosts_; }
  void set_total_steps(int s) {
    total_steps_ = s;
    int lag = std::max(3, std::min(s / 3, 1000));
    strag_lag_ = std::min(lag, s - 2);
  }

  void InitAgents();
  void InitRanks(int lo, int hi);  // ranks [lo, hi)
  void Step();
  void Tail();

 private:
  const RankInfo& R(int r) const { return job_->ranks[static_cast<size_t>(r)]; }
  const HostInfo& H(int r) const { return job_->hosts[static_cast<size_t>(R(r).host)]; }
  const Ver& V(int r) const { return job_->vers[static_cast<size_t>(H(r).ver)]; }

  // Per-source clocks never go backwards, so a source's lines keep their order when sorted.
  uint64_t Now(uint32_t src, uint64_t t) {
    uint64_t& last = last_t_[src];
    if (t < last) t = last;
    last = t;
    return t;
  }
  uint64_t Jit(uint64_t lo, uint64_t hi) { return lo + rng_.Below(hi - lo + 1); }

  Epoch& Info(int r, const std::string& pfx, uint64_t t) {
    return ep_->Begin(static_cast<uint32_t>(r), kOut, Now(static_cast<uint32_t>(r), t)).S(pfx).S("NCCL INFO ");
  }
  // NCCL prints "\n" before a WARN header (§A): an empty line of the same process.
  Epoch& Warn(int r, const std::string& pfx, uint64_t t, std::string_view file_line) {
    t = Now(static_cast<uint32_t>(r), t);
    ep_->Begin(static_cast<uint32_t>(r), kOut, t).End();
    ep_->Begin(static_cast<uint32_t>(r), kOut, t);
    if (job_->opt.timestamps) {
      civil_.Set(static_cast<int64_t>(t / kNsPerSec));
      ep_->C('[');
      AppendDate(ep_->raw(), civil_);
      ep_->C(' ');
      AppendHms(ep_->raw(), civil_);
      ep_->S("] ");
    }
    return ep_->S(pfx).S(file_line).S(" NCCL WARN ");
  }
  Epoch& Raw(int r, uint32_t stream, uint64_t t) {
    return ep_->Begin(static_cast<uint32_t>(r), stream, Now(static_cast<uint32_t>(r), t));
  }
  // c10 header, PyTorch >= 2.4: "[rank3]:[E1122 10:15:32.123456789 file:line] " (§E.1).
  Epoch& C10(int r, uint64_t t, char sev, std::string_view file_line) {
    t = Now(static_cast<uint32_t>(r), t);
    civil_.Set(static_cast<int64_t>(t / kNsPerSec));
    ep_->Begin(static_cast<uint32_t>(r), kErr, t).S(R(r).c10).C('[').C(sev);
    ep_->D(static_cast<uint64_t>(civil_.month * 100 + civil_.day)).C(' ');
    AppendHms(ep_->raw(), civil_);
    return ep_->C('.').Pad(t % kNsPerSec, 9, '0').C(' ').S(file_line).S("] ");
  }
  // torch._logging glog-style header of the torchrun agent (§F, torch >= 2.3).
  Epoch& Glog(int h, uint64_t t, char sev, std::string_view path_line) {
    uint32_t src = static_cast<uint32_t>(job_->n + h);
    t = Now(src, t);
    civil_.Set(static_cast<int64_t>(t / kNsPerSec));
    ep_->Begin(src, kErr, t).C(sev).Pad(static_cast<uint64_t>(civil_.month), 2, '0');
    ep_->Pad(static_cast<uint64_t>(civil_.day), 2, '0').C(' ');
    AppendHms(ep_->raw(), civil_);
    ep_->C('.').Pad(t % kNsPerSec / kNsPerMs * 1000, 6, '0').C(' ');
    return ep_->D(static_cast<uint64_t>(job_->hosts[static_cast<size_t>(h)].agent_pid)).C(' ').S(path_line).S("] ");
  }
  Epoch& AgentRaw(int h, uint64_t t) {
    uint32_t src = static_cast<uint32_t>(job_->n + h);
    return ep_->Begin(src, kErr, Now(src, t));
  }

  void InitComm(int r, bool tp, uint64_t* t);
  void InitLine(int r, bool tp, const char* what, uint64_t t);
  void ChannelLines(int r, bool tp, uint64_t* t);
  int RingNext(int g, int c) const;
  int RingPrev(int g, int c) const;
  int StepOps(int j, Op* ops) const;
  uint64_t StepTime(int j) const {
    return t_train_ + static_cast<uint64_t>(j) * 500 * kNsPerMs +
           SplitMix(job_->opt.seed * 0x100000001b3ULL + static_cast<uint64_t>(j)) % (40 * kNsPerMs);
  }
  void RankStep(int r, int j, uint64_t t);
  void Coll(int r, const Op& op, uint64_t t);
  void AppLines(int j, uint64_t t);
  void HangOps(int r, int count, uint64_t t);

  // Tails.
  void TailHealthy();
  void TailDivergent();
  void TailIbStorm();
  void TailOom();
  void TailPeerClosed();
  void TimeoutBlock(int r, uint64_t t, uint64_t seq, uint64_t enq, uint64_t done, uint64_t ran_ms);
  void ErrorBlock(int r, uint64_t t, uint64_t seq, uint64_t enq, uint64_t done, const std::string& last_error);
  void AbortLines(int r, uint64_t t);
  void Frames(int r, uint64_t t, const char* fn1);
  void PlanFailure(int r, uint64_t start, uint64_t min_ms, uint64_t max_ms, int code);
  void Settle();
  bool Shown(int r) const;
  void Agents();

  const Job* job_;
  Epoch* ep_;
  Rng rng_;
  Civil civil_;
  std::vector<uint64_t> last_t_;
  std::vector<uint64_t> op0_, optp_;  // collectives issued per rank (= last SeqNum on PG 0)
  std::vector<Fate> fate_;
  std::vector<uint64_t> agent_t_;  // per host: when its agent SIGTERMs the survivors (0: never)
  std::vector<int> first_;         // per host: the worker whose exit the agent reports
  uint64_t t_train_ = 0;
  int step_ = 0;
  int total_steps_ = 1 << 30;
  int strag_lag_ = 0;
  int strag_done_ = 0;
  std::set<int> ib_reporter_hosts_;
};

// ---- init (§A, §B) ----

void Sim::InitLine(int r, bool tp, const char* what, uint64_t t) {
  const RankInfo& k = R(r);
  const Ver& v = V(r);
  int rank = tp ? k.local : r;
  int nranks = tp ? job_->rph : job_->n;
  Epoch& e = Info(r, tp ? k.pfx_tp : k.pfx_init, t);
  if (v.AtLeast(23)) {
    e.S("ncclCommInitRankConfig ");
  } else if (v.AtLeast(21)) {
    e.S("ncclCommInitRank ");
  }
  e.S("comm ").P(tp ? k.comm_tp : k.comm0).S(" rank ").D(static_cast<uint64_t>(rank));
  e.S(" nranks ").D(static_cast<uint64_t>(nranks)).S(" cudaDev ").D(static_cast<uint64_t>(k.dev));
  if (v.AtLeast(18, 3)) e.S(" nvmlDev ").D(static_cast<uint64_t>(k.dev));
  e.S(" busId ").X(k.bus).S(" commId ");
  e.P(tp ? job_->commid_tp[static_cast<size_t>(k.host)] : job_->commid0).S(" - Init ").S(what);
  e.End();
}

// Ring of channel c of the global communicator: hosts in order, each host's ranks rotated by c,
// so that successive channels enter and leave a host through different GPUs (and NICs), as
// NCCL's rings do.
int Sim::RingNext(int g, int c) const {
  const Job& job = *job_;
  int h = g / job.rph, l = g % job.rph;
  int i = ((l - c) % job.rph + job.rph) % job.rph;
  if (i + 1 < job.rph) return h * job.rph + (c + i + 1) % job.rph;
  return (h + 1) % job.m * job.rph + c % job.rph;
}

int Sim::RingPrev(int g, int c) const {
  const Job& job = *job_;
  int h = g / job.rph, l = g % job.rph;
  int i = ((l - c) % job.rph + job.rph) % job.rph;
  if (i > 0) return h * job.rph + (c + i - 1) % job.rph;
  return (h + job.m - 1) % job.m * job.rph + (c + job.rph - 1) % job.rph;
}

void Sim::ChannelLines(int r, bool tp, uint64_t* t) {
  const RankInfo& k = R(r);
  const HostInfo& h = H(r);
  const Ver& v = V(r);
  const std::string& pfx = tp ? k.pfx_tp : k.pfx_init;
  int nranks = tp ? job_->rph : job_->n;
  if (nranks < 2) return;
  int base = tp ? r - k.local : 0;   // global rank of comm rank 0
  bool old_ids = !v.AtLeast(18, 3);  // busId hex in brackets until 2.18.1 (§B)
  auto peer_id = [&](Epoch& e, int g) {
    e.D(static_cast<uint64_t>(g - base)).C('[');
    if (old_ids) {
      e.X(R(g).bus);
    } else {
      e.D(static_cast<uint64_t>(R(g).dev));
    }
    e.C(']');
  };
  auto net = [&](Epoch& e) {
    if (h.socket) {
      e.S("NET/Socket/0");
    } else {
      e.S("NET/IB/").D(static_cast<uint64_t>(k.nic));
      if (h.gdr) e.S("/GDRDMA");
    }
  };
  bool gdr_said = h.socket;
  for (int c = 0; c < job_->opt.channels; ++c) {
    int gnext, gprev;
    if (tp) {
      gnext = base + (k.local + 1) % nranks;
      gprev = base + (k.local + nranks - 1) % nranks;
    } else {
      gnext = RingNext(r, c);
      gprev = RingPrev(r, c);
    }
    bool recv_net = R(gprev).host != k.host;
    bool send_net = R(gnext).host != k.host;
    if ((recv_net || send_net) && !gdr_said) {
      gdr_said = true;
      *t += Jit(100 * kNsPerUs, 2 * kNsPerMs);
      Info(r, pfx, *t)
          .S("NET/IB : GPU Direct RDMA ")
          .S(h.gdr ? "Enabled" : "Disabled")
          .S(" for HCA ")
          .D(static_cast<uint64_t>(k.nic))
          .S(" 'mlx5_")
          .D(static_cast<uint64_t>(k.nic))
          .S("'")
          .End();
    }
    if (recv_net) {
      *t += Jit(50 * kNsPerUs, 3 * kNsPerMs);
      Epoch& e = Info(r, pfx, *t).S("Channel ").Pad(static_cast<uint64_t>(c), 2, '0').S("/0 : ");
      peer_id(e, gprev);
      e.S(" -> ");
      peer_id(e, r);
      e.S(" [receive] via ");
      net(e);
      e.End();
    }
    *t += Jit(50 * kNsPerUs, 3 * kNsPerMs);
    Epoch& e = Info(r, pfx, *t).S("Channel ").Pad(static_cast<uint64_t>(c), 2, '0').S("/0 : ");
    peer_id(e, r);
    e.S(" -> ");
    peer_id(e, gnext);
    if (send_net) {
      e.S(" [send] via ");
      net(e);
    } else {
      e.S(v.AtLeast(19) ? " via P2P/CUMEM/read" : " via P2P/IPC/read");
    }
    e.End();
  }
}

void Sim::InitComm(int r, bool tp, uint64_t* t) {
  const RankInfo& k = R(r);
  const HostInfo& h = H(r);
  const Ver& v = V(r);
  const std::string& pfx = tp ? k.pfx_tp : k.pfx_init;
  int me = tp ? k.local : r;
  int nranks = tp ? job_->rph : job_->n;
  auto adv = [&](uint64_t lo_us, uint64_t hi_us) {
    *t += Jit(lo_us * kNsPerUs, hi_us * kNsPerUs);
    return *t;
  };
  // <= 2.21: rank 0 of each communicator printf()s the bare banner (§A); for the first
  // communicator Init() prints it, before the network is set up.
  if (!v.AtLeast(22) && me == 0 && tp) {
    Raw(r, kOut, adv(50, 400)).S("NCCL version ").S(v.text).S("+cuda").S(v.cuda).End();
  }
  if (tp) {
    Info(r, pfx, adv(100, 2000)).S("Using network ").S(h.socket ? "Socket" : "IB").End();
  }
  InitLine(r, tp, "START", adv(100, 3000));
  if (v.AtLeast(23)) {
    // Seconds with 6 decimals, in microseconds; the total is the sum of the parts.
    uint64_t create = Jit(10, 99), send = Jit(100, 999), recv = Jit(1000, 800000);
    uint64_t ring = Jit(1000, 9999);
    Info(r, pfx, adv(20000, 400000))
        .S("Bootstrap timings total ")
        .F(create + send + recv + ring, 6)
        .S(" (create ")
        .F(create, 6)
        .S(", send ")
        .F(send, 6)
        .S(", recv ")
        .F(recv, 6)
        .S(", ring ")
        .F(ring, 6)
        .S(", delay 0.000000)")
        .End();
  }
  if (v.AtLeast(20)) {
    Info(r, pfx, adv(1000, 30000))
        .S("comm ")
        .P(tp ? k.comm_tp : k.comm0)
        .S(" rank ")
        .D(static_cast<uint64_t>(me))
        .S(" nRanks ")
        .D(static_cast<uint64_t>(nranks))
        .S(" nNodes ")
        .D(static_cast<uint64_t>(tp ? 1 : job_->m))
        .S(" localRanks ")
        .D(static_cast<uint64_t>(job_->rph))
        .S(" localRank ")
        .D(static_cast<uint64_t>(k.local))
        .S(" MNNVL 0")
        .End();
  }
  Info(r, pfx, adv(100, 3000))
      .S("NVLS multicast support is not available on dev ")
      .D(static_cast<uint64_t>(k.dev))
      .End();
  if (me == 0) {
    for (int c = 0; c < job_->opt.channels; ++c) {
      Epoch& e = Info(r, pfx, adv(10, 200)).S("Channel ").Pad(static_cast<uint64_t>(c), 2, '0');
      e.C('/').Pad(static_cast<uint64_t>(job_->opt.channels), 2, '0').S(" : ");
      // The ring as rank 0 sees it, from itself onwards (at most 20 entries printed).
      int g = tp ? r : 0;
      for (int i = 0; i < nranks && i < 20; ++i) {
        e.C(' ').Pad(static_cast<uint64_t>(tp ? g - r : g), 3, ' ');
        g = tp ? r + (g - r + 1) % nranks : RingNext(g, c);
      }
      e.End();
    }
  }
  {
    Epoch& e = Info(r, pfx, adv(10, 500)).S("Trees");
    for (int c = 0; c < job_->opt.channels; ++c) {
      e.S(" [")
          .D(static_cast<uint64_t>(c))
          .S("] ")
          .I(me + 1 < nranks ? me + 1 : -1)
          .S("/-1/-1->")
          .D(static_cast<uint64_t>(me))
          .S("->")
          .I(me - 1);
    }
    e.End();
  }
  Info(r, pfx, adv(10, 300)).S("P2P Chunksize set to ").D(v.AtLeast(19) ? 524288 : 131072).End();
  ChannelLines(r, tp, t);
  bool gdr_used = !h.socket && h.gdr && !tp && job_->m > 1;
  if (v.AtLeast(24)) {
    Info(r, pfx, adv(1000, 50000)).S("Connected all rings, use ring PXN 0 GDR ").D(gdr_used ? 1 : 0).End();
  } else {
    Info(r, pfx, adv(1000, 50000)).S("Connected all rings").End();
  }
  Info(r, pfx, adv(1000, 20000)).S("Connected all trees").End();
  Info(r, pfx, adv(10, 500))
      .S("threadThresholds 8/8/64 | ")
      .D(8 * static_cast<uint64_t>(nranks))
      .S("/8/64 | 512 | 512")
      .End();
  {
    uint64_t ch = static_cast<uint64_t>(job_->opt.channels);
    Epoch& e = Info(r, pfx, adv(10, 300)).D(ch).S(" coll channels, ");
    if (v.AtLeast(21)) e.S("0 collnet channels, ");
    e.S("0 nvls channels, ").D(ch).S(" p2p channels, 2 p2p channels per peer").End();
  }
  if (v.AtLeast(22)) {
    // Seconds with 2 decimals, in centiseconds; the total is the sum of the parts.
    uint64_t part[8] = {
        Jit(5, 30), v.AtLeast(23) ? Jit(0, 3) : 0, Jit(10, 90), Jit(0, 5), Jit(5, 40), Jit(0, 3), Jit(5, 60),
        Jit(0, 4)};
    uint64_t total = 0;
    for (uint64_t x : part) total += x;
    Epoch& e = Info(r, pfx, adv(10, 500));
    e.S(v.AtLeast(23) ? "Init timings - ncclCommInitRankConfig: rank " : "Init timings: rank ")
        .D(static_cast<uint64_t>(me))
        .S(" nranks ")
        .D(static_cast<uint64_t>(nranks))
        .S(" total ")
        .F(total, 2)
        .S(" (kernels ")
        .F(part[0], 2);
    if (v.AtLeast(23)) e.S(", alloc ").F(part[1], 2);
    e.S(", bootstrap ")
        .F(part[2], 2)
        .S(", allgathers ")
        .F(part[3], 2)
        .S(", topo ")
        .F(part[4], 2)
        .S(", graphs ")
        .F(part[5], 2)
        .S(", connections ")
        .F(part[6], 2)
        .S(", rest ")
        .F(part[7], 2)
        .S(")")
        .End();
  }
  InitLine(r, tp, "COMPLETE", adv(100, 3000));
}

void Sim::InitAgents() {
  const Job& job = *job_;
  if (job.agents) {
    static const char* const kBanner[] = {
        "", "*****************************************",
        "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to "
        "avoid your system being overloaded, please further tune the variable for optimal "
        "performance in your application as needed. ",
        "*****************************************"};
    for (int h = 0; h < job.m; ++h) {
      uint64_t t = job.t0 + Jit(0, 800 * kNsPerMs);
      for (const char* line : kBanner) {
        Glog(h, t, 'W', "torch/distributed/run.py:793").S(line).End();
      }
    }
  }
}

void Sim::InitRanks(int lo, int hi) {
  const Job& job = *job_;
  for (int r = lo; r < hi; ++r) {
    const RankInfo& k = R(r);
    const HostInfo& h = H(r);
    const Ver& v = V(r);
    uint64_t t = job.t0 + 2 * kNsPerSec + Jit(0, 1500 * kNsPerMs);
    auto adv = [&](uint64_t lo_us, uint64_t hi_us) {
      t += Jit(lo_us * kNsPerUs, hi_us * kNsPerUs);
      return t;
    };
    if (r == 0) {
      Raw(r, kOut, t)
          .S("Building model: 7.24B parameters, world_size=")
          .D(static_cast<uint64_t>(job.n))
          .S(", tensor_parallel=")
          .D(static_cast<uint64_t>(job.has_tp ? job.rph : 1))
          .End();
    }
    Info(r, k.pfx_main, adv(300000, 900000))
        .S(v.AtLeast(24) ? "Bootstrap: Using " : "Bootstrap : Using ")
        .S("eth0:")
        .S(h.ip)
        .S("<0>")
        .End();
    if (v.AtLeast(23)) {
      Info(r, k.pfx_main, adv(100, 2000))
          .S("NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.")
          .End();
    } else if (v.AtLeast(21)) {
      Info(r, k.pfx_main, adv(100, 2000)).S("NET/Plugin: Using internal network plugin.").End();
    } else if (v.AtLeast(19)) {
      Info(r, k.pfx_main, adv(100, 2000))
          .S("NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory No plugin "
             "found (libnccl-net.so), using internal implementation")
          .End();
    } else {
      Info(r, k.pfx_main, adv(100, 2000))
          .S("NET/Plugin : No plugin found (libnccl-net.so), using internal implementation")
          .End();
    }
    Info(r, k.pfx_main, adv(10, 500)).S("cudaDriverVersion ").D(job.vers[0].AtLeast(24) ? 12080 : 12040).End();
    if (v.AtLeast(22)) {
      Info(r, k.pfx_main, adv(10, 500)).S("NCCL version ").S(v.text).S("+cuda").S(v.cuda).End();
    } else if (r == 0) {
      Raw(r, kOut, adv(10, 500)).S("NCCL version ").S(v.text).S("+cuda").S(v.cuda).End();
    }
    for (const auto& kv : h.env) {
      Epoch& e = Info(r, k.pfx_main, adv(10, 300)).S(kv.first).S(" set by environment to ").S(kv.second);
      // Integer parameters print with a trailing period, strings without (§B).
      bool integer = !kv.second.empty() && kv.second.find_first_not_of("-0123456789") == std::string::npos;
      if (integer) e.C('.');
      e.End();
    }
    if (v.AtLeast(26)) {
      Info(r, k.pfx_main, adv(10, 500))
          .S("TUNER/Plugin: Could not find: libnccl-tuner.so libnccl-net.so. Using internal tuner plugin.")
          .End();
    }
    adv(20000, 90000);
    if (h.socket) {
      Info(r, k.pfx_init, t).S("NET/IB : No device found.").End();
      Info(r, k.pfx_init, adv(10, 800)).S("NET/Socket : Using [0]eth0:").S(h.ip).S("<0>").End();
    } else {
      Epoch& e = Info(r, k.pfx_init, t).S("NET/IB : Using");
      for (int i = 0; i < std::min(job.rph, 8); ++i) {
        e.S(" [").D(static_cast<uint64_t>(i)).S("]mlx5_").D(static_cast<uint64_t>(i)).S(":1/IB");
      }
      e.S(v.AtLeast(19) ? " [RO]; OOB eth0:" : " ; OOB eth0:").S(h.ip).S("<0>").End();
    }
    Info(r, k.pfx_init, adv(10, 800)).S("Using network ").S(h.socket ? "Socket" : "IB").End();
    InitComm(r, false, &t);
    if (job.has_tp) {
      adv(200000, 900000);
      InitComm(r, true, &t);
    }
  }
}

// ---- training (§C) ----

int Sim::StepOps(int j, Op* ops) const {
  uint64_t h = SplitMix(job_->opt.seed * 0x9e3779b97f4a7c15ULL ^ (static_cast<uint64_t>(j) + 1));
  int n = 0;
  if (job_->has_tp) {
    ops[n++] = Op{kAllReduce, true, 4194304, 9, 0, 0};
    ops[n++] = Op{kAllReduce, true, 4194304, 9, 0, 0};
  }
  if (j % 200 == 0) ops[n++] = Op{kBroadcast, false, 16, 4, 0, 1};
  if (j % 7 == 3) ops[n++] = Op{kReduceScatter, false, 262144, 9, 0, 3};
  int buckets = 1 + static_cast<int>(h % 2);
  for (int b = 0; b < buckets; ++b) ops[n++] = Op{kAllReduce, false, kGradBucket, 7, 0, b};
  if (j % 10 == 9) ops[n++] = Op{kAllReduce, false, 1, 7, 0, 1};
  if (j % 25 == 24) ops[n++] = Op{kAllGather, false, 1024, 9, 0, 2};
  return n;
}

void Sim::Coll(int r, const Op& op, uint64_t t) {
  const RankInfo& k = R(r);
  uint64_t& cnt = op.tp ? optp_[static_cast<size_t>(r)] : op0_[static_cast<size_t>(r)];
  uint64_t send = k.buf[op.buf], recv = send;
  if (op.kind == kAllGather) {
    send = k.buf[2] + op.count * 2 * static_cast<uint64_t>(op.tp ? k.local : r);
    recv = k.buf[2];
  } else if (op.kind == kReduceScatter) {
    send = k.buf[3];
    recv = k.buf[2];
  }
  ep_->Begin(static_cast<uint32_t>(r), kOut, Now(static_cast<uint32_t>(r), t))
      .S(k.coll_head)
      .S(kOpNames[op.kind])
      .S(": opCount ")
      .X(cnt)
      .S(" sendbuff ")
      .P(send)
      .S(" recvbuff ")
      .P(recv)
      .S(" count ")
      .D(op.count)
      .S(" datatype ")
      .D(static_cast<uint64_t>(op.dtype))
      .S(" op 0 root ")
      .D(static_cast<uint64_t>(op.root))
      .S(k.coll_tail[op.tp ? 1 : 0])
      .End();
  ++cnt;
}

void Sim::AppLines(int j, uint64_t t) {
  // Integer-only arithmetic: libm results may differ in the last bit between machines.
  uint64_t step = static_cast<uint64_t>(j) + 1;
  uint64_t loss = 21000 + 60000ULL * 400 / (400 + step) + rng_.Below(600);
  uint64_t lr_e7 = step >= 2000 ? 3000 : 3000 * step / 2000;  // learning rate in 1e-7
  uint64_t gnorm = 700 + rng_.Below(500);
  Epoch& e = Raw(0, kOut, t).S("step ").D(step).S(" | loss ").F(loss, 4).S(" | lr ");
  if (lr_e7 == 0) {
    e.S("0.0e+00");
  } else {
    // lr = lr_e7 * 1e-7 = v * 10^e; keep two significant digits of v.
    int exp10 = -8;
    uint64_t v = lr_e7 * 10;
    while (v >= 100) {
      v /= 10;
      ++exp10;
    }
    e.D(v / 10).C('.').D(v % 10).S("e-").Pad(static_cast<uint64_t>(-(exp10 + 1)), 2, '0');
  }
  e.S(" | grad_norm ").F(gnorm, 3).S(" | tokens/s ").D(46000 + rng_.Below(4000)).End();
  if (step % 10 == 0) {
    // tqdm writes to stderr.
    uint64_t total = 100000, pct = step * 100 / total, elapsed = step / 2;
    Epoch& b = Raw(0, kErr, t + 1000).S("Training: ").Pad(pct, 3, ' ').S("%|");
    int filled = static_cast<int>(step * 10 / total);
    for (int i = 0; i < 10; ++i) b.S(i < filled ? "\xe2\x96\x88" : " ");
    b.S("| ")
        .D(step)
        .C('/')
        .D(total)
        .S(" [")
        .Pad(elapsed / 3600, 2, '0')
        .C(':')
        .Pad(elapsed / 60 % 60, 2, '0')
        .C(':')
        .Pad(elapsed % 60, 2, '0')
        .S("<")
        .D((total - step) / 2 / 3600)
        .C(':')
        .Pad((total - step) / 2 / 60 % 60, 2, '0')
        .C(':')
        .Pad((total - step) / 2 % 60, 2, '0')
        .S(", ")
        .F(190 + rng_.Below(20), 2)
        .S("it/s, loss=")
        .F(loss / 10, 3)
        .S("]")
        .End();
  }
  if (step % 500 == 0) {
    Raw(0, kOut, t + 2000).S("Saving checkpoint to /checkpoints/run-42/step_").D(step).S(" ...").End();
  }
}

void Sim::RankStep(int r, int j, uint64_t t) {
  Op ops[12];
  int n = StepOps(j, ops);
  if (j == 0) {
    // First backward pass: a python warning on every rank (stderr).
    Raw(r, kErr, t)
        .S("/usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:1399: "
           "FutureWarning: `torch.cpu.amp.autocast(args...)` is deprecated. Please use "
           "`torch.amp.autocast('cpu', args...)` instead.")
        .End();
    Raw(r, kErr, t)
        .S("  with device_autocast_ctx, torch.cpu.amp.autocast(**cpu_autocast_kwargs), "
           "recompute_context:  # type: ignore[attr-defined]")
        .End();
  }
  for (int i = 0; i < n; ++i) {
    t += Jit(20 * kNsPerUs, 40 * kNsPerMs);
    Coll(r, ops[i], t);
  }
  if (r == 0) AppLines(j, t + Jit(100 * kNsPerUs, 3 * kNsPerMs));
}

void Sim::Step() {
  const Job& job = *job_;
  int j = step_++;
  uint64_t T = StepTime(j);
  bool strag = job.opt.fault == Fault::kStraggler;
  for (int r = 0; r < job.n; ++r) {
    uint64_t t = T + Jit(0, 4 * kNsPerMs);
    if (strag && r == job.culprit) {
      // The straggler runs slower: by the last step it is strag_lag_ steps behind.
      int64_t want = static_cast<int64_t>(j + 1) * (total_steps_ - strag_lag_) / total_steps_;
      while (strag_done_ < want) {
        RankStep(r, strag_done_++, t);
        t += Jit(1 * kNsPerMs, 30 * kNsPerMs);
      }
      continue;
    }
    RankStep(r, j, t);
  }
}

// ---- endings ----

void Sim::HangOps(int r, int count, uint64_t t) {
  for (int i = 0; i < count; ++i) {
    t += Jit(20 * kNsPerUs, 30 * kNsPerMs);
    Coll(r, Op{kAllReduce, false, kGradBucket, 7, 0, i % 2}, t);
  }
}

void Sim::AbortLines(int r, uint64_t t) {
  const RankInfo& k = R(r);
  if (job_->has_tp) {
    Info(r, k.pfx_watchdog, t)
        .S("comm ")
        .P(k.comm_tp)
        .S(" rank ")
        .D(static_cast<uint64_t>(k.local))
        .S(" nranks ")
        .D(static_cast<uint64_t>(job_->rph))
        .S(" cudaDev ")
        .D(static_cast<uint64_t>(k.dev))
        .S(" busId ")
        .X(k.bus)
        .S(" - Abort COMPLETE")
        .End();
  }
  Info(r, k.pfx_watchdog, t + Jit(1 * kNsPerMs, 30 * kNsPerMs))
      .S("comm ")
      .P(k.comm0)
      .S(" rank ")
      .D(static_cast<uint64_t>(r))
      .S(" nranks ")
      .D(static_cast<uint64_t>(job_->n))
      .S(" cudaDev ")
      .D(static_cast<uint64_t>(k.dev))
      .S(" busId ")
      .X(k.bus)
      .S(" - Abort COMPLETE")
      .End();
}

void Sim::Frames(int r, uint64_t t, const char* fn1) {
  static const char kLib[] = "/usr/local/lib/python3.10/dist-packages/torch/lib/";
  uint64_t base = 0x7f0000000000ULL + SplitMix(static_cast<uint64_t>(R(r).pid)) % 0xfff * 0x10000000ULL;
  Raw(r, kErr, t)
      .S("frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (")
      .P(base + 0x96446)
      .S(" in ")
      .S(kLib)
      .S("libc10.so)")
      .End();
  Raw(r, kErr, t).S("frame #1: ").S(fn1).S(" (").P(base + 0x3a1c5f2).S(" in ").S(kLib).S("libtorch_cuda.so)").End();
  Raw(r, kErr, t)
      .S("frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (")
      .P(base + 0x3a23a33)
      .S(" in ")
      .S(kLib)
      .S("libtorch_cuda.so)")
      .End();
  Raw(r, kErr, t)
      .S("frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (")
      .P(base + 0x3a24b7d)
      .S(" in ")
      .S(kLib)
      .S("libtorch_cuda.so)")
      .End();
}

// PyTorch 2.5 watchdog timeout (§E.3): victim lines, abort, tear-down, terminate.
void Sim::TimeoutBlock(int r, uint64_t t, uint64_t seq, uint64_t enq, uint64_t done, uint64_t ran_ms) {
  std::string pg = "[PG ID 0 PG GUID 0(default_pg) Rank " + std::to_string(r) + "] ";
  std::string rk = "[Rank " + std::to_string(r) + "] ";
  std::string msg = rk + "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" + std::to_string(seq) +
                    ", OpType=ALLREDUCE, NumelIn=" + std::to_string(kGradBucket) +
                    ", NumelOut=" + std::to_string(kGradBucket) + ", Timeout(ms)=600000) ran for " +
                    std::to_string(ran_ms) + " milliseconds before timing out.";
  C10(r, t, 'E', "ProcessGroupNCCL.cpp:616").S(msg).End();
  t += Jit(100 * kNsPerUs, 900 * kNsPerUs);
  C10(r, t, 'E', "ProcessGroupNCCL.cpp:1785")
      .S(pg)
      .S("Exception (either an error or timeout) detected by watchdog at work: ")
      .D(seq)
      .S(", last enqueued NCCL work: ")
      .D(enq)
      .S(", last completed NCCL work: ")
      .D(done)
      .C('.')
      .End();
  t += Jit(1 * kNsPerMs, 40 * kNsPerMs);
  AbortLines(r, t);
  t += Jit(40 * kNsPerMs, 90 * kNsPerMs);
  C10(r, t, 'E', "ProcessGroupNCCL.cpp:630")
      .S(rk)
      .S("Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA "
         "kernels, subsequent GPU operations might run on corrupted/incomplete data.")
      .End();
  C10(r, t + 20000, 'E', "ProcessGroupNCCL.cpp:636")
      .S(rk)
      .S("To avoid data inconsistency, we are taking the entire process down.")
      .End();
  t += Jit(200 * kNsPerUs, 2 * kNsPerMs);
  std::string term = pg + "Process group watchdog thread terminated with exception: " + msg;
  C10(r, t, 'E', "ProcessGroupNCCL.cpp:1601").S(term).End();
  Raw(r, kErr, t)
      .S("Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/"
         "ProcessGroupNCCL.cpp:618 (most recent call first):")
      .End();
  Frames(r, t,
         "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::"
         "duration<long, std::ratio<1l, 1000l> > >) + 0x1d2");
  Raw(r, kErr, t).End();
  Raw(r, kErr, t).S("terminate called after throwing an instance of 'c10::DistBackendError'").End();
  Raw(r, kErr, t).S("  what():  ").S(term).End();
}

// PyTorch 2.5 asynchronous NCCL error (§E.3) with the "Last error:" continuation.
void Sim::ErrorBlock(int r, uint64_t t, uint64_t seq, uint64_t enq, uint64_t done, const std::string& last_error) {
  std::string pg = "[PG ID 0 PG GUID 0(default_pg) Rank " + std::to_string(r) + "] ";
  std::string rk = "[Rank " + std::to_string(r) + "] ";
  C10(r, t, 'E', "ProcessGroupNCCL.cpp:1785")
      .S(pg)
      .S("Exception (either an error or timeout) detected by watchdog at work: ")
      .D(seq)
      .S(", last enqueued NCCL work: ")
      .D(enq)
      .S(", last completed NCCL work: ")
      .D(done)
      .C('.')
      .End();
  t += Jit(1 * kNsPerMs, 40 * kNsPerMs);
  AbortLines(r, t);
  t += Jit(40 * kNsPerMs, 90 * kNsPerMs);
  C10(r, t, 'E', "ProcessGroupNCCL.cpp:630")
      .S(rk)
      .S("Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA "
         "kernels, subsequent GPU operations might run on corrupted/incomplete data.")
      .End();
  C10(r, t + 20000, 'E', "ProcessGroupNCCL.cpp:636")
      .S(rk)
      .S("To avoid data inconsistency, we are taking the entire process down.")
      .End();
  t += Jit(200 * kNsPerUs, 2 * kNsPerMs);
  std::string head = pg +
                     "Process group watchdog thread terminated with exception: NCCL error: "
                     "remote process exited or there was a network error, NCCL version " +
                     V(r).text;
  auto detail = [&](uint64_t at) {
    Raw(r, kErr, at)
        .S("ncclRemoteError: A call failed possibly due to a network error or a "
           "remote process exiting prematurely.")
        .End();
    Raw(r, kErr, at).S("Last error:").End();
    Raw(r, kErr, at).S(last_error).End();
  };
  C10(r, t, 'E', "ProcessGroupNCCL.cpp:1601").S(head).End();
  detail(t);
  Raw(r, kErr, t)
      .S("Exception raised from checkForNCCLErrorsInternal at ../torch/csrc/"
         "distributed/c10d/ProcessGroupNCCL.cpp:2027 (most recent call first):")
      .End();
  Frames(r, t,
         "c10d::ProcessGroupNCCL::checkForNCCLErrorsInternal(std::shared_ptr<c10d::"
         "NCCLComm>&) + 0x220");
  Raw(r, kErr, t).End();
  Raw(r, kErr, t).S("terminate called after throwing an instance of 'c10::DistBackendError'").End();
  Raw(r, kErr, t).S("  what():  ").S(head).End();
  detail(t);
}

// A failing rank: its failure output starts at `start`; the process is gone at `exit`.
void Sim::PlanFailure(int r, uint64_t start, uint64_t min_ms, uint64_t max_ms, int code) {
  Fate& f = fate_[static_cast<size_t>(r)];
  f.start = start;
  f.exit_t = start + Jit(min_ms * kNsPerMs, max_ms * kNsPerMs);
  f.exitcode = code;
}

// torchrun agents act on the first worker exit of their host (plus a poll delay) and SIGTERM the
// rest: a failure that would only have started after that is never printed.
void Sim::Settle() {
  const Job& job = *job_;
  agent_t_.assign(static_cast<size_t>(job.m), 0);
  first_.assign(static_cast<size_t>(job.m), -1);
  for (int h = 0; h < job.m; ++h) {
    int first = -1;
    for (int l = 0; l < job.rph; ++l) {
      int r = h * job.rph + l;
      const Fate& f = fate_[static_cast<size_t>(r)];
      if (f.exit_t != 0 && (first < 0 || f.exit_t < fate_[static_cast<size_t>(first)].exit_t)) {
        first = r;
      }
    }
    if (first < 0) continue;
    first_[static_cast<size_t>(h)] = first;
    agent_t_[static_cast<size_t>(h)] = fate_[static_cast<size_t>(first)].exit_t + Jit(50 * kNsPerMs, 900 * kNsPerMs);
  }
}

bool Sim::Shown(int r) const {
  const Fate& f = fate_[static_cast<size_t>(r)];
  uint64_t cut = agent_t_[static_cast<size_t>(R(r).host)];
  return f.start != 0 && (cut == 0 || f.start < cut);
}

// torchrun agents (§F): the first worker that died on a host is reported, the others get SIGTERM.
void Sim::Agents() {
  const Job& job = *job_;
  if (!job.agents) return;
  for (int h = 0; h < job.m; ++h) {
    if (job.opt.fault == Fault::kPeerClosedStorm && h == job.bad_host) continue;  // host is gone
    int first = first_[static_cast<size_t>(h)];
    if (first < 0) continue;
    const Fate& ff = fate_[static_cast<size_t>(first)];
    uint64_t t = agent_t_[static_cast<size_t>(h)];
    static const char kApi[] = "torch/distributed/elastic/multiprocessing/api.py";
    for (int l = 0; l < job.rph; ++l) {
      int r = h * job.rph + l;
      if (r == first) continue;
      t += Jit(100 * kNsPerUs, 2 * kNsPerMs);
      Glog(h, t, 'W', std::string(kApi) + ":897")
          .S("Sending process ")
          .D(static_cast<uint64_t>(R(r).pid))
          .S(" closing signal SIGTERM")
          .End();
    }
    t += Jit(1 * kNsPerSec, 5 * kNsPerSec);
    Glog(h, t, 'E', std::string(kApi) + ":869")
        .S("failed (exitcode: ")
        .I(ff.exitcode)
        .S(") local_rank: ")
        .D(static_cast<uint64_t>(R(first).local))
        .S(" (pid: ")
        .D(static_cast<uint64_t>(R(first).pid))
        .S(") of binary: /usr/bin/python3")
        .End();
    static const char* const kTrace[] = {
        "Traceback (most recent call last):",
        "  File \"/usr/local/bin/torchrun\", line 8, in <module>",
        "    sys.exit(main())",
        "  File \"/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/"
        "multiprocessing/errors/__init__.py\", line 355, in wrapper",
        "    return f(*args, **kwargs)",
        "  File \"/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py\", line 919, "
        "in main",
        "    run(args)",
        "  File \"/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py\", line 910, "
        "in run",
        "    elastic_launch(",
        "  File \"/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py\", "
        "line 138, in __call__",
        "    return launch_agent(self._config, self._entrypoint, list(args))",
        "  File \"/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py\", "
        "line 269, in launch_agent",
        "    raise ChildFailedError(",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:"};
    t += Jit(1 * kNsPerMs, 20 * kNsPerMs);
    for (const char* line : kTrace) AgentRaw(h, t).S(line).End();
    civil_.Set(static_cast<int64_t>(ff.exit_t / kNsPerSec));
    Epoch& e = AgentRaw(h, t).S("  time      : ");
    AppendDate(e.raw(), civil_);
    e.C('_');
    AppendHms(e.raw(), civil_);
    e.End();
    AgentRaw(h, t).S("  host      : ").S(job.hosts[static_cast<size_t>(h)].name).End();
    AgentRaw(h, t)
        .S("  rank      : ")
        .D(static_cast<uint64_t>(first))
        .S(" (local_rank: ")
        .D(static_cast<uint64_t>(R(first).local))
        .S(")")
        .End();
    AgentRaw(h, t).S("  exitcode  : ").I(ff.exitcode).S(" (pid: ").D(static_cast<uint64_t>(R(first).pid)).S(")").End();
    AgentRaw(h, t).S("  error_file: <N/A>").End();
    if (ff.exitcode == -6) {
      AgentRaw(h, t)
          .S("  traceback : Signal 6 (SIGABRT) received by PID ")
          .D(static_cast<uint64_t>(R(first).pid))
          .End();
    } else {
      AgentRaw(h, t)
          .S("  traceback : To enable traceback see: "
             "https://pytorch.org/docs/stable/elastic/errors.html")
          .End();
    }
    AgentRaw(h, t).S("============================================================").End();
  }
}

void Sim::TailHealthy() {
  const Job& job = *job_;
  uint64_t T = StepTime(step_);
  Raw(0, kOut, T)
      .S("Training complete: ")
      .D(static_cast<uint64_t>(step_))
      .S(" steps. Saving final checkpoint to /checkpoints/run-42/final")
      .End();
  for (int r = 0; r < job.n; ++r) {
    const RankInfo& k = R(r);
    uint64_t t = T + 3 * kNsPerSec + Jit(0, 900 * kNsPerMs);
    if (job.has_tp) {
      Info(r, k.pfx_main, t)
          .S("comm ")
          .P(k.comm_tp)
          .S(" rank ")
          .D(static_cast<uint64_t>(k.local))
          .S(" nranks ")
          .D(static_cast<uint64_t>(job.rph))
          .S(" cudaDev ")
          .D(static_cast<uint64_t>(k.dev))
          .S(" busId ")
          .X(k.bus)
          .S(" - Destroy COMPLETE")
          .End();
    }
    t += Jit(1 * kNsPerMs, 60 * kNsPerMs);
    Info(r, k.pfx_main, t)
        .S("comm ")
        .P(k.comm0)
        .S(" rank ")
        .D(static_cast<uint64_t>(r))
        .S(" nranks ")
        .D(static_cast<uint64_t>(job.n))
        .S(" cudaDev ")
        .D(static_cast<uint64_t>(k.dev))
        .S(" busId ")
        .X(k.bus)
        .S(" - Destroy COMPLETE")
        .End();
  }
}

void Sim::TailDivergent() {
  const Job& job = *job_;
  int c = job.culprit;
  uint64_t T = StepTime(step_);
  uint64_t done = op0_[static_cast<size_t>(c)];  // culprit's last SeqNum, completed everywhere
  uint64_t hang = done + 1;
  uint64_t enq = hang + static_cast<uint64_t>(job.extra_enq);
  std::vector<uint64_t> t_hang(static_cast<size_t>(job.n), 0);
  for (int r = 0; r < job.n; ++r) {
    if (r == c) continue;
    t_hang[static_cast<size_t>(r)] = T + Jit(0, 4 * kNsPerMs);
    HangOps(r, 1 + job.extra_enq, t_hang[static_cast<size_t>(r)]);
    PlanFailure(r, t_hang[static_cast<size_t>(r)] + 600 * kNsPerSec + Jit(1 * kNsPerMs, 90 * kNsPerMs), 300, 1000, -6);
  }
  // Variant 1: the culprit itself reports an older SeqNum (its last one) as timed out.
  uint64_t t_c = StepTime(step_ - 1) + 30 * kNsPerMs;
  bool culprit_speaks = job.div_variant == 1 && done >= 1;
  if (culprit_speaks) {
    PlanFailure(c, t_c + 600 * kNsPerSec + Jit(1 * kNsPerMs, 40 * kNsPerMs), 300, 1000, -6);
  }
  Settle();
  for (int r = 0; r < job.n; ++r) {
    if (!Shown(r)) continue;
    uint64_t fire = fate_[static_cast<size_t>(r)].start;
    if (r == c) {
      TimeoutBlock(c, fire, done, done, done - 1, (fire - t_c) / kNsPerMs);
    } else {
      TimeoutBlock(r, fire, hang, enq, hang - 1, (fire - t_hang[static_cast<size_t>(r)]) / kNsPerMs);
    }
  }
}

const char* SocketWarnSite(const Ver& v) {
  return v.AtLeast(24) ? "misc/socket.cc:64" : v.AtLeast(21) ? "misc/socket.cc:50" : "misc/socket.cc:47";
}

void Sim::TailIbStorm() {
  const Job& job = *job_;
  int F = job.bad_host;
  uint64_t T = StepTime(step_);
  uint64_t hang = op0_[0] + 1;
  uint64_t enq = hang + static_cast<uint64_t>(job.extra_enq);
  std::vector<uint64_t> t_hang(static_cast<size_t>(job.n), 0);
  for (int r = 0; r < job.n; ++r) {
    t_hang[static_cast<size_t>(r)] = T + Jit(0, 4 * kNsPerMs);
    HangOps(r, 1 + job.extra_enq, t_hang[static_cast<size_t>(r)]);
  }
  // The failed HCA's own processes just hang until their watchdog fires; their peers on other
  // hosts see the QP retry counter expire (IB timeout 22 with 7 retries: about 20 s).
  std::vector<char> completion(static_cast<size_t>(job.n), 0);
  std::vector<char> host_fails(static_cast<size_t>(job.m), 0);
  std::vector<int> peers;  // ranks off the failed host
  for (int r = 0; r < job.n; ++r) {
    uint64_t t = t_hang[static_cast<size_t>(r)];
    if (R(r).host == F) {
      PlanFailure(r, t + 600 * kNsPerSec + Jit(1 * kNsPerMs, 90 * kNsPerMs), 300, 1000, -6);
      continue;
    }
    peers.push_back(r);
    if (rng_.Chance(2, 3)) {
      PlanFailure(r, t + 18 * kNsPerSec + Jit(0, 2 * kNsPerSec), 800, 1600, -6);
      completion[static_cast<size_t>(r)] = 1;
      host_fails[static_cast<size_t>(R(r).host)] = 1;
    }
  }
  // Some rank has traffic through the failed HCA in the hung collective: at least one peer
  // sees the error.
  if (std::find(completion.begin(), completion.end(), 1) == completion.end() && !peers.empty()) {
    int r = peers[static_cast<size_t>(rng_.Below(peers.size()))];
    PlanFailure(r, t_hang[static_cast<size_t>(r)] + 18 * kNsPerSec + Jit(0, 2 * kNsPerSec), 800, 1600, -6);
    completion[static_cast<size_t>(r)] = 1;
    host_fails[static_cast<size_t>(R(r).host)] = 1;
  }
  // On a host where nobody got the error (and so no agent stops the workers early), the
  // ranks wait in the collective until their own watchdog fires, like those of the failed host.
  for (int r : peers) {
    if (host_fails[static_cast<size_t>(R(r).host)]) continue;
    PlanFailure(r, t_hang[static_cast<size_t>(r)] + 600 * kNsPerSec + Jit(1 * kNsPerMs, 90 * kNsPerMs), 300, 1000, -6);
  }
  Settle();
  for (int r = 0; r < job.n; ++r) {
    if (!Shown(r)) continue;
    uint64_t te = fate_[static_cast<size_t>(r)].start;
    if (!completion[static_cast<size_t>(r)]) {
      TimeoutBlock(r, te, hang, enq, hang - 1, (te - t_hang[static_cast<size_t>(r)]) / kNsPerMs);
      continue;
    }
    const RankInfo& k = R(r);
    const Ver& v = V(r);
    ib_reporter_hosts_.insert(k.host);
    int peer = F * job.rph + k.local % job.rph;
    std::string peer_addr = job.hosts[static_cast<size_t>(F)].ip + "<" + std::to_string(R(peer).port) + ">";
    std::string last;
    int lines = 1 + static_cast<int>(rng_.Below(2));
    for (int i = 0; i < lines; ++i) {
      const char* fl = v.AtLeast(22)   ? "transport/net_ib.cc:2358"
                       : v.AtLeast(20) ? "transport/net_ib.cc:1696"
                                       : "transport/net_ib.cc:1430";
      Epoch& e = Warn(r, k.pfx_proxy, te, fl);
      size_t start = e.raw().size();
      e.S(v.AtLeast(22) ? "NET/IB: Got completion from peer " : "NET/IB : Got completion from peer ").S(peer_addr);
      bool recv = i % 2 == 1;
      if (v.AtLeast(20)) {
        e.S(" with status=12 opcode=")
            .D(recv ? 129 : 0)
            .S(" len=")
            .D(recv ? 65536 : 0)
            .S(" vendor err 129 (")
            .S(recv ? "Recv" : "Send")
            .S(")");
      } else {
        e.S(" with error 12, opcode ")
            .D(recv ? 129 : 0)
            .S(", len ")
            .D(recv ? 65536 : 0)
            .S(", vendor err 129 (")
            .S(recv ? "Recv" : "Send")
            .S(")");
      }
      e.S(" localGid ::ffff:").S(H(r).ip).S(" remoteGids ::ffff:").S(job.hosts[static_cast<size_t>(F)].ip);
      if (v.AtLeast(22)) e.S(" hca mlx5_").D(static_cast<uint64_t>(k.nic));
      last.assign(e.raw().data() + start, e.raw().size() - start);
      e.End();
      Info(r, k.pfx_proxy, te).S("transport/net.cc:1298 -> 6").End();
      Info(r, k.pfx_proxy, te).S("proxy.cc:694 -> 6").End();
      Info(r, k.pfx_proxy, te).S("proxy.cc:874 -> 6 [Progress Thread]").End();
      te += Jit(1 * kNsPerMs, 30 * kNsPerMs);
    }
    ErrorBlock(r, te + Jit(50 * kNsPerMs, 400 * kNsPerMs), hang, enq, hang - 1, last);
  }
}

void Sim::TailOom() {
  const Job& job = *job_;
  int o = job.culprit;
  const RankInfo& ko = R(o);
  uint64_t T = StepTime(step_);
  uint64_t hang = op0_[0] + 1;
  uint64_t enq = hang + static_cast<uint64_t>(job.extra_enq);
  for (int r = 0; r < job.n; ++r) {
    HangOps(r, r == o ? 1 : 1 + job.extra_enq, T + Jit(0, 4 * kNsPerMs));
  }
  uint64_t t_oom = T + Jit(20 * kNsPerMs, 200 * kNsPerMs);
  PlanFailure(o, t_oom, 300, 1200, 1);
  uint64_t died = fate_[static_cast<size_t>(o)].exit_t;
  // Who held a connection to the dead process: its ring neighbours, its host, its NIC peers.
  std::vector<char> rep(static_cast<size_t>(job.n), 0);
  rep[static_cast<size_t>((o + 1) % job.n)] = 1;
  rep[static_cast<size_t>((o + job.n - 1) % job.n)] = 1;
  for (int r = 0; r < job.n; ++r) {
    if (R(r).host == ko.host || R(r).local == ko.local) rep[static_cast<size_t>(r)] = 1;
  }
  rep[static_cast<size_t>(o)] = 0;
  for (int r = 0; r < job.n; ++r) {
    if (rep[static_cast<size_t>(r)]) {
      // The next rank in the ring notices at once (before any agent can act), so the
      // connection-closed evidence survives even on a single host.
      uint64_t delay = r == (o + 1) % job.n ? Jit(5 * kNsPerMs, 30 * kNsPerMs) : Jit(5 * kNsPerMs, 800 * kNsPerMs);
      PlanFailure(r, died + delay, 600, 1200, -6);
    }
  }
  Settle();

  // The OOM inside NCCL's proxy (runtime connection setup), then the Python exception.
  uint64_t t = t_oom;
  Warn(o, ko.pfx_proxy, t, "include/alloc.h:178").S("Cuda failure 'out of memory'").End();
  Warn(o, ko.pfx_proxy, t, "include/alloc.h:185").S("Failed to CUDA calloc 6291456 bytes").End();
  for (const char* fl : {"transport/p2p.cc:204", "transport/p2p.cc:605", "proxy.cc:1303", "proxy.cc:1377"}) {
    Info(o, ko.pfx_proxy, t).S(fl).S(" -> 1").End();
  }
  t += Jit(50 * kNsPerMs, 250 * kNsPerMs);
  static const char* const kTb[] = {
      "Traceback (most recent call last):",
      "  File \"/workspace/train.py\", line 412, in <module>",
      "    main()",
      "  File \"/workspace/train.py\", line 377, in main",
      "    loss = train_step(model, batch)",
      "  File \"/workspace/train.py\", line 251, in train_step",
      "    dist.all_reduce(bucket, op=dist.ReduceOp.SUM)",
      "  File \"/usr/local/lib/python3.10/dist-packages/torch/distributed/c10d_logger.py\", line "
      "83, in wrapper",
      "    return func(*args, **kwargs)",
      "  File \"/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py\", "
      "line 2501, in all_reduce",
      "    work = group.allreduce([tensor], opts)"};
  std::string px = ko.c10 + " ";  // excepthook prefix "[rankN]: " (§E.1)
  for (const char* line : kTb) Raw(o, kErr, t).S(px).S(line).End();
  Raw(o, kErr, t)
      .S(px)
      .S("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/"
         "distributed/c10d/NCCLUtils.hpp:317, unhandled cuda error (run with "
         "NCCL_DEBUG=INFO for details), NCCL version ")
      .S(V(o).text)
      .End();
  Raw(o, kErr, t).S(px).S("ncclUnhandledCudaError: Call to CUDA function failed.").End();
  Raw(o, kErr, t).S(px).S("Last error:").End();
  Raw(o, kErr, t).S(px).S("Failed to CUDA calloc 6291456 bytes").End();

  std::string text =
      "socketProgress: Connection closed by remote peer " + H(o).name + "<" + std::to_string(ko.port) + ">";
  for (int r = 0; r < job.n; ++r) {
    if (r == o || !Shown(r)) continue;
    const RankInfo& k = R(r);
    uint64_t te = fate_[static_cast<size_t>(r)].start;
    Warn(r, k.pfx_service, te, SocketWarnSite(V(r))).S(text).End();
    Info(r, k.pfx_service, te).S("misc/socket.cc:752 -> 6").End();
    Info(r, k.pfx_service, te).S("proxy.cc:1148 -> 6").End();
    ErrorBlock(r, te + Jit(50 * kNsPerMs, 400 * kNsPerMs), hang, enq, hang - 1, text);
  }
}

void Sim::TailPeerClosed() {
  const Job& job = *job_;
  int D = job.bad_host;
  uint64_t T = StepTime(step_);
  uint64_t hang = op0_[0] + 1;
  uint64_t enq = hang + static_cast<uint64_t>(job.extra_enq);
  // The dead host's processes stop mid-step; nothing of theirs follows.
  for (int r = 0; r < job.n; ++r) {
    HangOps(r, R(r).host == D ? 1 : 1 + job.extra_enq, T + Jit(0, 4 * kNsPerMs));
  }
  uint64_t died = T + Jit(200 * kNsPerMs, 2 * kNsPerSec);
  for (int r = 0; r < job.n; ++r) {
    if (R(r).host != D) PlanFailure(r, died + Jit(5 * kNsPerMs, 2 * kNsPerSec), 800, 1600, -6);
  }
  Settle();
  const HostInfo& dh = job.hosts[static_cast<size_t>(D)];
  for (int r = 0; r < job.n; ++r) {
    if (!Shown(r)) continue;
    const RankInfo& k = R(r);
    uint64_t te = fate_[static_cast<size_t>(r)].start;
    int lines = 1 + static_cast<int>(rng_.Below(2));
    std::string text;
    for (int i = 0; i < lines; ++i) {
      int pr = D * job.rph + static_cast<int>(rng_.Below(static_cast<uint64_t>(job.rph)));
      std::string addr = rng_.Chance(2, 3) ? dh.name : dh.ip;
      text = "socketProgress: Connection closed by remote peer " + addr + "<" + std::to_string(R(pr).port) + ">";
      Warn(r, k.pfx_service, te, SocketWarnSite(V(r))).S(text).End();
      Info(r, k.pfx_service, te).S("misc/socket.cc:752 -> 6").End();
      Info(r, k.pfx_service, te).S("proxy.cc:1148 -> 6").End();
      te += Jit(1 * kNsPerMs, 50 * kNsPerMs);
    }
    ErrorBlock(r, te + Jit(50 * kNsPerMs, 400 * kNsPerMs), hang, enq, hang - 1, text);
  }
}

void Sim::Tail() {
  agent_t_.assign(static_cast<size_t>(job_->m), 0);
  first_.assign(static_cast<size_t>(job_->m), -1);
  switch (job_->opt.fault) {
    case Fault::kHealthy:
    case Fault::kSocketHost:
    case Fault::kGdrMissingHost:
    case Fault::kEnvMismatch:
    case Fault::kVersionMismatch:
      TailHealthy();
      break;
    case Fault::kDivergentRank:
      TailDivergent();
      break;
    case Fault::kIbErrorStorm:
      TailIbStorm();
      break;
    case Fault::kOomCascade:
      TailOom();
      break;
    case Fault::kPeerClosedStorm:
      TailPeerClosed();
      break;
    case Fault::kStraggler:
      break;  // a live job, snapshotted: nobody has timed out yet
  }
  Agents();
}

// ----------------------------------------------------------------------------------------
// Ground truth.

std::string CompactRanks(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  std::string s;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!s.empty()) s.push_back(',');
    s += std::to_string(v[i]);
    if (j > i) s += "-" + std::to_string(v[j]);
    i = j + 1;
  }
  return s;
}

std::string Describe(const Job& job) {
  const Options& o = job.opt;
  std::string d = "simulated: " + std::string(kFaultNames[static_cast<int>(o.fault)]) + ", " + std::to_string(o.ranks) +
                  (o.ranks == 1 ? " rank on " : " ranks on ") + std::to_string(o.hosts) +
                  (o.hosts == 1 ? " host, " : " hosts, ") + kLayoutNames[static_cast<int>(o.layout)] + " layout";
  if (o.wrapper != Wrapper::kNone) d += ", " + std::string(kWrapperNames[static_cast<int>(o.wrapper)]) + " wrapper";
  d += ", NCCL " + o.nccl_version;
  if (job.vers.size() > 1)
    d += " (" + job.hosts[static_cast<size_t>(job.bad_host)].name + ": " + job.vers[1].text + ")";
  if (o.socket_net) d += ", socket network";
  if (!o.env.empty()) d += ", env overrides";
  if (o.timestamps) d += ", timestamped WARN";
  d += ", seed " + std::to_string(o.seed);
  return d;
}

// version_mismatch: NCCL <= 2.21 prints its banner only on a process that is rank 0 of a
// communicator (global rank 0 for the job-wide one, each host's first rank for the per-host one),
// 2.22+ on every process (§A). Host h's version shows in the logs if one of its processes prints it.
bool HostPrintsVersion(const Job& job, int h) {
  return job.vers[static_cast<size_t>(job.hosts[static_cast<size_t>(h)].ver)].AtLeast(22) || job.has_tp || h == 0;
}

// Both versions show somewhere: the odd host's and another host's.
bool VersionMismatchVisible(const Job& job) {
  if (!HostPrintsVersion(job, job.bad_host)) return false;
  for (int h = 0; h < job.m; ++h) {
    if (h != job.bad_host && HostPrintsVersion(job, h)) return true;
  }
  return false;
}

// The odd host can be named: its banner lines can be put on a host (they carry a host:pid
// prefix, sit in a per-rank or per-worker file, or carry an srun / kubectl label), and a majority
// exists (with two hosts, one version each, neither is the odd one out).
bool VersionMismatchHostKnown(const Job& job) {
  const Options& o = job.opt;
  bool placed = job.vers[1].AtLeast(22) || o.layout != Layout::kInterleaved || o.wrapper == Wrapper::kSrun ||
                o.wrapper == Wrapper::kKubectl;
  return placed && job.m >= 3;
}

// `ib_reporter_hosts`: the hosts whose ranks printed an IB completion error
// (Sim::ib_reporter_hosts), the primary's hosts of an ib_error_storm.
std::string ExpectedJson(const Job& job, const std::set<int>& ib_reporter_hosts) {
  const Options& o = job.opt;
  std::string rule;
  bool with_rank = false, with_host = false;
  std::vector<std::string> reporter_hosts;  // pinned as the primary's hosts, when not the culprit's
  std::vector<std::string> present, absent;
  switch (o.fault) {
    case Fault::kHealthy:
      break;
    case Fault::kDivergentRank:
      rule = "DIVERGENT-RANK";
      with_rank = with_host = true;
      present.push_back("TORCH-WATCHDOG-TIMEOUT");
      break;
    case Fault::kSocketHost:
      rule = "NET-TRANSPORT-MISMATCH";
      with_host = true;
      break;
    case Fault::kGdrMissingHost:
      rule = "GDR-MISSING-HOST";
      with_host = true;
      break;
    case Fault::kEnvMismatch:
      rule = "ENV-MISMATCH";
      with_host = true;
      break;
    case Fault::kVersionMismatch:
      if (!VersionMismatchVisible(job)) break;  // nothing in the logs shows it
      rule = "NCCL-VERSION-MISMATCH";
      with_host = VersionMismatchHostKnown(job);
      break;
    case Fault::kIbErrorStorm: {
      // The primary is the peers' own completion error, on the hosts that print it; the failed
      // host is the one PEER-CLOSED-STORM names (its ranks). Leading with that host instead is
      // an open problem (issue 20: a retry-exceeded storm points at the far end, a local
      // protection error does not).
      rule = "NCCL-IB-COMPLETION-ERROR";
      for (int h : ib_reporter_hosts) reporter_hosts.push_back(job.hosts[static_cast<size_t>(h)].name);
      std::vector<int> failed;
      for (int r = 0; r < job.n; ++r) {
        if (job.ranks[static_cast<size_t>(r)].host == job.bad_host) failed.push_back(r);
      }
      present.push_back("{\"rule\": \"PEER-CLOSED-STORM\", \"ranks\": \"" + CompactRanks(failed) + "\"}");
      present.push_back("NCCL-REMOTE-ERROR");
      break;
    }
    case Fault::kOomCascade:
      rule = "NCCL-CUDA-OOM";
      with_rank = with_host = true;
      present.push_back("NCCL-CONN-CLOSED");
      break;
    case Fault::kPeerClosedStorm:
      rule = "PEER-CLOSED-STORM";
      with_host = true;
      break;
    case Fault::kStraggler:
      rule = "COLL-OPCOUNT-LAGGING";
      with_rank = with_host = true;
      absent.push_back("TORCH-WATCHDOG-TIMEOUT");
      break;
  }
  auto list = [](const std::vector<std::string>& v) {
    std::string s = "[";
    // An entry that is already JSON (a present rule with its ranks) goes in as it is.
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + (v[i][0] == '{' ? v[i] : "\"" + v[i] + "\"");
    return s + "]";
  };
  std::string j = "{\n  \"description\": \"" + Describe(job) + "\",\n  \"primary\": ";
  if (rule.empty()) {
    j += "null";
  } else {
    j += "{\"rule\": \"" + rule + "\"";
    if (with_rank) j += ", \"ranks\": \"" + CompactRanks({job.culprit}) + "\"";
    if (with_host) {
      int h = job.bad_host >= 0 ? job.bad_host : job.ranks[static_cast<size_t>(job.culprit)].host;
      j += ", \"hosts\": [\"" + job.hosts[static_cast<size_t>(h)].name + "\"]";
    } else if (!reporter_hosts.empty()) {
      j += ", \"hosts\": " + list(reporter_hosts);
    }
    j += "}";
  }
  // The form `ncclscan test --update` writes, so an update leaves the case byte for byte.
  j += ",\n  \"present\": " + list(present) + ",\n  \"absent\": " + list(absent) +
       (o.fault == Fault::kHealthy ? ",\n  \"max_severity\": \"info\"" : "") + "\n}\n";
  return j;
}

// ----------------------------------------------------------------------------------------
// Driver.

// Checks what a fault needs from the job's shape. Returns an error message or "".
std::string Validate(const Options& o) {
  if (o.ranks < 1 || o.ranks > 65536) return "--ranks must be between 1 and 65536";
  if (o.hosts < 1 || o.hosts > 62500) return "--hosts must be between 1 and 62500";
  if (o.ranks % o.hosts != 0) return "--ranks must be a multiple of --hosts";
  if (o.culprit >= o.ranks) return "--culprit must be below --ranks";
  if (o.channels < 1 || o.channels > 32) return "--channels must be between 1 and 32";
  if (!(o.size_mb > 0) || o.size_mb > 1e7) return "--size-mb must be positive";
  Ver v;
  if (!ParseVer(o.nccl_version, &v)) return "--nccl-version must be 2.18.x … 2.27.x";
  switch (o.fault) {
    case Fault::kHealthy:
      break;
    case Fault::kDivergentRank:
    case Fault::kOomCascade:
    case Fault::kStraggler:
      if (o.ranks < 2) return std::string(kFaultNames[static_cast<int>(o.fault)]) + " needs at least 2 ranks";
      break;
    case Fault::kSocketHost:
    case Fault::kGdrMissingHost:
    case Fault::kEnvMismatch:
    case Fault::kVersionMismatch:
    case Fault::kIbErrorStorm:
    case Fault::kPeerClosedStorm:
      if (o.hosts < 2) return std::string(kFaultNames[static_cast<int>(o.fault)]) + " needs at least 2 hosts";
      if (o.socket_net && o.fault != Fault::kVersionMismatch && o.fault != Fault::kEnvMismatch &&
          o.fault != Fault::kPeerClosedStorm) {
        return std::string(kFaultNames[static_cast<int>(o.fault)]) + " needs --net ib";
      }
      break;
  }
  return "";
}

int Simulate(const Options& opt, bool quiet) {
  Job job = BuildJob(opt);
  if (opt.fault == Fault::kVersionMismatch && !VersionMismatchVisible(job) && !quiet) {
    std::fprintf(stderr,
                 "simulate: note: NCCL <= 2.21 prints its version banner only on rank 0 of a "
                 "communicator: without a per-host communicator (--no-tp, or one rank per host) "
                 "the logs do not show both versions, so expected.json expects no finding\n");
  }
  std::string err;
  Sink sink(job, false);
  if (!sink.Open(&err)) {
    std::fprintf(stderr, "simulate: error: %s\n", err.c_str());
    return 1;
  }
  Epoch ep;
  Sim sim(job, &ep);
  sim.InitAgents();
  // Init lines are flushed in batches of ranks to bound memory on very large jobs (the
  // interleaving is then per batch, which a real dump of staggered starts also shows).
  constexpr int kInitBatch = 4096;
  for (int lo = 0; lo < job.n; lo += kInitBatch) {
    sim.InitRanks(lo, std::min(job.n, lo + kInitBatch));
    if (!sink.Flush(ep, &err)) {
      std::fprintf(stderr, "simulate: error: %s\n", err.c_str());
      return 1;
    }
  }
  uint64_t target = static_cast<uint64_t>(opt.size_mb * 1024 * 1024);
  // Measure a tail and a run of steps on copies with a counting sink, then size the run.
  constexpr int kProbe = 24;
  uint64_t per_step = 1, tail = 0;
  {
    Epoch pe;
    Sink dry(job, true);
    Sim probe = sim;
    probe.set_epoch(&pe);
    for (int i = 0; i < kProbe; ++i) {
      probe.Step();
      if ((i & 3) == 3) dry.Flush(pe, &err);
    }
    dry.Flush(pe, &err);
    per_step = std::max<uint64_t>(1, dry.bytes() / kProbe);
    uint64_t before = dry.bytes();
    probe.Tail();
    dry.Flush(pe, &err);
    tail = dry.bytes() - before;
  }
  uint64_t used = sink.bytes() + tail;
  int64_t steps = used >= target ? 0 : static_cast<int64_t>((target - used) / per_step);
  steps = std::max<int64_t>(steps, 12);
  steps = std::min<int64_t>(steps, int64_t{1} << 30);
  if (opt.steps > 0) steps = opt.steps;
  sim.set_total_steps(static_cast<int>(steps));
  for (int64_t i = 0; i < steps; ++i) {
    sim.Step();
    if ((i & 3) == 3 && !sink.Flush(ep, &err)) {
      std::fprintf(stderr, "simulate: error: %s\n", err.c_str());
      return 1;
    }
  }
  sim.Tail();
  if (!sink.Flush(ep, &err) || !sink.Close(&err)) {
    std::fprintf(stderr, "simulate: error: %s\n", err.c_str());
    return 1;
  }
  std::string path = opt.out_dir + "/expected.json";
  FILE* f = std::fopen(path.c_str(), "wb");
  std::string js = ExpectedJson(job, sim.ib_reporter_hosts());
  if (f == nullptr || std::fwrite(js.data(), 1, js.size(), f) != js.size() || std::fclose(f) != 0) {
    std::fprintf(stderr, "simulate: error: cannot write %s\n", path.c_str());
    return 1;
  }
  if (!quiet) {
    std::fprintf(stderr, "simulate: wrote %.1f MB (%lld steps) to %s\n",
                 static_cast<double>(sink.bytes()) / (1024.0 * 1024.0), static_cast<long long>(steps),
                 opt.out_dir.c_str());
  }
  return 0;
}

// A fixed regression set: every fault at least once, varied shapes, four healthy shapes.
int CorpusSet(const std::string& dir, uint64_t seed) {
  struct Case {
    const char* shape;
    Fault fault;
    int ranks, hosts;
    Layout layout;
    Wrapper wrapper;
    const char* version;
    int steps;
    bool timestamps, socket_net;
    bool env;
    int channels;
    bool tp;
  };
  using F = Fault;
  using L = Layout;
  using W = Wrapper;
  // Sizes are kept small on purpose (each case < 100 KB): few steps, few channels, and the
  // larger jobs without the second communicator.
  const Case kCases[] = {
      // shape                          fault               N  M  layout          wrapper       version steps ts socket
      // env    ch tp
      {"perrank-16r2h", F::kHealthy, 16, 2, L::kPerRank, W::kNone, "2.21.5", 3, false, false, false, 2, false},
      {"socket-1host-8r", F::kHealthy, 8, 1, L::kInterleaved, W::kNone, "2.26.2", 4, false, true, false, 2, true},
      {"single-rank", F::kHealthy, 1, 1, L::kPerRank, W::kNone, "2.18.3", 12, false, false, false, 2, true},
      {"env-identical-torchrun-8r2h", F::kHealthy, 8, 2, L::kTorchrun, W::kNone, "2.21.5", 4, false, false, true, 2,
       true},
      {"interleaved-srun-8r2h", F::kHealthy, 8, 2, L::kInterleaved, W::kSrun, "2.21.5", 4, false, false, false, 2,
       true},
      {"perrank-12r3h", F::kDivergentRank, 12, 3, L::kPerRank, W::kNone, "2.21.5", 3, false, false, false, 2, false},
      {"interleaved-torchrun-8r2h", F::kDivergentRank, 8, 2, L::kInterleaved, W::kTorchrun, "2.26.2", 2, true, false,
       false, 2, true},
      {"interleaved-kubectl-8r2h", F::kSocketHost, 8, 2, L::kInterleaved, W::kKubectl, "2.18.3", 3, false, false, false,
       2, true},
      {"perrank-srun-32r4h", F::kGdrMissingHost, 32, 4, L::kPerRank, W::kSrun, "2.21.5", 2, false, false, false, 1,
       false},
      {"perrank-docker-8r2h", F::kEnvMismatch, 8, 2, L::kPerRank, W::kDocker, "2.26.2", 3, false, false, false, 2,
       false},
      {"interleaved-srun-12r3h", F::kVersionMismatch, 12, 3, L::kInterleaved, W::kSrun, "2.21.5", 3, false, false,
       false, 2, true},
      {"perrank-ts-8r2h", F::kIbErrorStorm, 8, 2, L::kPerRank, W::kNone, "2.26.2", 3, true, false, false, 2, false},
      {"interleaved-8r2h", F::kOomCascade, 8, 2, L::kInterleaved, W::kNone, "2.21.5", 3, false, false, false, 2, true},
      {"torchrun-layout-12r3h", F::kPeerClosedStorm, 12, 3, L::kTorchrun, W::kTorchrun, "2.21.5", 3, false, false,
       false, 2, false},
      {"perrank-2r1h", F::kStraggler, 2, 1, L::kPerRank, W::kNone, "2.18.3", 20, false, false, false, 2, true},
      {"interleaved-kubectl-8r2h", F::kStraggler, 8, 2, L::kInterleaved, W::kKubectl, "2.26.2", 14, false, false, false,
       2, false},
  };

  int idx = 0;
  for (const Case& c : kCases) {
    Options o;
    o.fault = c.fault;
    o.ranks = c.ranks;
    o.hosts = c.hosts;
    o.layout = c.layout;
    o.wrapper = c.wrapper;
    o.nccl_version = c.version;
    o.steps = c.steps;
    o.tp = c.tp;
    o.timestamps = c.timestamps;
    o.socket_net = c.socket_net;
    o.channels = c.channels;
    if (c.env) {
      o.env = {{"NCCL_SOCKET_IFNAME", "eth0"}, {"NCCL_IB_TIMEOUT", "22"}, {"NCCL_IB_GID_INDEX", "3"}};
    }
    o.seed = SplitMix(seed * 1000003ULL + static_cast<uint64_t>(idx++)) % 1000000;
    o.out_dir = dir + "/sim-" + kFaultNames[static_cast<int>(c.fault)] + "-" + c.shape;
    std::string err = Validate(o);
    if (!err.empty()) {
      std::fprintf(stderr, "simulate: internal error in case %s: %s\n", o.out_dir.c_str(), err.c_str());
      return 1;
    }
    std::error_code ec;
    fs::remove_all(o.out_dir, ec);
    int rc = Simulate(o, true);
    if (rc != 0) return rc;
    std::printf("%s\n", o.out_dir.c_str());
  }
  return 0;
}

const char kUsage[] =
    "usage: simulate --out DIR [options]\n"
    "       simulate --corpus-set DIR [--seed S]\n"
    "\n"
    "Writes the NCCL/PyTorch logs of a simulated distributed training job with one injected\n"
    "fault, plus DIR/expected.json (the diagnosis ncclscan should reach).\n"
    "\n"
    "  --out DIR             output directory (created)\n"
    "  --ranks N             number of ranks (default 16)\n"
    "  --hosts M             number of hosts, must divide N (default 2)\n"
    "  --fault KIND          healthy (default), divergent_rank, socket_host, gdr_missing_host,\n"
    "                        env_mismatch, version_mismatch, ib_error_storm, oom_cascade,\n"
    "                        peer_closed_storm, straggler\n"
    "  --culprit R           the faulty rank (host faults: the host of rank R); default from seed\n"
    "  --seed S              random seed (default 1); same arguments and seed, same bytes\n"
    "  --size-mb X           approximate total output size in MiB (default 0.2)\n"
    "  --steps N             exactly N training steps (overrides --size-mb)\n"
    "  --layout L            per-rank (DIR/<host>/rank<R>.log), interleaved (DIR/job.log),\n"
    "                        torchrun (DIR/<host>/attempt_0/<local>/{stdout,stderr}.log)\n"
    "  --wrapper W           none, srun (' 3: '), torchrun ('[default3]:'),\n"
    "                        kubectl ('[pod/trainer-worker-<h>/pytorch] '), docker (json-file)\n"
    "  --nccl-version V      NCCL version whose line shapes to print, 2.18.x-2.27.x (default 2.21.5)\n"
    "  --timestamps          '[YYYY-MM-DD HH:MM:SS] ' before WARN lines (NCCL 2.26+ style)\n"
    "  --net ib|socket       network of every host (default ib)\n"
    "  --env NAME=VALUE      NCCL_* override printed identically by every rank (repeatable)\n"
    "  --channels N          channels per communicator (default 4)\n"
    "  --no-tp               no second (per-host tensor-parallel) communicator\n"
    "  --corpus-set DIR      write the fixed regression set DIR/sim-<fault>-<shape>/\n"
    "  --help                this text\n"
    "\n"
    "torchrun agent lines (DIR/<host>/agent.log outside the interleaved layout) are written for\n"
    "every wrapper except srun. Exit status: 0 ok, 1 I/O error, 2 bad arguments.\n";

int Usage(const std::string& msg) {
  std::fprintf(stderr, "simulate: error: %s\n(run simulate --help for usage)\n", msg.c_str());
  return 2;
}

bool ParseInt(const std::string& s, long long lo, long long hi, long long* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

int Main(int argc, char** argv) {
  Options o;
  bool corpus = false, out_given = false;
  std::vector<std::string> non_seed;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string val;
    bool has_inline = false;
    if (a.rfind("--", 0) == 0) {
      size_t eq = a.find('=');
      if (eq != std::string::npos) {
        val = a.substr(eq + 1);
        a = a.substr(0, eq);
        has_inline = true;
      }
    }
    auto need = [&](std::string* v) {
      if (has_inline) {
        *v = val;
        return true;
      }
      if (i + 1 >= argc) return false;
      *v = argv[++i];
      return true;
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--timestamps" || a == "--no-tp") {
      if (has_inline) return Usage(a + " takes no value");
      if (a == "--timestamps")
        o.timestamps = true;
      else
        o.tp = false;
      non_seed.push_back(a);
      continue;
    }
    std::string v;
    if (a != "--out" && a != "--ranks" && a != "--hosts" && a != "--fault" && a != "--culprit" && a != "--seed" &&
        a != "--size-mb" && a != "--layout" && a != "--wrapper" && a != "--nccl-version" && a != "--net" &&
        a != "--env" && a != "--channels" && a != "--steps" && a != "--corpus-set") {
      return Usage("unknown argument '" + a + "'");
    }
    if (!need(&v)) return Usage(a + " needs a value");
    if (a != "--seed" && a != "--corpus-set") non_seed.push_back(a);
    long long n = 0;
    if (a == "--out") {
      if (v.empty()) return Usage("--out needs a directory");
      o.out_dir = v;
      out_given = true;
    } else if (a == "--corpus-set") {
      if (v.empty()) return Usage("--corpus-set needs a directory");
      o.corpus_dir = v;
      corpus = true;
    } else if (a == "--ranks") {
      if (!ParseInt(v, 1, 65536, &n)) return Usage("bad --ranks '" + v + "' (1 to 65536)");
      o.ranks = static_cast<int>(n);
    } else if (a == "--hosts") {
      if (!ParseInt(v, 1, 62500, &n)) return Usage("bad --hosts '" + v + "'");
      o.hosts = static_cast<int>(n);
    } else if (a == "--culprit") {
      if (!ParseInt(v, 0, 65535, &n)) return Usage("bad --culprit '" + v + "'");
      o.culprit = static_cast<int>(n);
    } else if (a == "--steps") {
      if (!ParseInt(v, 2, 1 << 30, &n)) return Usage("bad --steps '" + v + "' (at least 2)");
      o.steps = static_cast<int>(n);
    } else if (a == "--channels") {
      if (!ParseInt(v, 1, 32, &n)) return Usage("bad --channels '" + v + "'");
      o.channels = static_cast<int>(n);
    } else if (a == "--seed") {
      char* end = nullptr;
      errno = 0;
      unsigned long long s = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || v[0] == '-' || errno != 0 || *end != '\0') return Usage("bad --seed '" + v + "'");
      o.seed = s;
    } else if (a == "--size-mb") {
      char* end = nullptr;
      double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(d > 0) || d > 1e7) return Usage("bad --size-mb '" + v + "'");
      o.size_mb = d;
    } else if (a == "--fault") {
      int f = -1;
      for (int k = 0; k < kNumFaults; ++k) {
        if (v == kFaultNames[k]) f = k;
      }
      if (f < 0) return Usage("unknown fault '" + v + "'");
      o.fault = static_cast<Fault>(f);
    } else if (a == "--layout") {
      int f = -1;
      for (int k = 0; k < 3; ++k) {
        if (v == kLayoutNames[k]) f = k;
      }
      if (f < 0) return Usage("unknown layout '" + v + "'");
      o.layout = static_cast<Layout>(f);
    } else if (a == "--wrapper") {
      int f = -1;
      for (int k = 0; k < 5; ++k) {
        if (v == kWrapperNames[k]) f = k;
      }
      if (f < 0) return Usage("unknown wrapper '" + v + "'");
      o.wrapper = static_cast<Wrapper>(f);
    } else if (a == "--nccl-version") {
      Ver ver;
      if (!ParseVer(v, &ver)) return Usage("unsupported --nccl-version '" + v + "' (2.18.x-2.27.x)");
      o.nccl_version = v;
    } else if (a == "--net") {
      if (v != "ib" && v != "socket") return Usage("--net must be ib or socket");
      o.socket_net = v == "socket";
    } else if (a == "--env") {
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || v.find_first_of(" \t\n") != std::string::npos) {
        return Usage("--env needs NAME=VALUE");
      }
      o.env.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    }
  }
  if (corpus) {
    if (!non_seed.empty()) return Usage("--corpus-set takes only --seed (got " + non_seed[0] + ")");
    return CorpusSet(o.corpus_dir, o.seed);
  }
  if (!out_given) return Usage("--out DIR is required");
  std::string err = Validate(o);
  if (!err.empty()) return Usage(err);
  return Simulate(o, false);
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
