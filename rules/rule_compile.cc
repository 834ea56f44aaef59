// Pass 2's compilation of each rule and correlation (RuleLoader::Validate,
// rule_loader.cc): patterns, captures, lookups, facts, identity, templates,
// levels; the facts each correlation kind reads.
#include <algorithm>
#include <set>
#include <sstream>

#include "parsers/line_parser.h"
#include "parsers/text_util.h"
#include "rules/engine_contract.h"
#include "rules/rule_loader_internal.h"

namespace ncclscan {

// Column of `fragment` inside the pattern value, to place the caret.
SourcePos PatternPos(const Located<std::string>& pattern, const std::string& fragment,
                     const std::map<std::string, std::string>& sources) {
  SourcePos p = pattern.pos;
  if (fragment.empty()) return p;
  size_t off = pattern.value.find(fragment);
  if (off == std::string::npos) return p;
  // The scalar may be quoted in the source; find the fragment on that line.
  auto it = sources.find(p.file);
  if (it != sources.end() && p.line > 0) {
    std::istringstream in(it->second);
    std::string line;
    for (int i = 0; i < p.line && std::getline(in, line); ++i) {
    }
    size_t col = line.find(fragment, p.col > 0 ? p.col - 1 : 0);
    if (col != std::string::npos) {
      p.col = static_cast<int>(col) + 1;
      return p;
    }
  }
  p.col += static_cast<int>(off);
  return p;
}

// Pass 2: the typed structs checked against each other (ids, facts, templates,
// regexes, references) and compiled into `rs`; every problem is recorded; the
// ids turned off (enabled: false, disable:, --disable) go to *off_out.
void RuleLoader::CheckTemplate(const Located<std::string>& src, const std::set<std::string>& vars, Template* out,
                               const std::string& what) {
  Impl& im = *impl_;
  std::string err;
  size_t col = 0;
  if (!Template::Parse(src.value, out, &err, &col)) {
    SourcePos p = PatternPos(src, src.value.substr(col, 1), sources_);
    im.Error(p, "E-TEMPLATE", what + ": " + err);
    return;
  }
  for (const auto& part : out->parts()) {
    if (part.is_var && !vars.count(part.text) && !vars.count("*")) {
      std::string list;
      for (const auto& v : vars) list += (list.empty() ? "" : ", ") + v;
      im.Error(PatternPos(src, "{" + part.text + "}", sources_), "E-TEMPLATE",
               what + ": unknown variable '{" + part.text + "}'", "known here: " + list);
    }
  }
}

namespace {

// Single-capture templates read their group directly (a lookup of the same
// name wins over a capture, as in MatchVars).
void BindCaptures(const CompiledRule& cr, Template* t) {
  auto capture_of = [&cr](const std::string& name) {
    for (const CompiledLookup& lk : cr.lookups) {
      if (lk.name == name) return -1;
    }
    return cr.CaptureIndex(name);
  };
  if (t->IsSingleVar()) {
    t->set_single_capture(capture_of(t->parts()[0].text));
    return;
  }
  for (size_t i = 0; i < t->parts().size(); ++i) {
    if (t->parts()[i].is_var) t->set_part_capture(i, capture_of(t->parts()[i].text));
  }
}

// Drops from cr->reads_remembered the remembered names none of the rule's
// templates, group_by or lookups name: a finding then keeps only the values
// its text reads, and a rule that reads none can still fold.
void KeepRememberedInUse(CompiledRule* cr) {
  if (cr->reads_remembered.empty()) return;
  std::set<std::string> used(cr->group_by.begin(), cr->group_by.end());
  auto note = [&used](const Template& t) {
    for (const auto& part : t.parts()) {
      if (part.is_var) used.insert(part.text);
    }
  };
  for (const CompiledFact& cf : cr->facts) {
    note(cf.key);
    note(cf.value);
    for (const Template& t : cf.fields) note(t);
  }
  for (const Template& t : cr->identity) note(t);
  for (const CompiledLookup& lk : cr->lookups) {
    note(lk.default_value);
    for (const auto& [name, slot] : cr->reads_remembered) {
      if (slot == lk.from_remembered) used.insert(name);
    }
  }
  for (const auto& rt : cr->remember) note(rt.second);
  note(cr->explanation);
  note(cr->remediation);
  auto& rr = cr->reads_remembered;
  rr.erase(std::remove_if(rr.begin(), rr.end(), [&used](const auto& x) { return !used.count(x.first); }), rr.end());
}

}  // namespace

// One line rule compiled: its family, regex (compiled by the caller, on two
// threads), lookups, facts, identity, subject, finding, levels. The steps run
// in this order as each reads what the ones before it compiled, and the
// diagnostics come out in it.
void RuleLoader::CompileRule(RuleSet* rs, const LineRule* lr, const std::shared_ptr<const RE2>& compiled) {
  CompiledRule cr;
  cr.spec = *lr;
  LineRule& r = cr.spec;
  CompileFamily(&r);
  const RE2& re = *compiled;
  // The variables templates may name: captures, then lookups.
  std::set<std::string> vars = CompileCaptures(compiled, &cr);
  // Then what the file's earlier lines remembered (a capture or lookup of the
  // same name wins), the lookups, and what this line remembers for the lines after it.
  for (size_t slot = 0; slot < rs->remembered_.size(); ++slot) {
    const std::string& name = rs->remembered_[slot];
    if (vars.insert(name).second) cr.reads_remembered.emplace_back(name, static_cast<int>(slot));
  }
  CompileLookups(re, &cr, &vars);
  for (const auto& [name, tmpl] : r.remember) {
    const auto it = std::lower_bound(rs->remembered_.begin(), rs->remembered_.end(), name.value);
    Template t;
    CheckTemplate(tmpl, vars, &t, "remember '" + name.value + "'");
    cr.remember.emplace_back(static_cast<int>(it - rs->remembered_.begin()), std::move(t));
  }
  CompileFacts(*rs, vars, &cr);
  CompileIdentity(vars, &cr);
  CompileSubjectAndFinding(re, vars, &cr);
  for (CompiledFact& cf : cr.facts) {
    BindCaptures(cr, &cf.key);
    BindCaptures(cr, &cf.value);
    for (Template& t : cf.fields) BindCaptures(cr, &t);
  }
  for (Template& t : cr.identity) BindCaptures(cr, &t);
  for (auto& rt : cr.remember) BindCaptures(cr, &rt.second);
  CompileLevels(&cr);
  cr.has_finding = r.finding.present;
  CheckFallback(r);
  KeepRememberedInUse(&cr);
  // (Folded runs are rendered before the serial stage, where no file's
  // remembered values are known.)
  cr.foldable = !cr.facts.empty() && !cr.has_identity && !r.finding.present && r.subject == SubjectMode::kLine &&
                cr.remember.empty() && cr.reads_remembered.empty();
  for (const CompiledFact& cf : cr.facts) {
    if (rs->facts()[cf.fact].merge == MergeMode::kSet) cr.foldable = false;
  }
  rs->rules_.push_back(std::move(cr));
}

void RuleLoader::CompileFamily(LineRule* r) {
  if (r->family_name.value == "nccl")
    r->family = Family::kNccl;
  else if (r->family_name.value == "torch")
    r->family = Family::kTorch;
  else if (r->family_name.value == "elastic")
    r->family = Family::kElastic;
  else if (r->family_name.value == "any")
    r->any_family = true;
  else if (!r->family_name.value.empty()) {
    impl_->Error(r->family_name.pos, "E-BAD-VALUE", "unknown family '" + r->family_name.value + "'",
                 "use one of: nccl, torch, elastic, any");
  }
}

// The rule's captures: its fields (literal anchors, no regex) or its regex's
// groups, which must compile and stay small. Returns their names.
std::set<std::string> RuleLoader::CompileCaptures(const std::shared_ptr<const RE2>& compiled, CompiledRule* cr) {
  Impl& im = *impl_;
  const LineRule& r = cr->spec;
  const RE2& re = *compiled;
  if (r.fields.empty() && re.ok()) cr->re = compiled;
  std::set<std::string> vars;
  if (!r.fields.empty()) {
    cr->num_captures = static_cast<int>(r.fields.size());
    cr->capture_names.assign(1, "");
    for (size_t i = 0; i < r.fields.size(); ++i) {
      const auto& f = r.fields[i];
      cr->capture_names.push_back(f.name);
      vars.insert(f.name);
      // A field whose anchor is the previous field's reuses its position.
      bool reuse = i > 0 && r.fields[i - 1].anchor.value == f.anchor.value;
      cr->field_finders.push_back(reuse ? std::nullopt : std::optional<LiteralFinder>(f.anchor.value));
    }
    if (cr->num_captures > kMaxCaptures) im.Error(r.pattern.pos, "E-BAD-VALUE", "at most 15 fields");
  } else if (!re.ok()) {
    vars.insert("*");  // captures unknown: do not report every template variable too
    bool too_big = re.error_code() == RE2::ErrorPatternTooLarge;
    im.Error(PatternPos(r.pattern, re.error_arg(), sources_), too_big ? "E-REGEX-TOO-BIG" : "E-BAD-REGEX",
             (too_big ? "regex too large: " : "invalid regex: ") + re.error(),
             too_big ? "split the rule or simplify the pattern; RE2's program size is bounded" : "");
  } else if (re.ProgramSize() > kMaxProgramSize) {
    vars.insert("*");
    im.Error(r.pattern.pos, "E-REGEX-TOO-BIG",
             "regex too large: compiled program has " + std::to_string(re.ProgramSize()) + " instructions, at most " +
                 std::to_string(kMaxProgramSize),
             "split the rule or simplify the pattern (large counted repetitions expand)");
  } else {
    cr->num_captures = re.NumberOfCapturingGroups();
    if (cr->num_captures > kMaxCaptures) {
      im.Error(r.pattern.pos, "E-BAD-REGEX",
               "pattern has " + std::to_string(cr->num_captures) + " capture groups; at most " +
                   std::to_string(kMaxCaptures));
    }
    cr->capture_names.assign(cr->num_captures + 1, "");
    for (const auto& kv : re.NamedCapturingGroups()) {
      if (kv.second <= cr->num_captures) cr->capture_names[kv.second] = kv.first;
      vars.insert(kv.first);
    }
  }
  return vars;
}

// Lookups read a capture (or a remembered value); each adds its name to *vars.
void RuleLoader::CompileLookups(const RE2& re, CompiledRule* cr, std::set<std::string>* vars) {
  const LineRule& r = cr->spec;
  std::set<std::string> lookup_vars = *vars;  // captures, then each lookup once defined
  for (const Lookup& lk : r.lookups) {
    CompiledLookup cl;
    cl.name = lk.name;
    cl.from_capture = cr->CaptureIndex(lk.from.value);
    for (const auto& rr : cr->reads_remembered) {
      if (cl.from_capture < 0 && rr.first == lk.from.value) cl.from_remembered = rr.second;
    }
    if (cl.from_capture < 0 && cl.from_remembered < 0 && re.ok()) {
      impl_->Error(lk.from.pos, "E-TEMPLATE", "lookup '" + lk.name + "' reads unknown capture '" + lk.from.value + "'");
    }
    for (const auto& kv : lk.map) cl.map[kv.first] = kv.second;
    // A default may name captures and lookups defined above it, never itself or
    // a later one: a cycle would recurse forever while rendering.
    Located<std::string> def{lk.default_value, lk.from.pos};
    CheckTemplate(def, lookup_vars, &cl.default_value, "lookup '" + lk.name + "' default");
    lookup_vars.insert(lk.name);
    cr->lookups.push_back(std::move(cl));
  }
  for (const Lookup& lk : r.lookups) vars->insert(lk.name);
}

void RuleLoader::CompileFacts(const RuleSet& rs, const std::set<std::string>& vars, CompiledRule* cr) {
  Impl& im = *impl_;
  for (const FactAssign& fa : cr->spec.facts) {
    CompiledFact cf;
    cf.fact = rs.FindFact(fa.fact.value);
    if (cf.fact < 0) {
      im.Error(fa.fact.pos, "E-UNKNOWN-FACT", "unknown fact '" + fa.fact.value + "'",
               "declare it under 'facts:' in a rule file (docs/rules.md §1)");
      continue;
    }
    const FactSpec& fs = rs.facts()[cf.fact];
    if (fs.keyed != !fa.key.value.empty()) {
      im.Error(fa.fact.pos, "E-BAD-VALUE",
               fs.keyed ? "fact '" + fs.name.value + "' is keyed: write " + fs.name.value + "[{capture}]"
                        : "fact '" + fs.name.value + "' is not keyed");
      continue;
    }
    if (fs.keyed) CheckTemplate(fa.key, vars, &cf.key, "fact key");
    CheckTemplate(fa.value, vars, &cf.value, "fact value");
    for (const std::string& field : fs.fields) {
      if (!vars.count(field)) {
        im.Error(fa.fact.pos, "E-FACT-FIELD",
                 "fact '" + fs.name.value + "' carries the field '" + field +
                     "', and this rule has no capture or lookup '" + field + "'",
                 "name a capture (?P<" + field + ">...) in the pattern, or set another fact");
        continue;
      }
      Template t;
      std::string err;
      size_t col = 0;
      Template::Parse("{" + field + "}", &t, &err, &col);
      cf.fields.push_back(std::move(t));
    }
    cr->facts.push_back(std::move(cf));
  }
}

void RuleLoader::CompileIdentity(const std::set<std::string>& vars, CompiledRule* cr) {
  for (const auto& kv : cr->spec.identity) {
    for (int s = 0; s < kNumIdSlots; ++s) {
      if (kv.first != IdentitySlotName(s)) continue;
      CheckTemplate(kv.second, vars, &cr->identity[s], "identity " + kv.first);
      cr->has_identity = true;
      // A literal event must be one the engine acts on (engine/state/job_state.cc).
      if (s == kIdEvent && !cr->identity[s].parts().empty()) {
        std::string literal;
        bool is_literal = true;
        for (const auto& part : cr->identity[s].parts()) {
          if (part.is_var) is_literal = false;
          literal += part.text;
        }
        if (is_literal && !IsEngineEvent(literal)) {
          std::string known;
          for (auto e : EngineEvents()) known += (known.empty() ? "" : ", ") + std::string(e);
          impl_->Error(kv.second.pos, "E-ENGINE-EVENT", "identity event '" + literal + "' is not one the engine knows",
                       "use one of: " + known);
        }
      }
    }
  }
}

// The subject's capture, the finding's templates and grouping; a rule with
// no finding must set facts or an identity.
void RuleLoader::CompileSubjectAndFinding(const RE2& re, const std::set<std::string>& vars, CompiledRule* cr) {
  Impl& im = *impl_;
  const LineRule& r = cr->spec;
  if (r.subject == SubjectMode::kCapture || r.subject == SubjectMode::kProcess || r.subject == SubjectMode::kDevice) {
    const char* group = r.subject == SubjectMode::kCapture   ? "rank"
                        : r.subject == SubjectMode::kProcess ? "pid"
                                                             : "pci";
    cr->subject_capture = cr->CaptureIndex(group);
    if (cr->subject_capture < 0 && re.ok()) {
      im.Error(r.pattern.pos, "E-TEMPLATE",
               std::string("subject: ") +
                   (r.subject == SubjectMode::kCapture   ? "capture"
                    : r.subject == SubjectMode::kProcess ? "process"
                                                         : "device") +
                   " needs a capture group named '" + group + "'");
    }
    if (r.subject != SubjectMode::kCapture) cr->subject_host = cr->CaptureIndex("host");
    if (r.subject == SubjectMode::kDevice) cr->subject_pid = cr->CaptureIndex("pid");
  }
  if (r.subject == SubjectMode::kHost) {
    cr->subject_host = cr->CaptureIndex("host");
    if (cr->subject_host < 0 && re.ok()) {
      im.Error(r.pattern.pos, "E-TEMPLATE", "subject: host needs a capture group named 'host'");
    }
  }
  if (r.finding.present) {
    std::set<std::string> fvars = vars;
    fvars.insert({"ranks", "hosts", "count"});
    CheckTemplate(r.finding.explanation, fvars, &cr->explanation, "explanation");
    CheckTemplate(r.finding.remediation, fvars, &cr->remediation, "remediation");
    for (const auto& g : r.finding.group_by) {
      if (!vars.count(g.value)) im.Error(g.pos, "E-TEMPLATE", "group_by names unknown variable '" + g.value + "'");
      cr->group_by.push_back(g.value);
    }
    for (const KnownIssue& k : r.known_issues) {
      if (!k.when.value.empty() && r.finding.group_by.empty()) {
        im.Error(k.when.pos, "E-BAD-VALUE", "known issue " + k.url.value + " has 'when' but the rule has no group_by",
                 "'when' selects the findings one of whose group_by values it matches; without group_by there is one");
      }
    }
  } else if (cr->facts.empty() && !cr->has_identity && r.remember.empty()) {
    im.Error(r.id.pos, "E-MISSING-KEY",
             "rule " + r.id.value + " sets no facts, no identity, remembers nothing and has no finding",
             "a rule must produce something");
  }
}

// `level:` into the masks of NCCL levels and c10 severities the rule admits.
void RuleLoader::CompileLevels(CompiledRule* cr) {
  for (const auto& lv : cr->spec.levels) {
    static const std::pair<const char*, NcclLevel> kNcclLevels[] = {
        {"INFO", NcclLevel::kInfo}, {"WARN", NcclLevel::kWarn},   {"TRACE", NcclLevel::kTrace},
        {"CALL", NcclLevel::kCall}, {"ABORT", NcclLevel::kAbort}, {"VERSION", NcclLevel::kVersion}};
    bool known = false;
    for (const auto& nl : kNcclLevels) {
      if (lv.value == nl.first) {
        cr->nccl_levels |= 1u << static_cast<int>(nl.second);
        known = true;
      }
    }
    if (lv.value.size() == 1 && CompiledRule::SeverityBit(lv.value[0]) > 0) {
      cr->c10_severities |= 1u << CompiledRule::SeverityBit(lv.value[0]);
      known = true;
    }
    if (lv.value == "headerless") {  // neither an NCCL level nor a c10 severity
      cr->c10_severities |= 1u;
      known = true;
    }
    if (lv.value == "non-nccl") {  // every line that is not an NCCL line: c10 ones and headerless
      cr->c10_severities |= 0x3fu;
      known = true;
    }
    if (!known) {
      impl_->Error(lv.pos, "E-BAD-VALUE", "unknown level '" + lv.value + "'",
                   "NCCL levels INFO WARN TRACE CALL ABORT VERSION, c10 severities E F W I V, headerless or non-nccl");
    }
  }
}

void RuleLoader::CheckFallback(const LineRule& r) {
  if (!r.fallback) return;
  if (r.levels.empty()) {
    impl_->Error(r.fallback_pos, "E-MISSING-KEY", "fallback rule " + r.id.value + " needs a 'level'",
                 "a catch-all runs its regex on every line it admits: name the levels (e.g. level: [WARN])");
  }
  if (!r.finding.present) {
    impl_->Error(r.fallback_pos, "E-MISSING-KEY", "fallback rule " + r.id.value + " needs a 'finding'");
  }
}

void RuleLoader::CheckExplains(const FindingSpec& f, const std::set<std::string>& all_ids) {
  for (const auto& e : f.explains) {
    if (!all_ids.count(e.value)) impl_->Error(e.pos, "E-UNKNOWN-RULE", "explains unknown rule '" + e.value + "'");
  }
}

// One correlation compiled: the facts its kind reads, its texts' variables.
void RuleLoader::CompileCorrelation(RuleSet* rs, const CorrelationRule* c, const std::set<std::string>& all_ids) {
  Impl& im = *impl_;
  const RE2::Options opts = RegexOptions();
  CompiledCorrelation cc;
  cc.spec = *c;
  // Required keys are checked by the reader (rules/vocabulary.cc's table).
  auto need_fact = [&](const Located<std::string>& f) -> int {
    if (f.value.empty()) return -1;
    int idx = rs->FindFact(f.value);
    if (idx < 0) im.Error(f.pos, "E-UNKNOWN-FACT", "unknown fact '" + f.value + "'");
    return idx;
  };
  std::set<std::string> vars = {"ranks", "hosts", "count"};
  if (c->kind != CorrelationKind::kCount) {
    for (const auto& v : KindInfo(c->kind).vars) vars.insert(std::string(v));
  }
  switch (c->kind) {
    case CorrelationKind::kConsensus:
      cc.fact = need_fact(c->fact);
      cc.population = need_fact(c->population);
      break;
    case CorrelationKind::kCondition:
      if (c->where.empty()) im.Error(c->id.pos, "E-MISSING-KEY", "condition correlation needs 'where'");
      for (const auto& w : c->where) {
        int f = need_fact(w.fact);
        cc.where_facts.push_back(f);
        const FactSpec* fs = f >= 0 ? &rs->facts()[f] : nullptr;
        if (fs && fs->keyed && w.key.value.empty()) {
          im.Error(w.fact.pos, "E-BAD-VALUE", "fact '" + w.fact.value + "' is keyed: name the key",
                   "write fact: " + w.fact.value + "[KEY], e.g. env[NCCL_IB_TIMEOUT]");
        } else if (fs && !fs->keyed && !w.key.value.empty()) {
          im.Error(w.fact.pos, "E-BAD-VALUE", "fact '" + w.fact.value + "' is not keyed: write fact: " + w.fact.value);
        }
        // A set holds several values: which one would be compared is unclear.
        if (fs && fs->merge == MergeMode::kSet && IsNumericOp(w.op)) {
          im.Error(w.value.pos, "E-BAD-VALUE",
                   "'" + std::string(OpName(w.op)) + "' compares numbers, but fact '" + w.fact.value +
                       "' (merge: set) holds a set of values",
                   "use matches, equals or exists on a set");
        }
        if (w.op == ConditionOp::kMatches) {
          RE2 re(w.value.value, opts);
          if (!re.ok()) im.Error(w.fact.pos, "E-BAD-REGEX", "invalid regex in 'matches': " + re.error());
        }
      }
      break;
    case CorrelationKind::kAbsence:
      cc.present = need_fact(c->present);
      cc.absent = need_fact(c->absent);
      break;
    case CorrelationKind::kExtreme:
      cc.fact = need_fact(c->fact);
      for (const auto& r : c->require) cc.require.push_back(need_fact(r));
      break;
    case CorrelationKind::kFirstInTime:
    case CorrelationKind::kPeerMap:
      cc.fact = need_fact(c->fact);
      break;
    case CorrelationKind::kMissingRanks:
    case CorrelationKind::kCollective:
    case CorrelationKind::kCount:  // an unknown kind: reported by the reader
      break;
  }
  if (c->finding.present) {
    CheckTemplate(c->finding.explanation, vars, &cc.explanation, "explanation");
    CheckTemplate(c->finding.remediation, vars, &cc.remediation, "remediation");
  }
  CheckExplains(c->finding, all_ids);
  rs->correlations_.push_back(std::move(cc));
}

}  // namespace ncclscan
