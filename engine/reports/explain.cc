#include "engine/reports/explain.h"

#include <ostream>
#include <sstream>

namespace ncclscan {

namespace {

// explain's "see:" lines (plain references) and "known:" lines (known issues,
// with the releases they affect and the one that fixes them).
void ExplainReferences(const std::vector<std::string>& refs, const std::vector<KnownIssue>& issues, std::ostream& out) {
  for (const auto& ref : refs) {
    bool known = false;
    for (const auto& k : issues) known |= k.url.value == ref;
    if (!known) out << "  see:       " << ref << "\n";
  }
  for (const auto& k : issues) {
    const std::string lib = k.component == "torch" ? "PyTorch" : "NCCL";
    out << "  known:     " << k.title << " (" << k.url.value << "): ";
    if (k.affected_range.every()) {
      out << "every " << lib << " release";
    } else {
      if (!k.affected_range.empty()) out << lib << " " << k.affected_range.text() << ", ";
      out << (k.fixed_in.value.empty() ? "not fixed in any release" : "fixed in " + lib + " " + k.fixed_in.value);
    }
    if (k.affected_only) out << "; fires only where the log's " << lib << " is affected (or unknown)";
    out << "\n";
  }
}

}  // namespace

bool RenderExplain(const RuleSet& rules, const std::string& id, std::string* text) {
  std::ostringstream out;
  const CompiledRule* r = rules.FindRule(id);
  const CompiledCorrelation* c = rules.FindCorrelation(id);
  const bool off = !r && !c;  // turned off by `enabled: false` or `disable:`
  for (const auto& d : rules.disabled_rules()) {
    if (off && d.spec.id.value == id) r = &d;
  }
  for (const auto& d : rules.disabled_correlations()) {
    if (off && d.spec.id.value == id) c = &d;
  }
  if (r) {
    const LineRule& s = r->spec;
    out << s.id.value << ": " << s.title << "\n";
    out << "  kind:      line rule (family " << s.family_name.value << "), category " << CategoryName(s.category)
        << "\n";
    out << "  defined:   " << s.id.pos.file << ":" << s.id.pos.line << "\n";
    if (off) out << "  enabled:   no (enabled: false, or named by a rule file's disable: list)\n";
    if (s.fields.empty()) out << "  pattern:   " << s.pattern.value << "\n";
    for (const auto& f : s.fields) {
      out << "  field:     " << f.name << " = token " << (f.before ? "before" : "after") << " '" << f.anchor.value
          << "'\n";
    }
    out << "  prefilter:";
    for (const auto& a : r->key_atoms) out << " '" << a << "'";
    for (const auto& gate : r->gate_atoms) {
      out << ", then one of";
      for (const auto& a : gate) out << " '" << a << "'";
    }
    out << "\n";
    for (const auto& f : s.facts) {
      out << "  sets fact: " << f.fact.value << (f.key.value.empty() ? "" : "[" + f.key.value + "]") << " = "
          << f.value.value << "\n";
    }
    if (s.finding.present) {
      out << "  finding:   " << SeverityName(s.finding.severity) << ", " << RoleName(s.finding.role) << ", confidence "
          << s.finding.confidence << "\n";
      out << "  why:       " << s.finding.explanation.value << "\n";
      if (!s.finding.remediation.value.empty()) out << "  fix:       " << s.finding.remediation.value << "\n";
      for (const auto& e : s.finding.explains) out << "  explains:  " << e.value << "\n";
    }
    for (const auto& ex : s.match) out << "  matches:   " << ex.line.value << "\n";
    for (const auto& ex : s.no_match) out << "  not:       " << ex.line.value << "\n";
    ExplainReferences(s.references, s.known_issues, out);
  } else if (c) {
    const CorrelationRule& s = c->spec;
    out << s.id.value << ": " << s.title << "\n";
    out << "  kind:      correlation (" << KindName(s.kind) << "), category " << CategoryName(s.category) << "\n";
    out << "  defined:   " << s.id.pos.file << ":" << s.id.pos.line << "\n";
    if (off) out << "  enabled:   no (enabled: false, or named by a rule file's disable: list)\n";
    if (!s.fact.value.empty())
      out << "  fact:      " << s.fact.value << " over " << (s.over == Over::kHost ? "host" : "rank") << "\n";
    out << "  finding:   " << SeverityName(s.finding.severity) << ", " << RoleName(s.finding.role) << ", confidence "
        << s.finding.confidence << "\n";
    out << "  why:       " << s.finding.explanation.value << "\n";
    if (!s.finding.remediation.value.empty()) out << "  fix:       " << s.finding.remediation.value << "\n";
    for (const auto& e : s.finding.explains) out << "  explains:  " << e.value << "\n";
    ExplainReferences(s.references, s.known_issues, out);
  } else {
    return false;
  }
  *text += out.str();
  return true;
}

}  // namespace ncclscan
