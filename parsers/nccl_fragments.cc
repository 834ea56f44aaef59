#include "parsers/nccl_fragments.h"

#include "parsers/text_util.h"

namespace ncclscan {

namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsWordChar(char c) { return IsAlpha(c) || IsDigit(c) || c == '_'; }

// A rank, "%d" of NCCL's format: digits only, below kMaxRanks.
enum class Num { kNone, kOk, kTooBig };
Num ConsumeRank(std::string_view* s, int* out) {
  int64_t v;
  switch (ConsumeIntBelow(s, kMaxRanks, &v)) {
    case IntParse::kNone:
      return Num::kNone;
    case IntParse::kOutOfRange:
      return Num::kTooBig;
    case IntParse::kOk:
      break;
  }
  *out = static_cast<int>(v);
  return Num::kOk;
}

// "[1a000]" / "[3]": the bus id or device NCCL prints after a rank.
bool ConsumeDevSuffix(std::string_view* s) {
  if (s->empty() || (*s)[0] != '[') return true;  // optional (2.4-era rings)
  size_t i = 1;
  while (i < s->size() && IsHexDigit((*s)[i])) ++i;
  if (i == 1 || i >= s->size() || (*s)[i] != ']') return false;
  s->remove_prefix(i + 1);
  return true;
}

// "Channel 02/0 : " / "Channel 02 : " / "Ring 00 : ".
void SkipChannelPrefix(std::string_view* s) {
  std::string_view u = *s;
  if (!ConsumePrefix(&u, "Channel ") && !ConsumePrefix(&u, "Ring ")) return;
  int64_t v;
  if (!ConsumeInt(&u, &v)) return;
  if (ConsumePrefix(&u, "/") && !ConsumeInt(&u, &v)) return;
  while (!u.empty() && IsBlank(u[0])) u.remove_prefix(1);
  if (!ConsumePrefix(&u, ":")) return;
  while (!u.empty() && IsBlank(u[0])) u.remove_prefix(1);
  *s = u;
}

// Openings of NCCL INFO / WARN messages that no application line has: a
// subsystem name and its separator ("NET/Socket : ", "NET/IB: ", "Bootstrap : ")
// or a message NCCL prints at every init.
bool OpensLikeNcclMessage(std::string_view m) {
  std::string_view u = m;
  if (ConsumePrefix(&u, "NET/")) {
    size_t i = 0;
    while (i < u.size() && IsWordChar(u[i])) ++i;
    if (i == 0) return false;
    u.remove_prefix(i);
    ConsumePrefix(&u, " ");
    return StartsWith(u, ":");
  }
  if (ConsumePrefix(&u, "Bootstrap")) {
    ConsumePrefix(&u, " ");
    return StartsWith(u, ":");
  }
  if (ConsumePrefix(&u, "Channel ") || ConsumePrefix(&u, "Ring ")) {
    return u.size() >= 2 && IsDigit(u[0]) && IsDigit(u[1]);
  }
  if (ConsumePrefix(&u, "NCCL_")) {
    // "NCCL_SOCKET_IFNAME set by environment to eth0"
    size_t i = 0;
    while (i < u.size() && (IsWordChar(u[i]) && !(u[i] >= 'a' && u[i] <= 'z'))) ++i;
    return i > 0 && StartsWith(u.substr(i), " set ");
  }
  static const std::string_view kOpenings[] = {
      "Using network ", "cudaDriverVersion ", "Connected all rings", "Connected all trees", "comm 0x", "Trees ["};
  for (std::string_view o : kOpenings) {
    if (StartsWith(m, o)) return true;
  }
  return false;
}

// One list item "[N]name…" at the front of *s: its index in *index.
bool ConsumeListItem(std::string_view* s, int* index) {
  std::string_view u = *s;
  if (!ConsumePrefix(&u, "[")) return false;
  int64_t v;
  if (ConsumeIntBelow(&u, 1 << 16, &v) != IntParse::kOk || !ConsumePrefix(&u, "]")) return false;
  size_t i = 0;
  while (i < u.size() && !IsBlank(u[i]) && u[i] != '[' && u[i] != ';') ++i;
  if (i == 0) return false;
  *index = static_cast<int>(v);
  *s = u.substr(i);
  return true;
}

// Items from `next` on, blank-separated, to the end of `s` or a "; OOB" tail.
// Returns the index after the last, -2 when the tail closed the list, or -1
// when something else is there.
int ScanItems(std::string_view s, int next) {
  while (true) {
    while (!s.empty() && IsBlank(s[0])) s.remove_prefix(1);
    if (s.empty()) return next;
    if (s[0] == ';') return -2;
    int index;
    if (!ConsumeListItem(&s, &index) || index != next) return -1;
    ++next;
    if (!s.empty() && !IsBlank(s[0]) && s[0] != ';') return -1;
  }
}

}  // namespace

bool ParseChannelConnection(std::string_view m, ChannelConnection* c) {
  std::string_view u = m;
  SkipChannelPrefix(&u);
  int from = -1, to = -1;
  Num a = ConsumeRank(&u, &from);
  if (a == Num::kNone || !ConsumeDevSuffix(&u) || !ConsumePrefix(&u, " -> ")) return false;
  Num b = ConsumeRank(&u, &to);
  if (b == Num::kNone || !ConsumeDevSuffix(&u)) return false;
  bool receive = false;
  if (ConsumePrefix(&u, " [receive]")) {
    receive = true;
  } else {
    ConsumePrefix(&u, " [send]");
  }
  if (!ConsumePrefix(&u, " via ") || u.empty() || IsBlank(u[0])) return false;
  *c = ChannelConnection();
  if (a == Num::kTooBig || b == Num::kTooBig) {
    c->out_of_range = true;
    return true;
  }
  c->from = from;
  c->to = to;
  c->logged_by = receive ? to : from;
  return true;
}

bool ParseHeaderlessNccl(ParsedLine* line) {
  std::string_view t = line->text;
  NcclLevel level = NcclLevel::kNone;
  std::string_view m = t;
  if (ConsumePrefix(&m, "INFO ")) {
    level = NcclLevel::kInfo;
  } else if (ConsumePrefix(&m, "WARN ")) {
    level = NcclLevel::kWarn;
  }
  ChannelConnection conn;
  const bool is_conn = ParseChannelConnection(m, &conn);
  if (level == NcclLevel::kNone) {
    // Without a level word only the connection shape is distinctive enough:
    // "Using network IB" alone could be any program's sentence.
    if (!is_conn) return false;
    level = NcclLevel::kInfo;
  } else if (!is_conn && !OpensLikeNcclMessage(m)) {
    return false;
  }
  line->family = Family::kNccl;
  line->level = level;
  line->message = m;
  if (is_conn) {
    if (conn.out_of_range) line->bad_number = true;
    if (conn.logged_by >= 0 && line->rank_hint < 0) {
      line->rank_hint = conn.logged_by;
      line->rank_hint_is_label = false;
    }
  }
  return true;
}

int OpenInterfaceList(std::string_view message) {
  std::string_view u = message;
  if (ConsumePrefix(&u, "NET/")) {
    size_t i = 0;
    while (i < u.size() && IsWordChar(u[i])) ++i;
    if (i == 0) return -1;
    u.remove_prefix(i);
  } else if (!ConsumePrefix(&u, "Bootstrap")) {
    return -1;
  }
  ConsumePrefix(&u, " ");
  if (!ConsumePrefix(&u, ": Using")) return -1;
  if (!u.empty() && !IsBlank(u[0])) return -1;  // "Using2" is no list
  int next = ScanItems(u, 0);
  return next >= 0 ? next : -1;
}

bool ContinuesInterfaceList(std::string_view text, int next, int* following) {
  if (next < 0) return false;
  std::string_view t = TrimSpace(text);
  // The first item must be there: a line of blanks or a bare "; OOB" is not
  // recognisably the list's.
  int first;
  std::string_view probe = t;
  if (!ConsumeListItem(&probe, &first) || first != next) return false;
  int r = ScanItems(t, next);
  if (r == -1) return false;
  *following = r >= 0 ? r : -1;
  return true;
}

bool IsInterfaceListItems(std::string_view text) {
  std::string_view t = TrimSpace(text);
  std::string_view probe = t;
  int first, following;
  return ConsumeListItem(&probe, &first) && ContinuesInterfaceList(t, first, &following);
}

}  // namespace ncclscan
