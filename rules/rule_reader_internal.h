// Internal to rules/: what the reader's files (rule_reader.cc: scalars,
// findings, references, correlations, facts, documents; rule_reader_rule.cc:
// line rules) share: RuleReader::ForEachKey, a template both instantiate.
//
// Thread-safety: as RuleReader (one thread).
#ifndef NCCLSCAN_RULES_RULE_READER_INTERNAL_H_
#define NCCLSCAN_RULES_RULE_READER_INTERNAL_H_

#include <set>
#include <string>

#include "rules/rule_reader.h"

namespace ncclscan {

template <typename F>
bool RuleReader::ForEachKey(const RuleNode& n, const std::string& what, const std::set<std::string>& allowed, F&& fn) {
  if (!n.IsMap()) {
    Error(Pos(n), "E-BAD-VALUE", what + " must be a mapping");
    return false;
  }
  for (auto it = n.entries().begin(); it != n.entries().end(); ++it) {
    if (!it->first.IsScalar()) {
      Error(Pos(it->first), "E-BAD-VALUE", "keys must be strings");
      continue;
    }
    const std::string key = it->first.Scalar();
    if (!allowed.empty() && !allowed.count(key)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      Error(Pos(it->first), "E-UNKNOWN-KEY", "unknown key '" + key + "' in " + what, "allowed keys: " + list);
      continue;
    }
    fn(key, it->first, it->second);
  }
  return true;
}

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_RULE_READER_INTERNAL_H_
