#include "engine/run/redact.h"

#include <re2/re2.h>

#include <algorithm>
#include <random>

#include "parsers/sha256.h"
#include "parsers/text_util.h"

namespace ncclscan {

namespace {

enum Kind { kHost = 1, kIp4, kIp6, kMac, kUser, kContainer, kJob, kDomain };
const char* const kKindNames[] = {"", "host", "ipv4", "ipv6", "mac", "user", "container", "job", "domain"};

bool HostChar(char c) { return IsAlpha(c) || IsDigit(c) || c == '_' || c == '-'; }

// "rank0": a rank label, not a host ("[logger@rank0]" in NeMo's log lines).
// As a host it would stand beside the "[rank0]:" prefixes the scan needs kept.
bool IsRankLabel(std::string_view w) {
  return w.size() > 4 && w.compare(0, 4, "rank") == 0 && std::all_of(w.begin() + 4, w.end(), IsDigit);
}

// An IPv6 address (an IB GID): 8 groups, or "::" with two groups at least,
// each of at most 4 hex digits. Times ("10:15:32"), MACs and C++ scopes
// ("c10d::") are not.
bool LooksLikeIpv6(std::string_view s) {
  int groups = 0, nonempty = 0;
  size_t i = 0;
  while (true) {
    size_t j = s.find(':', i);
    std::string_view g = s.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i);
    if (g.size() > 4 || !std::all_of(g.begin(), g.end(), IsHexDigit)) return false;
    ++groups;
    nonempty += !g.empty();
    if (j == std::string_view::npos) break;
    i = j + 1;
  }
  const bool compressed = s.find("::") != std::string_view::npos;
  return groups <= 8 && ((groups == 8 && nonempty == 8) || (compressed && nonempty >= 2));
}

std::string RandomKey() {
  std::random_device rd;
  std::string k;
  for (int i = 0; i < 4; ++i) k += std::to_string(rd());
  return k;
}

}  // namespace

Redactor::Redactor(std::string key) : key_(key.empty() ? RandomKey() : std::move(key)) {}

void Redactor::AddHost(std::string_view host) {
  const size_t bracket = host.find('[');  // "ubuntu[10.0.0.2]": two machines of one name
  if (bracket != std::string_view::npos) host = host.substr(0, bracket);
  if (host.size() < 2 || host == "localhost" || host == "(unknown)") return;
  if (std::all_of(host.begin(), host.end(), [](char c) { return IsDigit(c) || c == '.'; })) return;  // an address
  if (!std::all_of(host.begin(), host.end(), [](char c) { return HostChar(c) || c == '.'; })) return;
  // "node-7.cluster.local": its first label is the name; the domain after it
  // is hidden where it follows the name (one pseudonym for the name either way).
  const size_t dot = host.find('.');
  if (dot == std::string_view::npos)
    hosts_.emplace(host);
  else if (dot >= 2)
    hosts_.emplace(host.substr(0, dot));
}

void Redactor::Absorb(const Redactor& o) {
  hosts_.insert(o.hosts_.begin(), o.hosts_.end());
  users_.insert(o.users_.begin(), o.users_.end());
  jobs_.insert(o.jobs_.begin(), o.jobs_.end());
}

Redactor Redactor::Fork() const {
  Redactor r(key_);
  r.Absorb(*this);
  return r;
}

void Redactor::AddHostsOf(const JobState& state) {
  for (const std::string& h : state.Hosts()) AddHost(h);
  for (const auto& [addr, host] : state.address_owner()) {
    AddHost(addr);
    AddHost(host);
  }
}

namespace {
// Names before '@' in a prompt that are nobody's: root (every host has it) and
// pdsh's own prefix ("pdsh@node0: node3: …": the program, not a user).
bool NotAUser(std::string_view name) { return name == "root" || name == "pdsh"; }
}  // namespace

void Redactor::Learn(std::string_view text) {
  // One compiled regex for every redactor and thread (RE2 matches are thread-safe).
  static const RE2* const kLearn = [] {
    RE2::Options o;
    o.set_encoding(RE2::Options::EncodingLatin1);
    o.set_log_errors(false);
    return new RE2(
        "/(?:home|Users)/([A-Za-z0-9._-]+)"
        "|(?:^|[\\s\\[(])([a-z_][a-z0-9_-]{1,31})@([A-Za-z][A-Za-z0-9-]*)[: \\]]"
        "|(?:SLURM_JOB_ID=|SLURM_JOBID=|SLURM_ARRAY_JOB_ID=|StepId=|JobId=|STEP |slurm-)([0-9]{5,})",
        o);
  }();
  // Most blocks hold none of the words a match needs: a search for each says
  // so (LiteralFinder: memchr on a rare byte, vectorised; a byte-by-byte loop
  // took an eighth of redact's time), and the regex with its captures' cost
  // runs only where one is.
  static const std::vector<LiteralFinder>* const kWords = [] {
    auto* v = new std::vector<LiteralFinder>;
    for (std::string_view w : {"@", "/home/", "/Users/", "SLURM_", "StepId=", "JobId=", "STEP ", "slurm-"})
      v->emplace_back(w);
    return v;
  }();
  // The searches go block by block, so that the eight of them read a block from
  // the cache, not the whole text from memory eight times (a scan's chunk is
  // larger than the cache). Blocks overlap by the longest word's length less one.
  constexpr size_t kBlock = 16 << 10, kOverlap = 6;
  bool any = false;
  for (size_t at = 0; at < text.size() && !any; at += kBlock) {
    const std::string_view block = text.substr(at, kBlock + kOverlap);
    any = std::any_of(kWords->begin(), kWords->end(),
                      [&](const LiteralFinder& f) { return f.Find(block) != std::string_view::npos; });
  }
  if (!any) return;
  re2::StringPiece in(text.data(), text.size());
  std::string user, puser, phost, job;
  while (RE2::FindAndConsume(&in, *kLearn, &user, &puser, &phost, &job)) {
    if (!user.empty()) users_.insert(user);
    if (!puser.empty() && !NotAUser(puser)) users_.insert(puser);
    if (!phost.empty() && !IsRankLabel(phost)) AddHost(phost);
    if (!job.empty()) jobs_.insert(job);
  }
}

std::string Redactor::Digest(int kind, std::string_view value) const {
  std::string in = key_;
  in += '\x1f';
  in += static_cast<char>('0' + kind);
  in.append(value.data(), value.size());
  return Sha256Hex(in);
}

const std::string& Redactor::Pseudonym(int kind, std::string_view value) {
  // A file's lines repeat one host name: the last value's pseudonym, without the map.
  if (!last_pseudonym_.empty() && last_value_ == value) return last_pseudonym_;
  auto it = mapping_.find(value);
  if (it != mapping_.end()) {
    last_value_ = it->first;
    last_pseudonym_ = it->second;
    return last_pseudonym_;
  }
  const std::string d = Digest(kind, value);
  auto byte = [&](int i) { return static_cast<int>(std::stoul(d.substr(2 * i, 2), nullptr, 16)); };
  std::string p;
  switch (kind) {
    case kHost:
      p = "host-" + d.substr(0, 6);
      break;
    case kIp4: {
      if (StartsWith(value, "127.") || value == "0.0.0.0" || value == "255.255.255.255") {
        p = std::string(value);
      } else if (StartsWith(value, "169.254.")) {  // link-local stays link-local
        p = "169.254." + std::to_string(1 + byte(0) % 254) + "." + std::to_string(1 + byte(1) % 254);
      } else {
        p = "10." + std::to_string(byte(0)) + "." + std::to_string(byte(1)) + "." + std::to_string(1 + byte(2) % 254);
      }
      break;
    }
    case kIp6: {
      // Every group but the first (fe80: link-local, the GID's prefix) and
      // the zero ones: the shape stays, the interface id goes.
      size_t i = 0;
      int n = 0;
      while (true) {
        size_t j = value.find(':', i);
        std::string_view g = value.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i);
        const bool zero = std::all_of(g.begin(), g.end(), [](char c) { return c == '0'; });
        p += n == 0 || g.empty() || zero ? std::string(g) : d.substr(4 * (n % 16), 4);
        ++n;
        if (j == std::string_view::npos) break;
        p += ':';
        i = j + 1;
      }
      break;
    }
    case kMac:
      p = "02";
      for (int i = 0; i < 5; ++i) p += ":" + d.substr(2 * i, 2);
      break;
    case kUser:
      p = "user-" + d.substr(0, 4);
      break;
    case kContainer:
      p = d;
      break;
    case kDomain:  // ".narval.calcul.quebec": one label, the site's domain hidden
      p = ".site-" + d.substr(0, 4) + ".example";
      break;
    case kJob: {
      for (size_t i = 0; i < value.size(); ++i) p += static_cast<char>('0' + (i == 0 ? 1 + byte(i) % 9 : byte(i) % 10));
      break;
    }
  }
  kinds_.emplace(std::string(value), kKindNames[kind]);
  mapping_.emplace(std::string(value), p);
  last_value_ = std::string(value);
  last_pseudonym_ = std::move(p);
  return last_pseudonym_;
}

namespace {

// Character classes of the token pass, one table lookup a byte.
// kPunct: '.' or ':' (a dotted or ':'-joined run). A run whose bytes hold no ':'
// (no '.') needs no search for one.
enum : uint8_t { kRun = 1, kDigitC = 2, kColon = 4, kDot = 8, kPunct = kColon | kDot };
struct CharTable {
  uint8_t c[256] = {};
  CharTable() {
    for (int x = 0; x < 256; ++x) {
      const char ch = static_cast<char>(x);
      if (HostChar(ch) || ch == '.' || ch == ':') c[x] |= kRun;
      if (IsDigit(ch)) c[x] |= kDigitC;
      if (ch == ':') c[x] |= kColon;
      if (ch == '.') c[x] |= kDot;
    }
  }
};
const CharTable kChars;
inline uint8_t Class(char ch) { return kChars.c[static_cast<unsigned char>(ch)]; }

// The length of an IPv4 address that starts `s` and is followed by '.' and a
// letter ("192.168.11.119.kern.log"); 0 if none.
size_t Ipv4Prefix(std::string_view s) {
  size_t dots = 0, i = 0;
  for (; i < s.size(); ++i) {
    if (s[i] == '.' && ++dots == 4) break;
  }
  return dots == 4 && i + 1 < s.size() && IsAlpha(s[i + 1]) && LooksLikeIpv4(s.substr(0, i)) ? i : 0;
}

bool LooksLikeMac(std::string_view s) {
  if (s.size() != 17) return false;
  for (size_t i = 0; i < 17; ++i) {
    if (i % 3 == 2 ? s[i] != ':' : !IsHexDigit(s[i])) return false;
  }
  return true;
}

bool EndsWithAny(std::string_view s, std::initializer_list<std::string_view> tails) {
  for (std::string_view t : tails) {
    if (EndsWith(s, t)) return true;
  }
  return false;
}

}  // namespace

// How much of `name` is a learned host: all of it, or the longest learned host
// it begins with before a '-' (a NIC's suffix "node-7-ib", a pod of a Job
// "trainer-workers-2-0-x7k2p"): that part is hidden and the suffix kept, as the
// scan's peer map reads these aliases (PeerHost). 0 if none.
size_t Redactor::HostPrefix(std::string_view name) const {
  if (hosts_.count(name)) return name.size();
  for (size_t dash = name.rfind('-'); dash != std::string_view::npos && dash > 0; dash = name.rfind('-', dash - 1)) {
    if (hosts_.count(name.substr(0, dash))) return dash;
  }
  return 0;
}

// One pass, token by token: a run of host characters ('.' and ':' included)
// is an address, a MAC, or ':'-separated parts each of which may be an
// address, a learned host (with a NIC suffix and a domain after it), a user
// (a path component, before '@'), a job id or a container id.
void Redactor::Redact(std::string_view in, std::string* out) {
  if (same_length_ && !in_binary_pass_) {
    // In a binary member a name is glued to the bytes around it (a pickle's
    // opcodes are letters too): each learned name is replaced wherever it
    // occurs, at its own length, before the token pass.
    std::string copy(in);
    for (const auto* set : {&hosts_, &users_}) {
      for (const std::string& w : *set) {
        std::string ps;
        for (size_t at = FindLiteral(copy, w); at != std::string::npos; at = FindLiteral(copy, w, at + w.size())) {
          if (ps.empty()) {
            ps = Pseudonym(set == &hosts_ ? kHost : kUser, w);
            const std::string pad = Digest(kHost, w);
            if (ps.size() > w.size()) ps.resize(w.size());
            for (size_t k = 0; ps.size() < w.size(); ++k) ps += pad[k % pad.size()];
          }
          copy.replace(at, w.size(), ps);
          ++replaced_;
        }
      }
    }
    in_binary_pass_ = true;
    Redact(copy, out);
    in_binary_pass_ = false;
    return;
  }
  if (first_char_count_ != hosts_.size() + users_.size()) {
    first_char_.fill(false);
    for (const auto* set : {&hosts_, &users_}) {
      for (const std::string& w : *set) first_char_[static_cast<unsigned char>(w[0])] = true;
    }
    first_char_count_ = hosts_.size() + users_.size();
  }
  size_t pos = 0;  // copied up to
  auto replace = [&](size_t at, size_t len, int kind) {
    out->append(in.data() + pos, at - pos);
    const std::string_view v = in.substr(at, len);
    if (same_length_) {
      // A binary file (a Flight Recorder pickle) keeps every length it encodes.
      std::string ps = Pseudonym(kind, v);
      if (ps.size() > len) ps.resize(len);
      const std::string pad = Digest(kind, v);
      for (size_t k = 0; ps.size() < len; ++k) ps += pad[k % pad.size()];
      out->append(ps);
    } else {
      out->append(Pseudonym(kind, v));
    }
    pos = at + len;
    ++replaced_;
  };
  const size_t n = in.size();
  size_t i = 0;
  while (i < n) {
    if (!(Class(in[i]) & kRun)) {
      ++i;
      continue;
    }
    size_t j = i;
    uint8_t seen = 0;
    while (j < n && (Class(in[j]) & kRun)) seen |= Class(in[j++]);
    // A plain word (no digit, no '.' or ':') that no learned name starts like and
    // no '@' touches is nothing to replace: most of a log.
    if (!(seen & (kDigitC | kPunct)) && !first_char_[static_cast<unsigned char>(in[i])] &&
        !(i > 0 && in[i - 1] == '@') && !(j < n && in[j] == '@') && !(i > 0 && in[i - 1] == '/')) {
      i = j;
      continue;
    }
    // A number or a hex word with no '.' or ':' (a count, a pointer, an opCount;
    // most of a COLL trace) is no address; only a job id can hide in it (after
    // "SLURM_JOB_ID=" and the like, or a learned one of five digits or more), or
    // a container id (64 hex digits).
    if (!(seen & kPunct) && IsDigit(in[i]) && in[i - (i > 0)] != '=' && (jobs_.empty() || j - i < 5) && j - i != 64) {
      i = j;
      continue;
    }
    // The run without the punctuation a sentence or a list puts after it.
    size_t e = j;
    while (e > i && (in[e - 1] == '.' || in[e - 1] == ':' || in[e - 1] == '-')) --e;
    const std::string_view run = in.substr(i, e - i);
    if (run.empty()) {
      i = j;
      continue;
    }
    if (LooksLikeMac(run)) {
      replace(i, run.size(), kMac);
      i = j;
      continue;
    }
    const size_t colon = seen & kColon ? run.find(':') : std::string_view::npos;
    // An IPv6 address's first group has at most 4 digits ("gpu-node-7:4821:4829" is none).
    if (colon <= 4 && run.find(':', colon + 1) != std::string_view::npos && LooksLikeIpv6(run) &&
        !std::all_of(run.begin(), run.end(), [](char c) { return IsDigit(c) || c == ':'; })) {
      replace(i, run.size(), kIp6);
      i = j;
      continue;
    }
    // The run's ':'-separated parts.
    size_t p = i;
    while (p < e) {
      size_t q = seen & kColon ? p : e;  // a run without ':' is one part
      while (q < e && in[q] != ':') ++q;
      const std::string_view part = in.substr(p, q - p);
      const char pb = p > 0 ? in[p - 1] : ' ';
      const char pa = q < n ? in[q] : ' ';
      if (part.empty()) {
      } else if ((seen & kDot) && LooksLikeIpv4(part)) {
        replace(p, part.size(), kIp4);
      } else if (size_t v4 = seen & kDot ? Ipv4Prefix(part) : 0) {
        replace(p, v4, kIp4);  // "192.168.11.119.kern.log": an address a file is named after
      } else if (part.size() == 64 && std::all_of(part.begin(), part.end(), IsHexDigit)) {
        replace(p, part.size(), kContainer);  // before numbers: an id may start with a digit
      } else if (IsDigit(part[0])) {
        // A job id: learned ones as numbers of their own ("9411285.0"), any after "StepId=".
        size_t d = 0;
        while (d < part.size() && IsDigit(part[d])) ++d;
        const std::string_view digits = part.substr(0, d);
        const bool job_word =
            pb == '=' && p >= 2 && (in[p - 2] == 'D' || in[p - 2] == 'd') &&  // each word ends "D=" or "d="
            EndsWithAny(in.substr(0, p), {"SLURM_JOB_ID=", "SLURM_JOBID=", "SLURM_ARRAY_JOB_ID=", "StepId=", "JobId="});
        if ((job_word || (d >= 5 && jobs_.count(digits))) && (d == part.size() || part[d] == '.')) replace(p, d, kJob);
      } else {
        // A host: the part up to its first '.', or a learned host it begins with before a '-'.
        const bool home = pb == '/' && EndsWithAny(in.substr(0, p), {"/home/", "/Users/"});
        const size_t dot = seen & kDot ? part.find('.') : std::string_view::npos;
        const std::string_view name = part.substr(0, dot);
        // (No learned name starts with a byte first_char_ lacks: no lookup for most words.)
        const size_t name_len = first_char_[static_cast<unsigned char>(part[0])] ? HostPrefix(name) : 0;
        if (dot != std::string_view::npos && dot + 1 < part.size() && name_len == 0) {
          // A host inside a dotted name ("nccl.ws-gpu01.20311", NCCL_DEBUG_FILE's): each label.
          bool any = false;
          for (size_t l = dot + 1; l < part.size();) {
            size_t m = part.find('.', l);
            if (m == std::string_view::npos) m = part.size();
            if (m > l && hosts_.count(part.substr(l, m - l))) {
              replace(p + l, m - l, kHost);
              any = true;
            }
            l = m + 1;
          }
          if (any) {
            p = q + 1;
            continue;
          }
        }
        if (!jobs_.empty()) {
          // A learned job id inside a name ("slurm-991231.out", "job_991231").
          bool any = false;
          for (size_t k = 0; k < part.size();) {
            if (!IsDigit(part[k])) {
              ++k;
              continue;
            }
            size_t m = k;
            while (m < part.size() && IsDigit(part[m])) ++m;
            if (m - k >= 5 && jobs_.count(part.substr(k, m - k))) {
              replace(p + k, m - k, kJob);
              any = true;
            }
            k = m;
          }
          if (any) {
            p = q + 1;
            continue;
          }
        }
        const bool prompt = !same_length_ && (pb == '@' || pa == '@');
        if (!home && !first_char_[static_cast<unsigned char>(part[0])] && !prompt) {
          p = q + 1;
          continue;  // no learned name starts so: nothing to look up
        }
        if (name_len > 0 && !(home && dot == std::string_view::npos && users_.count(part))) {
          replace(p, name_len, kHost);
          // ".narval.calcul.quebec" after a host (not in a file name: ".dmesg.log",
          // nor a host-named file a grep -H prefix cites: "node-7.log:").
          if (dot != std::string_view::npos && !in_path_ && dot + 1 < part.size() && IsAlpha(part[dot + 1]) &&
              !EndsWithAny(part, {".log", ".txt", ".out", ".err", ".stdout", ".stderr"}))
            replace(p + dot, part.size() - dot, kDomain);
        } else if (home || (users_.count(part) && (pb == '/' || (pa == '@' && !same_length_)))) {
          if (home) users_.emplace(part);
          replace(p, part.size(), kUser);
        } else if (prompt && pa == '@' && p == i && part.size() >= 2 && !IsDigit(part[0]) && !NotAUser(part) &&
                   std::all_of(part.begin(), part.end(),
                               [](char c) { return (c >= 'a' && c <= 'z') || IsDigit(c) || c == '_' || c == '-'; })) {
          // A prompt "user@host:~$" whose user no line named elsewhere.
          replace(p, part.size(), kUser);
        } else if (prompt && pb == '@' && p == i && (pa == ':' || pa == ' ' || pa == ']') &&
                   dot == std::string_view::npos && !IsRankLabel(part)) {
          replace(p, part.size(), kHost);  // a prompt's host no scan placed anything on
        }
      }
      p = q + 1;
    }
    i = j;
  }
  out->append(in.data() + pos, n - pos);
}

}  // namespace ncclscan
