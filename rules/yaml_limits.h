// YamlLimits: what a YAML text would make the loader build, measured on the
// parser's events before any node exists. User rule files are input like logs:
// an alias (*name) reuses its anchored value without copying it, but every
// reader of the tree (and any copy of a scalar) pays for it again at each use,
// so "a 1 MB value aliased 20,000 times" is a 1 MB file that costs 20 GB. The
// events give the position of the alias or the nesting that crosses a limit;
// the tree would only give the anchor's.
//
// Thread-safety: a free function over its arguments.
#ifndef NCCLSCAN_RULES_YAML_LIMITS_H_
#define NCCLSCAN_RULES_YAML_LIMITS_H_

#include <cstddef>
#include <string>

#include "rules/rule.h"

namespace ncclscan {

struct YamlLimits {
  // The built-in rule files are far below each: the largest is under 100 KiB,
  // under 3,000 nodes, and 7 levels deep (tests/rule_limits_test.cc keeps them below an eighth).
  size_t max_bytes = size_t{4} << 20;          // the file itself (E-FILE-TOO-BIG)
  int max_depth = 64;                          // nested mappings / sequences (E-YAML-TOO-DEEP)
  size_t max_nodes = size_t{1} << 20;          // nodes, each alias counting its whole value (E-YAML-TOO-LARGE)
  size_t max_scalar_bytes = size_t{16} << 20;  // scalar text, likewise (E-YAML-TOO-LARGE)
};

struct YamlLimitError {
  SourcePos pos;  // line and column 0 when the whole file is meant
  std::string code;
  std::string message;
  std::string help;
};

// Checks every document of `text` (named `name` in positions) against `limits`.
// Returns false and fills *err on the first limit crossed. YAML syntax errors
// are not reported here (true is returned): the parse that follows reports them.
bool WithinYamlLimits(const std::string& name, const std::string& text, const YamlLimits& limits, YamlLimitError* err);

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_YAML_LIMITS_H_
