#include "rules/rule_set.h"

#include "parsers/text_util.h"

namespace ncclscan {

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
    case Severity::kCritical:
      return "critical";
  }
  return "info";
}

bool ParseSeverity(const std::string& s, Severity* out) {
  if (s == "info")
    *out = Severity::kInfo;
  else if (s == "warning")
    *out = Severity::kWarning;
  else if (s == "error")
    *out = Severity::kError;
  else if (s == "critical")
    *out = Severity::kCritical;
  else
    return false;
  return true;
}

const char* RoleName(Role r) {
  switch (r) {
    case Role::kRoot:
      return "root";
    case Role::kCascade:
      return "cascade";
    case Role::kContext:
      return "context";
  }
  return "root";
}

bool ParseRole(const std::string& s, Role* out) {
  if (s == "root")
    *out = Role::kRoot;
  else if (s == "cascade")
    *out = Role::kCascade;
  else if (s == "context")
    *out = Role::kContext;
  else
    return false;
  return true;
}

bool ParseMergeMode(const std::string& s, MergeMode* out) {
  if (s == "first")
    *out = MergeMode::kFirst;
  else if (s == "last")
    *out = MergeMode::kLast;
  else if (s == "set")
    *out = MergeMode::kSet;
  else if (s == "max")
    *out = MergeMode::kMax;
  else if (s == "min")
    *out = MergeMode::kMin;
  else if (s == "count")
    *out = MergeMode::kCount;
  else
    return false;
  return true;
}

const char* IdentitySlotName(int slot) {
  static const char* kNames[kNumIdSlots] = {"comm",        "comm_id", "rank", "nranks", "event",    "address",
                                            "global_rank", "host",    "pid",  "result", "rank_hint"};
  return kNames[slot];
}

int CompiledRule::CaptureIndex(std::string_view name) const {
  for (size_t i = 1; i < capture_names.size(); ++i) {
    if (capture_names[i] == name) return static_cast<int>(i);
  }
  return -1;
}

RuleSet::RuleSet() = default;
RuleSet::~RuleSet() = default;

int RuleSet::FindFact(std::string_view name) const {
  auto it = fact_index_.find(name);
  return it == fact_index_.end() ? -1 : it->second;
}

const CompiledRule* RuleSet::FindRule(std::string_view id) const {
  for (const auto& r : rules_)
    if (r.spec.id.value == id) return &r;
  return nullptr;
}

void RuleSet::IndexRules() {
  matcher_ = LiteralMatcher();
  info_matcher_ = LiteralMatcher();
  atom_rules_.clear();
  info_atom_rules_.clear();
  fallback_rules_.clear();
  fallback_atoms_.clear();
  fallback_info_atoms_.clear();
  fallback_nccl_levels_ = fallback_c10_severities_ = 0;
  std::map<std::string, int, std::less<>> atom_id, info_atom_id;
  // Registers atom a (once) and returns its id; rule >= 0 is keyed on it.
  auto add = [](LiteralMatcher* m, std::map<std::string, int, std::less<>>* ids, std::vector<std::vector<int>>* rules,
                const std::string& a, int rule) {
    auto it = ids->find(a);
    if (it == ids->end()) {
      it = ids->emplace(a, m->Add(a)).first;
      rules->emplace_back();
    }
    if (rule >= 0) (*rules)[it->second].push_back(rule);
    return it->second;
  };
  for (size_t i = 0; i < rules_.size(); ++i) {
    const CompiledRule& cr = rules_[i];
    if (cr.spec.fallback) {
      fallback_rules_.push_back(static_cast<int>(i));
      fallback_nccl_levels_ |= cr.nccl_levels;
      fallback_c10_severities_ |= cr.c10_severities;
      // Its key atoms gate it without making it a candidate of a line.
      fallback_atoms_.emplace_back();
      fallback_info_atoms_.emplace_back();
      for (const auto& a : cr.key_atoms) {
        fallback_atoms_.back().push_back(add(&matcher_, &atom_id, &atom_rules_, a, -1));
        if (cr.AdmitsNcclInfo()) {
          fallback_info_atoms_.back().push_back(add(&info_matcher_, &info_atom_id, &info_atom_rules_, a, -1));
        }
      }
      continue;
    }
    for (const auto& a : cr.key_atoms) {
      add(&matcher_, &atom_id, &atom_rules_, a, static_cast<int>(i));
      if (cr.AdmitsNcclInfo()) add(&info_matcher_, &info_atom_id, &info_atom_rules_, a, static_cast<int>(i));
    }
  }
  matcher_.Build();
  info_matcher_.Build();
}

bool RuleSet::PassesGate(const CompiledRule& r, re2::StringPiece input) {
  std::string_view text(input.data(), input.size());
  for (const auto& gate : r.gate_atoms) {
    if (std::none_of(gate.begin(), gate.end(), [&](const std::string& a) { return MayContainFolded(text, a); })) {
      return false;
    }
  }
  return true;
}

bool RuleSet::FallbackGated(size_t k, bool info, bool headered, const std::vector<int>& atoms) const {
  // A catch-all with a literal (an Xid of no known number) is tried only where
  // the prefilter saw one of its key atoms, when the prefilter searched the
  // text its pattern reads (a rule of any family reads an NCCL or c10 line's
  // header too, which the prefilter skips).
  const CompiledRule& r = rules_[fallback_rules_[k]];
  if (r.key_atoms.empty() || (r.spec.any_family && headered)) return false;
  const std::vector<int>& gate = (info ? fallback_info_atoms_ : fallback_atoms_)[k];
  return std::none_of(gate.begin(), gate.end(),
                      [&](int a) { return std::find(atoms.begin(), atoms.end(), a) != atoms.end(); });
}

bool RuleSet::ExtractFields(const CompiledRule& r, std::string_view text, re2::StringPiece* groups) {
  groups[0] = re2::StringPiece(text.data(), text.size());
  // Fields are found in order: each anchor is searched from the previous one.
  size_t pos = 0;
  for (size_t i = 0; i < r.spec.fields.size(); ++i) {
    const LineRule::Field& f = r.spec.fields[i];
    if (r.field_finders[i]) {
      pos = r.field_finders[i]->Find(text, pos);
      if (pos == std::string_view::npos) return false;
    }
    size_t b, e;
    // The token is the run of non-blank bytes next to the anchor.
    if (f.before) {
      e = pos;
      b = TokenBegin(text, e);
    } else {
      b = pos + f.anchor.value.size();
      e = BlankAt(text, b);
    }
    if (b >= e) return false;  // an anchor with no token next to it
    groups[i + 1] = re2::StringPiece(text.data() + b, e - b);
  }
  return true;
}

const CompiledCorrelation* RuleSet::FindCorrelation(std::string_view id) const {
  for (const auto& c : correlations_)
    if (c.spec.id.value == id) return &c;
  return nullptr;
}

}  // namespace ncclscan
