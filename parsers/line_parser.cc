#include "parsers/line_parser.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "parsers/nccl_fragments.h"
#include "parsers/text_util.h"
#include "parsers/wrappers.h"

namespace ncclscan {

const char* FamilyName(Family f) {
  switch (f) {
    case Family::kNccl:
      return "nccl";
    case Family::kTorch:
      return "torch";
    case Family::kElastic:
      return "elastic";
    case Family::kOther:
      return "other";
  }
  return "other";
}

struct LineParser::Json {
  simdjson::ondemand::parser parser;
  std::string buf;
};

LineParser::LineParser() : json_(new Json) {}

namespace {

size_t Find(std::string_view s, std::string_view needle, size_t from = 0) { return FindLiteral(s, needle, from); }
// The line without its trailing CR / LF bytes.
std::string_view WithoutLineEnd(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}
bool Contains(std::string_view s, std::string_view needle) { return Find(s, needle) != std::string_view::npos; }

}  // namespace
LineParser::~LineParser() = default;

bool LineParser::UnwrapDockerJson(std::string_view s, Arena* arena, ParsedLine* out) {
  Json& j = *json_;
  j.buf.assign(s.data(), s.size());
  j.buf.append(simdjson::SIMDJSON_PADDING, '\0');
  simdjson::ondemand::document doc;
  if (j.parser.iterate(j.buf.data(), s.size(), j.buf.size()).get(doc) != simdjson::SUCCESS) return false;
  simdjson::ondemand::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) return false;
  std::string_view log, time;
  bool have_log = false;
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return false;
    if (key == "log") {
      if (field.value().get_string().get(log) != simdjson::SUCCESS) return false;
      have_log = true;
    } else if (key == "time") {
      if (field.value().get_string().get(time) != simdjson::SUCCESS) time = {};
    }  // other fields ("stream") are skipped by the iterator
  }
  if (!have_log) return false;
  while (!log.empty() && (log.back() == '\n' || log.back() == '\r')) log.remove_suffix(1);
  out->text = arena->Store(log);
  if (!time.empty()) {
    double ts = ConsumeIsoTimestamp(&time);
    if (ts >= 0 && out->time < 0) out->time = ts;
  }
  return true;
}

void LineParser::Unwrap(std::string_view raw, Arena* arena, ParsedLine* out) {
  bare_ = NcclProcess();
  bare_clean_ = false;
  std::string_view s = WithoutLineEnd(raw);
  ByteScan scan = ScanBytes(s);
  // tqdm-style "\r" redraws: keep the text after the last '\r'.
  if (scan.cr) {
    if (const void* cr = memrchr(s.data(), '\r', s.size())) {
      s.remove_prefix(static_cast<const char*>(cr) - s.data() + 1);
      scan = ScanBytes(s);
    }
  }
  // NUL bytes inside a line: dropped so the text can still be matched.
  if (scan.nul) {
    out->had_nul = true;
    char* buf = arena->Allocate(s.size());
    size_t n = 0;
    for (char c : s) {
      if (c != '\0') buf[n++] = c;
    }
    s = std::string_view(buf, n);
    scan = ScanBytes(s);
  }
  // Mostly binary: count, do not match.
  if (scan.control * 4 > std::min<size_t>(s.size(), 256)) {
    out->binary = true;
    out->text = s;
    return;
  }
  if (scan.ansi) s = StripAnsi(s, arena);

  for (int layer = 0; layer < 12; ++layer) {
    // Fast path: a bare NCCL line ("host:pid:tid ...") carries no outer wrapper.
    if (MatchNcclProcess(s, &bare_)) {
      // (CR and NUL are control bytes too.)
      bare_clean_ = layer == 0 && !scan.ansi && scan.control == 0;
      break;
    }
    if (!s.empty() && s[0] == '{' && Contains(s.substr(0, 16), "\"log\"")) {
      ParsedLine tmp = *out;
      if (UnwrapDockerJson(s, arena, &tmp)) {
        *out = tmp;
        s = out->text;
        if (ScanBytes(s).ansi) s = StripAnsi(s, arena);
        continue;
      }
    }
    if (!StripOneWrapper(&s, out)) break;
  }
  out->text = s;
}

// ---------------------------------------------------------------------------
// NCCL header: "[ts] host:pid:tid [dev] (file:line (func) |time func:line )NCCL LEVEL msg"

namespace {

struct LevelWord {
  std::string_view word;
  NcclLevel level;
};
constexpr LevelWord kLevels[] = {{"INFO ", NcclLevel::kInfo},
                                 {"WARN ", NcclLevel::kWarn},
                                 {"TRACE ", NcclLevel::kTrace},
                                 {"CALL ", NcclLevel::kCall},
                                 {"ABORT ", NcclLevel::kAbort}};

// The token ending just before position `end` (exclusive, end points at a space
// or the string end). Returns start index.
size_t TokenStart(std::string_view s, size_t end) {
  size_t i = end;
  while (i > 0 && s[i - 1] != ' ') --i;
  return i;
}

bool ParseHostPidTid(std::string_view tok, ParsedLine* line) {
  size_t c2 = tok.rfind(':');
  if (c2 == std::string_view::npos || c2 == 0) return false;
  size_t c1 = tok.rfind(':', c2 - 1);
  if (c1 == std::string_view::npos || c1 == 0) return false;
  std::string_view pid = tok.substr(c1 + 1, c2 - c1 - 1), tid = tok.substr(c2 + 1);
  int64_t p, t;
  if (!ConsumeInt(&pid, &p) || !pid.empty() || !ConsumeInt(&tid, &t) || !tid.empty()) return false;
  std::string_view host = tok.substr(0, c1);
  // A grep prefix glued in front ("rank3.log:12:host") leaves colons: keep the last part.
  size_t c0 = host.rfind(':');
  if (c0 != std::string_view::npos) host = host.substr(c0 + 1);
  // So does the end of a line glued in front ("...10.0.0.1<0>h1:1:1"): a host
  // name is letters, digits, '.', '-' and '_' (or a redaction placeholder,
  // "<cluster_name>", kept whole).
  if (!(host.front() == '<' && host.back() == '>')) {
    for (size_t i = host.size(); i > 0; --i) {
      const char ch = host[i - 1];
      if (!IsHostChar(ch)) {
        if (i < host.size()) host = host.substr(i);
        break;
      }
    }
  }
  if (host.empty()) return false;
  line->host = host;
  line->pid = p;
  line->tid = t;
  return true;
}

// "[3]". A device number that does not fit (kMaxRanks) still makes the token a
// "[dev]", with *dev -1 and *bad set: the header parses, the number is dropped.
bool ParseDevToken(std::string_view tok, int* dev, bool* bad) {
  if (tok.size() < 3 || tok.front() != '[' || tok.back() != ']') return false;
  std::string_view d = tok.substr(1, tok.size() - 2);
  int64_t v;
  const IntParse got = ConsumeIntBelow(&d, kMaxRanks, &v);
  if (got == IntParse::kNone || !d.empty()) return false;
  *dev = got == IntParse::kOk ? static_cast<int>(v) : -1;
  *bad = got == IntParse::kOutOfRange;
  return true;
}

// NCCL 2.26+ "[2025-05-02 14:03:11] " (or any custom text) before the host.
void ParseNcclTimestamp(std::string_view pre, ParsedLine* line) {
  pre = TrimSpace(pre);
  if (pre.size() >= 2 && pre.front() == '[' && pre.back() == ']') pre = pre.substr(1, pre.size() - 2);
  size_t k = pre.find_first_of("0123456789");
  while (k != std::string_view::npos && k + 19 <= pre.size()) {
    std::string_view u = pre.substr(k);
    double ts = ConsumeIsoTimestamp(&u);
    if (ts >= 0) {
      line->time = ts;
      return;
    }
    k = pre.find_first_of("0123456789", pre.find_first_not_of("0123456789", k));
  }
}

// Finds the start of a "host:pid:tid [dev] " header that ends right before the
// "NCCL" keyword at `kw` (skipping an optional "file:line (func) " or TRACE
// "time func:line "). Returns npos if the tokens do not fit.
size_t HeaderStart(std::string_view s, size_t kw, ParsedLine* line) {
  if (kw == 0) return 0;
  if (s[kw - 1] != ' ') return std::string_view::npos;
  size_t end = kw - 1;
  size_t start = TokenStart(s, end);
  std::string_view tok = s.substr(start, end - start);
  // Optional "(func)" (2.30+).
  if (tok.size() >= 2 && tok.front() == '(' && tok.back() == ')') {
    if (start == 0) return std::string_view::npos;
    end = start - 1;
    start = TokenStart(s, end);
    tok = s.substr(start, end - start);
  }
  // Optional "file:line" (WARN) or "func:line" preceded by a TRACE time.
  if (!tok.empty() && tok.front() != '[' && tok.find(':') != std::string_view::npos) {
    size_t c = tok.rfind(':');
    std::string_view num = tok.substr(c + 1);
    int64_t v;
    if (ConsumeInt(&num, &v) && num.empty() && c > 0) {
      // Could be the host:pid:tid itself (CALL lines have no [dev]).
      if (ParseHostPidTid(tok, line)) {
        return start;
      }
      line->src_loc = tok;
      if (start == 0) return 0;  // cut-down line: "file:line NCCL WARN"
      end = start - 1;
      start = TokenStart(s, end);
      tok = s.substr(start, end - start);
      // TRACE "1523.041870"
      if (!tok.empty() && IsDigit(tok[0]) && tok.find('.') != std::string_view::npos &&
          tok.find(':') == std::string_view::npos) {
        if (start == 0) return 0;
        end = start - 1;
        start = TokenStart(s, end);
        tok = s.substr(start, end - start);
      }
    }
  }
  int dev;
  bool bad_dev;
  if (ParseDevToken(tok, &dev, &bad_dev)) {
    line->dev = dev;
    if (bad_dev) line->bad_number = true;
    if (start == 0) return 0;  // "[3] NCCL INFO …": prefix cut down
    end = start - 1;
    start = TokenStart(s, end);
    tok = s.substr(start, end - start);
  }
  if (ParseHostPidTid(tok, line)) return start;
  // Prefix removed or mangled: accept if the keyword directly follows [dev] or file:line.
  if (line->dev >= 0 || !line->src_loc.empty()) return end + 1;
  return std::string_view::npos;
}

}  // namespace

namespace {

// Two lines glued together: a second "host:pid:tid [dev] NCCL INFO|WARN" inside
// msg. Returns msg without it and sets *rest to it.
std::string_view SplitGlued(std::string_view msg, std::string_view* rest) {
  static const LiteralFinder kNccl("NCCL ");
  for (size_t n = kNccl.Find(msg); n != std::string_view::npos; n = kNccl.Find(msg, n + 1)) {
    if (n == 0 || msg[n - 1] != ' ') continue;
    size_t k = n - 1;
    std::string_view after = msg.substr(k + 6);
    if (!StartsWith(after, "INFO ") && !StartsWith(after, "WARN ")) continue;
    ParsedLine tmp;
    size_t h = HeaderStart(msg, k + 1, &tmp);
    if (h != std::string_view::npos && h > 0 && !tmp.host.empty()) {
      // The second line starts at its host, or at the grep prefix before it
      // ("rank3.log:12:host"): what comes before in the token ends the first
      // line ("...eth0:10.0.0.1<0>" + "h1:1:1 [0] NCCL INFO ...").
      const size_t host_end = static_cast<size_t>(tmp.host.data() - msg.data()) + tmp.host.size();
      for (size_t i = host_end; i > h; --i) {
        const char ch = msg[i - 1];
        if (!IsHostChar(ch) && ch != ':' && ch != '/') {
          h = i;
          break;
        }
      }
      *rest = msg.substr(h);
      return TrimSpace(msg.substr(0, h));
    }
  }
  return msg;
}

// The common shape, parsed forwards: "host:pid:tid [dev] NCCL LEVEL " (or
// without "[dev] ") at the very start. Returns false, leaving *line untouched,
// for anything else; the general backwards parse then decides, and gives the
// same result on the lines this accepts.
bool ParseBareNcclHeader(ParsedLine* line, const NcclProcess& np, std::string_view* rest, size_t* header_len) {
  if (np.len == 0 || np.pid < 0 || np.tid < 0) return false;
  std::string_view s = line->text;
  const size_t n = s.size();
  size_t i = np.len;
  ++i;  // the space
  int dev = -1;
  if (i < n && s[i] == '[') {
    size_t d = ++i;
    int64_t v = 0;
    while (i < n && IsDigit(s[i]) && i - d < 9) v = v * 10 + (s[i++] - '0');
    // A device number that does not fit takes the general path, which flags it.
    if (i == d || i + 1 >= n || s[i] != ']' || s[i + 1] != ' ' || v >= kMaxRanks) return false;
    dev = static_cast<int>(v);
    i += 2;
  }
  if (n - i < 5 || std::memcmp(s.data() + i, "NCCL ", 5) != 0) return false;
  std::string_view after = s.substr(i + 5);
  for (const LevelWord& lw : kLevels) {
    if (!StartsWith(after, lw.word)) continue;
    line->host = s.substr(0, np.host_len);
    line->pid = np.pid;
    line->tid = np.tid;
    line->dev = dev;
    line->family = Family::kNccl;
    line->level = lw.level;
    *header_len = i + 5 + lw.word.size();
    line->message = SplitGlued(after.substr(lw.word.size()), rest);
    return true;
  }
  return false;
}

// The backwards parse from the "NCCL LEVEL" keyword, for every other shape.
bool ParseGeneralNcclHeader(ParsedLine* line, std::string_view* rest);

}  // namespace

bool ParseNcclHeader(ParsedLine* line, std::string_view* rest) {
  *rest = {};
  NcclProcess np;
  size_t header_len;
  bool ok = (MatchNcclProcess(line->text, &np) && ParseBareNcclHeader(line, np, rest, &header_len)) ||
            ParseGeneralNcclHeader(line, rest);
  if (ok) CutGluedText(line, *rest);
  return ok;
}

void CutGluedText(ParsedLine* line, std::string_view rest) {
  // A glued second line is not part of this one's text either (rules of
  // family `any` match the text).
  if (!rest.empty() && rest.data() > line->text.data() && rest.data() <= line->text.data() + line->text.size()) {
    line->text = TrimSpace(line->text.substr(0, static_cast<size_t>(rest.data() - line->text.data())));
  }
}

namespace {

bool ParseGeneralNcclHeader(ParsedLine* line, std::string_view* rest) {
  std::string_view s = line->text;
  *rest = {};
  if (StartsWith(s, "NCCL version ")) {
    line->family = Family::kNccl;
    line->level = NcclLevel::kVersion;
    line->message = s;
    return true;
  }
  size_t kw = Find(s, "NCCL ");
  NcclLevel level = NcclLevel::kNone;
  size_t msg_start = 0;
  size_t hdr = std::string_view::npos;
  while (kw != std::string_view::npos) {
    std::string_view after = s.substr(kw + 5);
    for (const LevelWord& lw : kLevels) {
      if (StartsWith(after, lw.word)) {
        ParsedLine tmp = *line;
        size_t h = HeaderStart(s, kw, &tmp);
        if (h != std::string_view::npos) {
          *line = tmp;
          level = lw.level;
          msg_start = kw + 5 + lw.word.size();
          hdr = h;
        }
        break;
      }
    }
    if (level != NcclLevel::kNone) break;
    kw = Find(s, "NCCL ", kw + 1);
  }
  if (level == NcclLevel::kNone) {
    // Pre-2.4 lines have no NCCL keyword: "host:pid:tid [dev] INFO msg", and
    // before 2.3 warnings carry the source location: "host:pid:tid [dev] file:line WARN msg".
    for (std::string_view w : {std::string_view("] INFO "), std::string_view("] WARN "), std::string_view(" WARN ")}) {
      size_t k = Find(s, w);
      if (k == std::string_view::npos) continue;
      ParsedLine tmp = *line;
      const size_t msg_at = k + w.size();
      std::string_view loc;
      if (w[0] == ' ') {
        // " WARN " after a "file:line" token that follows "[dev]".
        size_t ls = TokenStart(s, k);
        std::string_view tok = s.substr(ls, k - ls);
        size_t c = tok.rfind(':');
        std::string_view num = c == std::string_view::npos ? std::string_view() : tok.substr(c + 1);
        int64_t v;
        if (c == std::string_view::npos || c == 0 || !ConsumeInt(&num, &v) || !num.empty() || ls < 2 ||
            s[ls - 2] != ']') {
          continue;
        }
        loc = tok;
        k = ls - 2;
      }
      size_t dev_start = TokenStart(s, k + 1);
      int dev;
      bool bad_dev;
      if (!ParseDevToken(s.substr(dev_start, k + 1 - dev_start), &dev, &bad_dev) || dev_start == 0) continue;
      if (bad_dev) tmp.bad_number = true;
      size_t hs = TokenStart(s, dev_start - 1);
      if (!ParseHostPidTid(s.substr(hs, dev_start - 1 - hs), &tmp)) continue;
      tmp.dev = dev;
      if (!loc.empty()) tmp.src_loc = loc;
      *line = tmp;
      level = w[2] == 'I' ? NcclLevel::kInfo : NcclLevel::kWarn;
      msg_start = msg_at;
      hdr = hs;
      break;
    }
    if (level == NcclLevel::kNone) return false;
  }
  if (hdr > 0) ParseNcclTimestamp(s.substr(0, hdr), line);
  line->family = Family::kNccl;
  line->level = level;
  line->message = SplitGlued(s.substr(msg_start), rest);
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------
// c10 / glog header and the process-group prefix.

namespace {

bool IsSeverity(char c) { return c == 'F' || c == 'E' || c == 'W' || c == 'I' || c == 'V'; }

// "MMDD HH:MM:SS(.frac)" at the front of *s.
double ConsumeGlogTime(std::string_view* s) {
  std::string_view u = *s;
  size_t i = 0;
  while (i < u.size() && IsDigit(u[i])) ++i;
  if (i < 3 || i > 4 || i + 9 > u.size() || u[i] != ' ') return -1;
  int mmdd = 0;
  for (size_t k = 0; k < i; ++k) mmdd = mmdd * 10 + (u[k] - '0');
  u.remove_prefix(i + 1);
  int64_t hh, mm, ss;
  // Each field below 100 before the casts below: "4294967306:15:32" is no hour 10.
  if (ConsumeIntBelow(&u, 100, &hh) != IntParse::kOk || !ConsumePrefix(&u, ":") ||
      ConsumeIntBelow(&u, 100, &mm) != IntParse::kOk || !ConsumePrefix(&u, ":") ||
      ConsumeIntBelow(&u, 100, &ss) != IntParse::kOk) {
    return -1;
  }
  double frac = 0;
  if (ConsumePrefix(&u, ".")) {
    double scale = 0.1;
    while (!u.empty() && IsDigit(u[0])) {
      frac += (u[0] - '0') * scale;
      scale /= 10;
      u.remove_prefix(1);
    }
  }
  double ts = SecondsOfYear(mmdd / 100, mmdd % 100, static_cast<int>(hh), static_cast<int>(mm), ss + frac);
  if (ts < 0) return -1;
  *s = u;
  return ts;
}

// "[PG ID 0 PG GUID 0(default_pg) Rank 3] ", "[PG 1 Rank 0] ", "[Rank 3] ".
void ParsePgPrefix(std::string_view msg, ParsedLine* line) {
  if (msg.empty() || msg[0] != '[') return;
  size_t close = msg.find(']');
  if (close == std::string_view::npos || close > 128) return;
  std::string_view inner = msg.substr(1, close - 1);
  size_t r = inner.rfind("Rank ");
  if (r == std::string_view::npos) return;
  std::string_view num = inner.substr(r + 5);
  int64_t v;
  const IntParse got = ConsumeIntBelow(&num, kMaxRanks, &v);
  if (got == IntParse::kNone || !num.empty()) return;
  if (got == IntParse::kOutOfRange) {  // "[Rank 4294967297]": no rank, not rank 1
    line->bad_number = true;
    return;
  }
  if (StartsWith(inner, "PG ")) {
    std::string_view id = inner.substr(3);
    ConsumePrefix(&id, "ID ");
    size_t e = 0;
    while (e < id.size() && IsDigit(id[e])) ++e;
    line->pg_id = id.substr(0, e);
  } else if (r != 0) {
    return;
  }
  line->pg_rank = static_cast<int>(v);
}

}  // namespace

bool ParseTorchHeader(ParsedLine* line) {
  std::string_view s = line->text;
  if (s.size() < 4) return false;
  std::string_view file;
  if (s[0] == '[' && IsSeverity(s[1])) {
    // "[E ProcessGroupNCCL.cpp:474] " / "[E1122 10:15:32.123456789 ProcessGroupNCCL.cpp:616] "
    std::string_view u = s.substr(2);
    if (!u.empty() && IsDigit(u[0])) {
      double ts = ConsumeGlogTime(&u);
      if (ts < 0) return false;
      line->time = ts;
    }
    if (!ConsumePrefix(&u, " ")) return false;
    size_t close = u.find("] ");
    if (close == std::string_view::npos || close > 200 || u.substr(0, close).find(' ') != std::string_view::npos) {
      return false;
    }
    file = u.substr(0, close);
    line->message = u.substr(close + 2);
  } else if (IsSeverity(s[0]) && IsDigit(s[1])) {
    // glog: "E0731 10:50:08.043000 3247964 path/api.py:869] msg"
    std::string_view u = s.substr(1);
    double ts = ConsumeGlogTime(&u);
    if (ts < 0) return false;
    int64_t tid;
    if (!ConsumePrefix(&u, " ")) return false;
    while (!u.empty() && u[0] == ' ') u.remove_prefix(1);
    if (!ConsumeInt(&u, &tid) || !ConsumePrefix(&u, " ")) return false;
    size_t close = u.find("] ");
    if (close == std::string_view::npos || close > 300) return false;
    file = u.substr(0, close);
    line->message = u.substr(close + 2);
    line->time = ts;
  } else if (StartsWith(s, "[20") && s.size() > 26 && s[24] == ']') {
    // torch 2.1-2.2 python logger "[2024-07-25 06:36:18,293] torch.distributed.elastic…: [WARNING] msg"
    std::string_view u = s.substr(1);
    double ts = ConsumeIsoTimestamp(&u);
    if (ts < 0 || !ConsumePrefix(&u, "] ")) return false;
    line->time = ts;
    size_t colon = u.find(": ");
    if (colon == std::string_view::npos) return false;
    file = u.substr(0, colon);
    std::string_view m = u.substr(colon + 2);
    if (!m.empty() && m[0] == '[') {
      size_t e = m.find("] ");
      if (e != std::string_view::npos && e < 12) m.remove_prefix(e + 2);
    }
    line->message = m;
    line->severity = 'I';
  } else {
    // stdlib logging "WARNING:torch.distributed.elastic.multiprocessing.api:msg"
    static const std::string_view kLevelsPy[] = {"WARNING:", "ERROR:", "INFO:", "CRITICAL:", "DEBUG:"};
    for (std::string_view lv : kLevelsPy) {
      if (StartsWith(s, lv) && StartsWith(s.substr(lv.size()), "torch.")) {
        std::string_view u = s.substr(lv.size());
        size_t colon = u.find(':');
        if (colon == std::string_view::npos) return false;
        file = u.substr(0, colon);
        line->message = u.substr(colon + 1);
        line->severity = lv[0];
        line->family = Family::kElastic;
        return true;
      }
    }
    return false;
  }
  if (!line->severity) line->severity = s[0] == '[' ? s[1] : s[0];
  line->family = (Contains(file, "elastic") || Contains(file, "torchrun") || Contains(file, "run.py"))
                     ? Family::kElastic
                     : Family::kTorch;
  ParsePgPrefix(line->message, line);
  return true;
}

Family ClassifyHeaderless(std::string_view t) {
  // Elastic agent output and the ChildFailedError table.
  if (Contains(t, "torch.distributed.elastic") || Contains(t, "ChildFailedError") ||
      Contains(t, "Root Cause (first observed failure)") || Contains(t, "Sending process")) {
    return Family::kElastic;
  }
  if (StartsWith(t, "  rank      :") || StartsWith(t, "  exitcode  :") || StartsWith(t, "  host      :") ||
      StartsWith(t, "  traceback :") || StartsWith(t, "  time      :") || StartsWith(t, "  error_file:")) {
    return Family::kElastic;
  }
  if (Contains(t, "NCCL") || Contains(t, "ProcessGroup") || Contains(t, "DistBackendError") || Contains(t, "what():") ||
      Contains(t, "[PG ") || Contains(t, "Process group") || Contains(t, "Watchdog") || Contains(t, "c10d") ||
      Contains(t, "torch.distributed") || Contains(t, "CUDA out of memory") || Contains(t, "WorkNCCL")) {
    return Family::kTorch;
  }
  return Family::kOther;
}

// Consecutive lines of one process mostly start with the same header bytes
// ("gpu-7:4242:4242 [3] NCCL INFO "). A line that starts with the bytes of the
// last clean bare header, and is clean after them, parses as that line did:
// Unwrap would strip nothing and match the same "host:pid:tid" at once, and the
// bare header parse reads only those bytes. Control bytes are counted from the
// message start here, so any that the full scan would count are seen too, and
// the line then takes the general path.
bool LineParser::ParseRepeatedHeader(std::string_view raw, ParsedLine* out, std::string_view* rest) {
  const std::string& h = repeat_.bytes;
  if (h.empty()) return false;
  const std::string_view s = WithoutLineEnd(raw);
  if (s.size() < h.size() || !EqualBytes(s.data(), h.data(), h.size())) return false;
  std::string_view msg = s.substr(h.size());
  ByteScan scan = ScanBytes(msg);
  if (scan.ansi || scan.control) return false;  // CR and NUL are control bytes too
  out->text = s;
  out->family = Family::kNccl;
  out->level = repeat_.level;
  out->host = s.substr(0, repeat_.host_len);
  out->pid = repeat_.pid;
  out->tid = repeat_.tid;
  out->dev = repeat_.dev;
  out->message = scan.nccl_keyword ? SplitGlued(msg, rest) : msg;
  return true;
}

void LineParser::Parse(std::string_view raw, Arena* arena, ParsedLine* out, std::string_view* rest) {
  // Default-initialised in place: every member has an initialiser, so this is a
  // few stores, where "*out = ParsedLine()" zero-fills a temporary and copies it.
  new (out) ParsedLine;
  ParseFresh(raw, arena, out, rest);
}

void LineParser::ParseFresh(std::string_view raw, Arena* arena, ParsedLine* out, std::string_view* rest) {
  list_.continued = false;
  ParseFreshPieces(raw, arena, out, rest);
  if (!rest->empty()) CutGluedText(out, *rest);
  if (!list_.continued) NoteInterfaceList(*out);
}

void LineParser::ResetStream() {
  list_ = ListContext();
  repeat_ = RepeatHeader();
}

bool LineParser::MayContinueInterfaceList(const ParsedLine& line) {
  return line.family != Family::kNccl && !line.binary && IsInterfaceListItems(line.text);
}

void LineParser::NoteInterfaceList(const ParsedLine& line) {
  list_.next = -1;
  if (line.family != Family::kNccl) return;
  const int next = OpenInterfaceList(line.message);
  if (next < 0 || next > kMaxListItems || line.text.size() > kMaxListText) return;
  list_.next = next;
  list_.text.assign(line.text.data(), line.text.size());
  const char* t = line.text.data();
  const char* m = line.message.data();
  if (m >= t && m + line.message.size() <= t + line.text.size()) {
    list_.message_at = static_cast<size_t>(m - t);
  } else {  // the message was rebuilt elsewhere (docker JSON escapes)
    list_.text.assign(line.message.data(), line.message.size());
    list_.message_at = 0;
  }
  list_.host.assign(line.host.data(), line.host.size());
  list_.host_hint.assign(line.host_hint.data(), line.host_hint.size());
  list_.src_file.assign(line.src_file.data(), line.src_file.size());
  // The views point into this line's chunk, which may be gone by the next line.
  list_.line = line;
  list_.line.text = list_.line.message = list_.line.host = list_.line.host_hint = {};
  list_.line.src_file = list_.line.src_loc = list_.line.pg_id = {};
}

bool LineParser::ContinueInterfaceList(Arena* arena, ParsedLine* out) {
  const ParsedLine& open = list_.line;
  // Interleaved output of several processes: the continuation must carry the
  // same wrapper hints as the line it continues.
  if (out->rank_hint != open.rank_hint || out->local_rank_hint != open.local_rank_hint ||
      out->host_hint != list_.host_hint || out->src_file != list_.src_file) {
    return false;
  }
  int following;
  if (!ContinuesInterfaceList(out->text, list_.next, &following)) return false;
  const std::string_view items = TrimSpace(out->text);
  if (list_.text.size() + 1 + items.size() > kMaxListText || following > kMaxListItems) return false;
  list_.text.append(" ").append(items.data(), items.size());
  // The header fields of the line continued; the wrapper fields are this line's (equal, above).
  out->family = Family::kNccl;
  out->level = open.level;
  out->pid = open.pid;
  out->tid = open.tid;
  out->dev = open.dev;
  out->text = arena->Store(list_.text);
  out->message = out->text.substr(list_.message_at);
  out->host = arena->Store(list_.host);
  if (out->time < 0) out->time = open.time;
  list_.next = following;  // -1: "; OOB …" ended it
  list_.continued = true;
  return true;
}

// Crash handlers name the process the way NCCL's header does: UCX/libucs
// "[host:pid:thread:tid] Caught signal 11 (…)" (the pid may be padded with
// blanks), Open MPI "[host:pid] *** Process received signal ***". The line
// then belongs to that process (host and pid), like its NCCL lines.
namespace {
void ParseHandlerPrefix(ParsedLine* out) {
  std::string_view t = out->text;
  if (t.size() < 5 || t[0] != '[') return;
  size_t i = 1;
  while (i < t.size() &&
         (IsDigit(t[i]) || ((t[i] | 0x20) >= 'a' && (t[i] | 0x20) <= 'z') || t[i] == '-' || t[i] == '_' || t[i] == '.'))
    ++i;
  if (i == 1 || i >= t.size() || t[i] != ':') return;
  const std::string_view host = t.substr(1, i - 1);
  if (std::all_of(host.begin(), host.end(), IsDigit)) return;  // "[12:34]": a time, not a host
  size_t j = ++i;
  int64_t pid = 0;
  while (j < t.size() && IsDigit(t[j]) && j - i < 10) pid = pid * 10 + (t[j++] - '0');
  if (j == i) return;
  while (j < t.size() && t[j] == ' ') ++j;
  if (j < t.size() && t[j] == ':') {  // UCX: ":thread:tid]"
    size_t k = j + 1;
    for (int part = 0; part < 2; ++part) {
      const size_t d = k;
      while (k < t.size() && IsDigit(t[k])) ++k;
      if (k == d || k >= t.size() || t[k] != (part == 0 ? ':' : ']')) return;
      ++k;
    }
  } else if (j >= t.size() || t[j] != ']') {
    return;
  }
  if (out->host.empty() && out->pid < 0) {
    out->host = host;
    out->pid = pid;
  }
}
}  // namespace

namespace {

// The length of a torchrun / PyTorch rank prefix at the start of s ("[default3]:",
// "[rank3]:"), 0 if none; *kind is "[default" or "[rank".
size_t RankPrefixLength(std::string_view s, std::string_view* kind) {
  for (std::string_view k : {std::string_view("[default"), std::string_view("[rank")}) {
    if (s.size() <= k.size() + 2 || s.compare(0, k.size(), k) != 0) continue;
    size_t i = k.size();
    const size_t digits = i;
    while (i < s.size() && i - digits < 7 && IsDigit(s[i])) ++i;
    if (i == digits || i + 1 >= s.size() || s[i] != ']' || s[i + 1] != ':') return 0;
    *kind = k;
    return i + 2;
  }
  return 0;
}

}  // namespace

size_t GluedRankPrefix(std::string_view raw) {
  if (raw.empty() || raw[0] != '[') return 0;
  std::string_view kind;
  const size_t first = RankPrefixLength(raw, &kind);
  if (first == 0) return 0;
  for (size_t at = raw.find(kind, first); at != std::string_view::npos; at = raw.find(kind, at + 1)) {
    std::string_view k2;
    if (RankPrefixLength(raw.substr(at), &k2) != 0 && k2 == kind) return at;
  }
  return 0;
}

size_t LastGluedRankPrefix(std::string_view raw) {
  size_t last = 0;
  for (size_t at = GluedRankPrefix(raw); at != 0; at = GluedRankPrefix(raw.substr(last))) last += at;
  return last;
}

void LineParser::ParseFreshPieces(std::string_view raw, Arena* arena, ParsedLine* out, std::string_view* rest) {
  *rest = {};
  if (ParseRepeatedHeader(raw, out, rest)) return;
  if (const size_t glued = GluedRankPrefix(raw)) {
    ParseFreshPieces(raw.substr(0, glued), arena, out, rest);
    // The second rank's line, and whatever is glued after it, are the next pieces.
    *rest = raw.substr(glued);
    return;
  }
  Unwrap(raw, arena, out);
  if (out->binary) return;
  if (list_.next >= 0 && ContinueInterfaceList(arena, out)) return;
  // Unwrap already matched the "host:pid:tid" of a bare NCCL line.
  size_t header_len;
  if (ParseBareNcclHeader(out, bare_, rest, &header_len)) {
    if (bare_clean_) {
      // Remembered for the lines after it (see ParseRepeatedHeader).
      std::string_view h = out->text.substr(0, header_len);
      if (h != repeat_.bytes) {
        repeat_.bytes.assign(h.data(), h.size());
        repeat_.host_len = out->host.size();
        repeat_.pid = out->pid;
        repeat_.tid = out->tid;
        repeat_.dev = out->dev;
        repeat_.level = out->level;
      }
    }
    return;
  }
  if (ParseGeneralNcclHeader(out, rest)) return;
  if (ParseTorchHeader(out)) return;
  // A quoted NCCL line without its "host:pid:tid [dev] NCCL" prefix.
  if (ParseHeaderlessNccl(out)) return;
  out->family = ClassifyHeaderless(out->text);
  out->message = out->text;
  ParseHandlerPrefix(out);
  if (out->family == Family::kTorch) {
    // "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 2] Process group watchdog …": the
    // process-group prefix after other prefixes still names the rank.
    size_t k = Find(out->text, "[PG ");
    if (k == std::string_view::npos) k = Find(out->text, "[Rank ");
    if (k != std::string_view::npos) ParsePgPrefix(out->text.substr(k), out);
  }
  // A traceback line "[rank3]: torch.distributed.DistBackendError: …" has its hint already.
}

}  // namespace ncclscan
