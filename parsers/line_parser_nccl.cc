// The NCCL header parsers of LineParser (line_parser.cc): the bare header
// parsed forwards, the general one backwards from its "NCCL LEVEL" keyword,
// and lines glued after a header.
#include <algorithm>
#include <cstring>

#include "parsers/line_parser.h"
#include "parsers/line_parser_internal.h"
#include "parsers/nccl_fragments.h"
#include "parsers/text_util.h"
#include "parsers/wrappers.h"

namespace ncclscan {

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
  if (c1 == std::string_view::npos) return false;
  // ":pid:tid" without a host (a container whose hostname NCCL read empty):
  // a collector's host prefix ("worker-9 >> ") names it, or the header is none.
  if (c1 == 0 && line->host_hint.empty()) return false;
  std::string_view pid = tok.substr(c1 + 1, c2 - c1 - 1), tid = tok.substr(c2 + 1);
  int64_t p, t;
  if (!ConsumeInt(&pid, &p) || !pid.empty() || !ConsumeInt(&tid, &t) || !tid.empty()) return false;
  std::string_view host = c1 == 0 ? line->host_hint : tok.substr(0, c1);
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
    int16_t year = 0;
    double ts = ConsumeIsoTimestamp(&u, &year);
    if (ts >= 0) {
      line->time = ts;
      line->year = year;
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

bool ParseGeneralNcclHeader(ParsedLine* line, std::string_view* rest) {
  std::string_view s = line->text;
  *rest = {};
  if (StartsWith(s, "NCCL version ")) {
    line->family = Family::kNccl;
    line->level = NcclLevel::kVersion;
    line->message = s;
    return true;
  }
  static const LiteralFinder kNcclWord("NCCL ");
  size_t kw = kNcclWord.Find(s);
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
    kw = kNcclWord.Find(s, kw + 1);
  }
  if (level == NcclLevel::kNone) {
    // Pre-2.4 lines have no NCCL keyword: "host:pid:tid [dev] INFO msg", and
    // before 2.3 warnings carry the source location: "host:pid:tid [dev] file:line WARN msg".
    static const LiteralFinder kOldLevels[] = {LiteralFinder("] INFO "), LiteralFinder("] WARN "),
                                               LiteralFinder(" WARN ")};
    for (const LiteralFinder& finder : kOldLevels) {
      std::string_view w = finder.literal();
      size_t k = finder.Find(s);
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

}  // namespace ncclscan
