// Library versions as logs print them, and the version ranges a rule's known
// issues name (`affected: ">=2.19.1,<2.21.5"`, `fixed_in: "2.21.5"`).
//
// A version is its leading dotted numbers: "2.21.5+cuda12.4" is 2.21.5,
// PyTorch's "2.6.0a0+ecf3bae40a.nv25.01" is 2.6.0 (a pre-release counts as its
// release: logs rarely say which nightly, and a range is written in releases).
// Missing parts are 0, so "<2.19" is "<2.19.0".
//
// Thread-safety: plain value types and pure functions.
#ifndef NCCLSCAN_RULES_VERSION_RANGE_H_
#define NCCLSCAN_RULES_VERSION_RANGE_H_

#include <string>
#include <string_view>
#include <vector>

namespace ncclscan {

struct Version {
  std::vector<int> parts;  // empty: not a version
  bool ok() const { return !parts.empty(); }
  std::string ToString() const;
};

// The leading "N(.N)*" of `text` (at most 4 parts); false (and an empty
// version) when `text` does not start with a digit.
bool ParseVersion(std::string_view text, Version* out);
// Whole-string version: digits and dots only ("2.21.5", not "2.21.5+cuda").
bool ParseExactVersion(std::string_view text, Version* out);
// <0, 0, >0 as a is older, the same, newer than b (missing parts are 0).
int CompareVersions(const Version& a, const Version& b);

// A conjunction of comparisons, written "OP VERSION" and joined by ',':
// ">=2.19.1,<2.21.5", "<2.19", "==2.18.3". OP is one of >= > <= < == (a bare
// version means ==; "==2.19" is every 2.19.x). "*" is every release (a
// mechanism of the environment or of usage, not of one release). The empty
// range contains nothing.
class VersionRange {
 public:
  enum class Op { kGe, kGt, kLe, kLt, kEq };
  struct Bound {
    Op op;
    Version version;
  };

  // Parses `text`; on failure returns false, with *error saying what is wrong
  // and *offset the byte of `text` it is about.
  bool Parse(std::string_view text, std::string* error, size_t* offset);
  bool Contains(const Version& v) const;
  bool empty() const { return bounds_.empty() && !every_; }
  bool every() const { return every_; }
  const std::string& text() const { return text_; }
  const std::vector<Bound>& bounds() const { return bounds_; }

 private:
  bool ParseBounds(std::string_view text, std::string* error, size_t* offset);
  std::vector<Bound> bounds_;
  bool every_ = false;
  std::string text_;
};

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_VERSION_RANGE_H_
