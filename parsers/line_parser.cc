#include "parsers/line_parser.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "parsers/line_parser_internal.h"
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
// The line without its trailing CR / LF bytes and blanks (a paste from tmux or
// screen pads each line with spaces to the terminal's width).
std::string_view WithoutLineEnd(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

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
    int16_t year = 0;
    double ts = ConsumeIsoTimestamp(&time, &year);
    if (ts >= 0) out->KeepTime(ts, year);
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
  // An indented paste (a code block inside a markdown list item, a forum's
  // quote): the indent is the page's where a header or a wrapper follows it.
  // (Elsewhere it is kept: nvidia-smi's, ibstat's and py-spy's rows are
  // indented, and their rules read the indent.)
  if (!s.empty() && IsSpace(s[0])) {
    std::string_view t = s;
    while (!t.empty() && IsSpace(t[0])) t.remove_prefix(1);
    if (MatchNcclProcess(t, &bare_) || StripOneWrapper(&t, out)) s = t;
  }

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
  out->text = WithoutRayRepeatSuffix(s);
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
  std::string_view msg = WithoutRayRepeatSuffix(s.substr(h.size()));
  ByteScan scan = ScanBytes(msg);
  if (scan.ansi || scan.control) return false;  // CR and NUL are control bytes too
  out->text = s.substr(0, h.size() + msg.size());
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
  out->KeepTime(open.time, open.year);
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
