#include "parsers/flight_recorder.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>

#include "parsers/flight_recorder_internal.h"
#include "parsers/pickle.h"
#include "parsers/text_util.h"

namespace ncclscan {

namespace {

std::string_view SkipBlanks(std::string_view s) {
  if (StartsWith(s, "\xef\xbb\xbf")) s.remove_prefix(3);
  size_t k = s.find_first_not_of(" \t\r\n");
  return k == std::string_view::npos ? std::string_view() : s.substr(k);
}

// A JSON key in the head: the quoted name followed (after blanks) by ':',
// and not inside a string (an escaped quote before it would be).
bool HasJsonKey(std::string_view head, std::string_view quoted) {
  for (size_t at = head.find(quoted); at != std::string_view::npos; at = head.find(quoted, at + 1)) {
    if (at > 0 && head[at - 1] == '\\') continue;
    std::string_view rest = SkipBlanks(head.substr(at + quoted.size()));
    if (!rest.empty() && rest[0] == ':') return true;
  }
  return false;
}

// The JSON form, converted to the same value tree (strings view the parser's
// buffer, which outlives the mapping). Recursion is bounded by kMaxPickleDepth.
bool JsonToTree(simdjson::dom::element e, int depth, PyTree* t, uint32_t* out, std::string* err) {
  if (depth > static_cast<int>(kMaxPickleDepth)) {
    *err = "JSON too deeply nested (more than " + std::to_string(kMaxPickleDepth) + " levels)";
    return false;
  }
  uint32_t v = PyTree::kNoValue;
  switch (e.type()) {
    case simdjson::dom::element_type::ARRAY: {
      v = t->AddContainer(PyKind::kList);
      if (v == PyTree::kNoValue) break;
      simdjson::dom::array arr;
      if (e.get_array().get(arr) != simdjson::SUCCESS) break;
      for (simdjson::dom::element x : arr) {
        uint32_t c;
        if (!JsonToTree(x, depth + 1, t, &c, err)) return false;
        if (!t->Append(v, c)) {
          v = PyTree::kNoValue;
          break;
        }
      }
      break;
    }
    case simdjson::dom::element_type::OBJECT: {
      v = t->AddContainer(PyKind::kDict);
      if (v == PyTree::kNoValue) break;
      simdjson::dom::object obj;
      if (e.get_object().get(obj) != simdjson::SUCCESS) break;
      for (simdjson::dom::key_value_pair kv : obj) {
        uint32_t k = t->AddStr(kv.key), c;
        if (k == PyTree::kNoValue) {
          v = k;
          break;
        }
        if (!JsonToTree(kv.value, depth + 1, t, &c, err)) return false;
        if (!t->Append(v, k) || !t->Append(v, c)) {
          v = PyTree::kNoValue;
          break;
        }
      }
      break;
    }
    case simdjson::dom::element_type::INT64: {
      int64_t i = 0;
      if (e.get(i) != simdjson::SUCCESS) break;
      v = t->AddInt(i);
      break;
    }
    case simdjson::dom::element_type::UINT64: {
      uint64_t u = 0;
      if (e.get(u) != simdjson::SUCCESS) break;
      v = t->AddFloat(static_cast<double>(u));
      break;
    }
    case simdjson::dom::element_type::DOUBLE: {
      double d = 0;
      if (e.get(d) != simdjson::SUCCESS) break;
      v = t->AddFloat(d);
      break;
    }
    case simdjson::dom::element_type::STRING: {
      std::string_view s;
      if (e.get(s) != simdjson::SUCCESS) break;
      v = t->AddStr(s);
      break;
    }
    case simdjson::dom::element_type::BOOL: {
      bool b = false;
      if (e.get(b) != simdjson::SUCCESS) break;
      v = t->AddBool(b);
      break;
    }
    case simdjson::dom::element_type::NULL_VALUE:
      v = t->AddNone();
      break;
  }
  if (v == PyTree::kNoValue) {
    *err = "JSON too large: more than " + std::to_string(kMaxPickleTreeBytes >> 20) + " MiB of values";
    return false;
  }
  *out = v;
  return true;
}

}  // namespace

bool LooksLikePickle(std::string_view head) {
  return head.size() >= 2 && static_cast<uint8_t>(head[0]) == 0x80 && head[1] >= 2 && head[1] <= 5;
}

bool LooksLikeFlightRecorder(std::string_view head) {
  if (LooksLikePickle(head)) {
    std::string_view rest = head.substr(2);
    if (!rest.empty() && static_cast<uint8_t>(rest[0]) == 0x95) rest = rest.substr(std::min<size_t>(9, rest.size()));
    // A dict, or PyTorch's type tag around one.
    return StartsWith(rest, "}") || StartsWith(rest, "ctorch.jit._pickle\n");
  }
  std::string_view t = SkipBlanks(head);
  if (t.empty() || t[0] != '{') return false;
  // docker json-file lines are objects too; they carry "log" on the first line.
  std::string_view first_line = t.substr(0, t.find('\n'));
  if (first_line.find("\"log\":") != std::string_view::npos) return false;
  return HasJsonKey(t, "\"pg_config\"") || HasJsonKey(t, "\"pg_status\"") ||
         (HasJsonKey(t, "\"entries\"") && HasJsonKey(t, "\"version\""));
}

bool ParseFlightRecorder(std::string_view bytes, FrDump* out, std::string* err) {
  *out = FrDump();
  if (bytes.size() > kMaxFlightRecorderBytes) {
    *err = "Flight Recorder dump too large: " + std::to_string(bytes.size()) + " bytes (the limit is " +
           std::to_string(kMaxFlightRecorderBytes >> 20) + " MiB)";
    return false;
  }
  PyTree tree;
  if (LooksLikePickle(bytes)) {
    if (!ParsePickle(bytes, &tree, err)) return false;
    return MapFlightRecorder(tree, out, err);
  }
  std::string_view t = SkipBlanks(bytes);
  if (t.empty() || t[0] != '{') {
    *err = "not a Flight Recorder dump: neither a pickle (protocol 2 or later) nor a JSON object";
    return false;
  }
  simdjson::dom::parser parser;
  simdjson::padded_string padded(t.data(), t.size());
  simdjson::dom::element root;
  if (auto e = parser.parse(padded).get(root); e != simdjson::SUCCESS) {
    *err = std::string("invalid JSON: ") + simdjson::error_message(e);
    return false;
  }
  uint32_t r;
  if (!JsonToTree(root, 0, &tree, &r, err)) return false;
  tree.set_root(r);
  return MapFlightRecorder(tree, out, err);
}

uint64_t HoldFlightRecorder(std::vector<FrFile>* dumps, size_t* held, FrFile f) {
  std::vector<FrEntry>& e = f.dump.entries;
  uint64_t dropped = f.dump.entries_dropped;
  f.dump.entries_dropped = 0;
  const size_t keep = *held >= kMaxFrEntriesHeld ? kFrEntriesPastBound : kMaxFrEntriesPerDump;
  if (e.size() > keep) {
    dropped += e.size() - keep;
    e.erase(e.begin(), e.end() - static_cast<std::ptrdiff_t>(keep));
    e.shrink_to_fit();
  }
  *held += e.size();
  dumps->push_back(std::move(f));
  return dropped;
}

int RankFromDumpName(std::string_view path) {
  size_t slash = path.find_last_of('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  // Up to two extensions that start with a letter (".json", ".pkl", ".json.gz"):
  // "nccl_trace_rank_3.pkl" is rank 3, but the digits of ".1" are the rank.
  for (int i = 0; i < 2; ++i) {
    size_t dot = base.find_last_of('.');
    if (dot == std::string_view::npos || dot + 1 >= base.size() || !IsAlpha(base[dot + 1])) break;
    base = base.substr(0, dot);
  }
  size_t k = base.size();
  while (k > 0 && IsDigit(base[k - 1])) --k;
  std::string_view digits = base.substr(k);
  // More digits than any rank has is a date or a pid, not a rank.
  if (digits.empty() || digits.size() > 7) return -1;
  int r = 0;
  for (char c : digits) r = r * 10 + (c - '0');
  return r;
}

}  // namespace ncclscan
