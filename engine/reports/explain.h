// `ncclscan explain RULE-ID`: what a rule or correlation is, in words — where
// it is defined, what it matches and sets, its finding, sample lines, its
// references and known issues (with the releases they affect).
//
// Thread-safety: pure function of the rule set.
#ifndef NCCLSCAN_ENGINE_REPORTS_EXPLAIN_H_
#define NCCLSCAN_ENGINE_REPORTS_EXPLAIN_H_

#include <string>

#include "rules/rule_set.h"

namespace ncclscan {

// Appends the explanation of rule or correlation `id` (enabled or turned off)
// to *text; false, with *text unchanged, when no rule has that id. The text
// holds rule-file text as written: escape it before a terminal sees it.
bool RenderExplain(const RuleSet& rules, const std::string& id, std::string* text);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_REPORTS_EXPLAIN_H_
