#include "rules/version_range.h"

#include <algorithm>

namespace ncclscan {

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Reads "N(.N)*" from s[*i]; stops before anything else. At most 4 parts, each
// at most 6 digits (no release has more; longer is a typo, not a version).
bool ReadParts(std::string_view s, size_t* i, std::vector<int>* parts) {
  parts->clear();
  while (*i < s.size() && IsDigit(s[*i])) {
    int v = 0, digits = 0;
    while (*i < s.size() && IsDigit(s[*i])) {
      if (++digits > 6) return false;
      v = v * 10 + (s[*i] - '0');
      ++*i;
    }
    parts->push_back(v);
    if (parts->size() > 4) return false;
    if (*i + 1 < s.size() && s[*i] == '.' && IsDigit(s[*i + 1])) {
      ++*i;
    } else {
      break;
    }
  }
  return !parts->empty();
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// "==2.19" is every 2.19.x: equality compares the parts the bound writes.
bool SamePrefix(const Version& v, const Version& bound) {
  for (size_t i = 0; i < bound.parts.size(); ++i) {
    if ((i < v.parts.size() ? v.parts[i] : 0) != bound.parts[i]) return false;
  }
  return true;
}

}  // namespace

std::string Version::ToString() const {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? "." : "") + std::to_string(parts[i]);
  return out;
}

bool ParseVersion(std::string_view text, Version* out) {
  size_t i = 0;
  if (!ReadParts(text, &i, &out->parts)) {
    out->parts.clear();
    return false;
  }
  return true;
}

bool ParseExactVersion(std::string_view text, Version* out) {
  size_t i = 0;
  if (!ReadParts(text, &i, &out->parts) || i != text.size()) {
    out->parts.clear();
    return false;
  }
  return true;
}

int CompareVersions(const Version& a, const Version& b) {
  const size_t n = std::max(a.parts.size(), b.parts.size());
  for (size_t i = 0; i < n; ++i) {
    const int x = i < a.parts.size() ? a.parts[i] : 0;
    const int y = i < b.parts.size() ? b.parts[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

bool VersionRange::Parse(std::string_view text, std::string* error, size_t* offset) {
  text_ = std::string(Trim(text));
  if (!ParseBounds(text, error, offset)) {
    bounds_.clear();  // a half-read range must not be judged against
    every_ = false;
    return false;
  }
  return true;
}

bool VersionRange::ParseBounds(std::string_view text, std::string* error, size_t* offset) {
  bounds_.clear();
  every_ = Trim(text) == "*";
  if (every_) return true;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string_view part =
        text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    size_t lead = 0;
    while (lead < part.size() && part[lead] == ' ') ++lead;
    std::string_view t = Trim(part);
    *offset = start + lead;
    if (t.empty()) {
      *error = text.empty() ? "empty version range" : "empty comparison in version range";
      return false;
    }
    Bound b{Op::kEq, {}};
    size_t i = 0;
    if (t.substr(0, 2) == ">=")
      b.op = Op::kGe, i = 2;
    else if (t.substr(0, 2) == "<=")
      b.op = Op::kLe, i = 2;
    else if (t.substr(0, 2) == "==")
      b.op = Op::kEq, i = 2;
    else if (t[0] == '>')
      b.op = Op::kGt, i = 1;
    else if (t[0] == '<')
      b.op = Op::kLt, i = 1;
    else if (t[0] == '=' || t[0] == '!' || t[0] == '~' || t[0] == '^') {
      *error = "unknown comparison '" + std::string(t.substr(0, t.find_first_of("0123456789"))) + "'";
      return false;
    }
    while (i < t.size() && t[i] == ' ') ++i;
    *offset = start + lead + i;
    if (!ParseExactVersion(t.substr(i), &b.version)) {
      *error = "'" + std::string(t.substr(i)) + "' is not a version (N.N.N)";
      return false;
    }
    bounds_.push_back(std::move(b));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return true;
}

bool VersionRange::Contains(const Version& v) const {
  if (every_) return v.ok();
  if (bounds_.empty() || !v.ok()) return false;
  for (const Bound& b : bounds_) {
    const int c = CompareVersions(v, b.version);
    bool ok = false;
    switch (b.op) {
      case Op::kGe:
        ok = c >= 0;
        break;
      case Op::kGt:
        ok = c > 0;
        break;
      case Op::kLe:
        ok = c <= 0;
        break;
      case Op::kLt:
        ok = c < 0;
        break;
      case Op::kEq:
        ok = SamePrefix(v, b.version);
        break;
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace ncclscan
