// RuleSet: the compiled, immutable rule set (pass 3 of the loader).
//
// Matching a line is: one pass over the line for the key atoms of every rule
// (LiteralMatcher), the rules keyed on the atoms found become candidates, then
// full RE2 with captures runs on candidates of the line's family only. A key
// atom is the longest literal that RE2's prefilter analysis (FilteredRE2) proves
// every match contains, so one atom per rule suffices and ordinary lines touch
// few or no candidates.
//
// Thread-safety: immutable after the loader builds it; Match() is const and may
// be called from many threads, each with its own MatchScratch.
#ifndef NCCLSCAN_RULES_RULE_SET_H_
#define NCCLSCAN_RULES_RULE_SET_H_

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parsers/parsed_line.h"
#include "parsers/text_util.h"
#include "rules/engine_contract.h"
#include "rules/literal_matcher.h"
#include "rules/rule.h"
#include "rules/template.h"

namespace ncclscan {

inline constexpr int kMaxCaptures = 15;

// Identity slots a rule may fill (see docs/rules.md "Identity").
enum IdentitySlot {
  kIdComm,
  kIdCommId,
  kIdRank,
  kIdNranks,
  kIdEvent,
  kIdAddress,
  kIdGlobalRank,
  kIdHost,
  kIdPid,
  kIdResult,
  kIdRankHint,
  kNumIdSlots
};
const char* IdentitySlotName(int slot);

struct CompiledLookup {
  std::string name;
  int from_capture = -1;
  int from_remembered = -1;  // or the slot of a remembered value (RuleSet::remembered())
  std::map<std::string, std::string, std::less<>> map;
  Template default_value;
};

struct CompiledFact {
  int fact = -1;  // index into RuleSet::facts()
  Template key;   // keyed facts only
  Template value;
  std::vector<Template> fields;  // "{f}" for each of FactSpec::fields
};

struct CompiledRule {
  LineRule spec;
  std::shared_ptr<const RE2> re;
  std::vector<std::string> key_atoms;  // prefilter: one of these occurs in every match
  // Tests before the regex, on the text it reads: each gate is atoms (ASCII,
  // lower case, none a key atom) one of which occurs in every match; none
  // when the key atoms alone may admit a match.
  std::vector<std::vector<std::string>> gate_atoms;
  int num_captures = 0;
  std::vector<std::string> capture_names;  // [i] = name of group i (1-based; [0] empty)
  // The literal every match of `re` starts with (PatternAtoms::match_prefix),
  // when it has captures and one of 3+ bytes: the regex then runs anchored at
  // each place the literal occurs (RE2 takes the captures from a known start,
  // measured 2-3x faster than an unanchored search) and gives the same,
  // leftmost match.
  std::optional<LiteralFinder> match_prefix;
  std::vector<CompiledFact> facts;
  Template identity[kNumIdSlots];
  bool has_identity = false;
  std::vector<CompiledLookup> lookups;
  Template explanation;
  Template remediation;
  // `fields` rules: the search for each field's anchor, or none when the
  // field shares the previous field's anchor (same position).
  std::vector<std::optional<LiteralFinder>> field_finders;
  int subject_capture = -1;           // group "rank" (capture), "pid" (process) or "pci" (device)
  int subject_host = -1;              // process/device: the group named "host", if any
  int subject_pid = -1;               // device: the group named "pid", if any
  std::vector<std::string> group_by;  // variable names
  // Only sets facts merged first/last/max/min/count, from the line's own
  // process: a run of its matches can be folded to one update per fact entry
  // before the serial stage (see the scanner).
  bool foldable = false;
  // `level:` as masks: bit (1 << NcclLevel) of NCCL lines, and c10 severities
  // (bit 0: `headerless`, lines with neither, e.g. PyTorch's "Last error:" copy).
  uint32_t nccl_levels = 0;
  uint32_t c10_severities = 0;  // bit (1 << SeverityBit(c))
  bool has_finding = false;

  // Whether the rule's `level:` admits the line (no `level:` admits every line).
  bool LevelAdmits(const ParsedLine& line) const { return AdmitsLevel(nccl_levels, c10_severities, line); }
  static bool AdmitsLevel(uint32_t nccl, uint32_t c10, const ParsedLine& line) {
    if (nccl == 0 && c10 == 0) return true;
    if (line.level != NcclLevel::kNone) return (nccl >> static_cast<int>(line.level)) & 1u;
    return (c10 >> SeverityBit(line.severity)) & 1u;  // SeverityBit(0) == 0: headerless
  }
  // Whether NCCL INFO lines (the bulk of a log) can reach the rule: its family
  // and its `level:` both admit them.
  bool AdmitsNcclInfo() const {
    if (!spec.any_family && spec.family != Family::kNccl) return false;
    return (nccl_levels == 0 && c10_severities == 0) || ((nccl_levels >> static_cast<int>(NcclLevel::kInfo)) & 1u);
  }
  // c10 severity letters E F W I V as bit positions (0 for anything else).
  static int SeverityBit(char c) {
    switch (c) {
      case 'E':
        return 1;
      case 'F':
        return 2;
      case 'W':
        return 3;
      case 'I':
        return 4;
      case 'V':
        return 5;
    }
    return 0;
  }

  int CaptureIndex(std::string_view name) const;

  // `remember:` (LineRule::remember): the slot (RuleSet::remembered()) each
  // value goes to, and its template.
  std::vector<std::pair<int, Template>> remember;
  // Remembered names this rule's templates may read that are none of its own
  // captures or lookups, with their slots.
  std::vector<std::pair<std::string, int>> reads_remembered;
};

// The template variables of one match: captures by name, then the rule's
// lookups derived from them. Used wherever a match's templates are rendered.
struct MatchVars {
  const CompiledRule& r;
  const re2::StringPiece* groups;
  int num_groups;
  // The input file's remembered values by slot (JobState), or none: then a
  // remembered name reads "".
  const std::vector<std::string>* remembered = nullptr;

  std::string_view Group(int i) const {
    if (i <= 0 || i >= num_groups || groups[i].data() == nullptr) return {};
    return std::string_view(groups[i].data(), groups[i].size());
  }
  // Appends variable `name` to *out (the Template::RenderTo lookup).
  void operator()(const std::string& name, std::string* out) const {
    for (const CompiledLookup& lk : r.lookups) {
      if (lk.name != name) continue;
      std::string_view from = Group(lk.from_capture);
      if (lk.from_remembered >= 0 && remembered && lk.from_remembered < static_cast<int>(remembered->size()))
        from = (*remembered)[lk.from_remembered];
      auto it = lk.map.find(from);
      if (it != lk.map.end())
        out->append(it->second);
      else
        lk.default_value.RenderTo(out, *this);
      return;
    }
    const int g = r.CaptureIndex(name);
    if (g <= 0 && remembered) {
      for (const auto& [n, slot] : r.reads_remembered) {
        if (n == name && slot < static_cast<int>(remembered->size())) {
          out->append((*remembered)[slot]);
          return;
        }
      }
    }
    std::string_view c = Group(g);
    out->append(c.data(), c.size());
  }
  // Renders t; a template that is one plain capture is returned as a view of it.
  std::string_view Render(const Template& t, std::string* buf) const {
    if (t.single_capture() > 0) return Group(t.single_capture());
    buf->clear();
    // Parts bound to a capture at load are appended directly: a COLL line's
    // fact value is rendered on every line of a traced job.
    for (const Template::Part& p : t.parts()) {
      if (!p.is_var) {
        buf->append(p.text);
      } else if (p.capture > 0) {
        std::string_view g = Group(p.capture);
        buf->append(g.data(), g.size());
      } else {
        (*this)(p.text, buf);
      }
    }
    return *buf;
  }
};

struct CompiledCorrelation {
  CorrelationRule spec;
  int fact = -1;
  int present = -1;
  int absent = -1;
  std::vector<int> require;  // extreme: any of these facts (empty: no requirement)
  int population = -1;
  std::vector<int> where_facts;
  Template explanation;
  Template remediation;
};

// Per-thread scratch for Match(); reused across lines so matching allocates nothing.
struct MatchScratch {
  std::vector<int> atoms;
  std::vector<uint8_t> seen;
  std::vector<int> candidates;
  std::vector<uint8_t> rule_seen;
  re2::StringPiece groups[kMaxCaptures + 1];
};

// A rule of an earlier layer (the built-in rules) that a later rule file
// redefined, or a rule turned off (`enabled: false`, a file's `disable:`,
// --disable): reports list them, so a site file cannot hide a finding silently.
struct RuleChange {
  std::string id;
  std::string change;  // "overridden" or "disabled"
  std::string where;   // "file:line" of the redefinition or the disable, "--disable"
};

class RuleSet {
 public:
  RuleSet();
  ~RuleSet();

  const std::vector<FactSpec>& facts() const { return facts_; }
  const std::vector<CompiledRule>& rules() const { return rules_; }
  const std::vector<CompiledCorrelation>& correlations() const { return correlations_; }
  int FindFact(std::string_view name) const;
  // The index of a fact the engine reads (rules/engine_contract.h), resolved
  // at load: -1 only for a rule set built without the built-in rules (tests).
  int fact(Fact f) const { return engine_facts_[static_cast<size_t>(f)]; }
  const CompiledRule* FindRule(std::string_view id) const;
  const CompiledCorrelation* FindCorrelation(std::string_view id) const;
  // Rules and correlations turned off (`enabled: false`, `disable:`, --disable):
  // loaded and checked, never matched or run; kept for listing and explain.
  const std::vector<CompiledRule>& disabled_rules() const { return disabled_rules_; }
  const std::vector<CompiledCorrelation>& disabled_correlations() const { return disabled_correlations_; }
  // Overrides and disables, sorted by id (empty with the built-in rules alone).
  const std::vector<RuleChange>& changes() const { return changes_; }
  // Every name a rule's `remember:` sets, sorted: slot i is remembered()[i].
  const std::vector<std::string>& remembered() const { return remembered_; }
  // The prefilter over every rule's key atoms (exposed for benchmarks and tests).
  const LiteralMatcher& matcher() const { return matcher_; }
  // The part of a line the prefilter searches: the message of NCCL / c10 lines
  // (their headers are a fifth of the bytes and carry no rule's literal; the
  // loader's sample check guarantees no rule depends on a header literal),
  // the whole text otherwise.
  static std::string_view PrefilterText(const ParsedLine& line) { return Headered(line) ? line.message : line.text; }

  static bool Headered(const ParsedLine& line) { return line.family == Family::kNccl || line.family == Family::kTorch; }

  // Calls on_match(rule_index, groups, num_groups) for every rule matching line;
  // groups[0] is the whole match, groups[i] the i-th capture (empty if unset).
  //
  // Fallback rules (`fallback: true`) are tried last, and only when no rule
  // with a finding matched: a line no specific rule knows still diagnoses.
  template <typename F>
  void Match(const ParsedLine& line, MatchScratch* ms, F&& on_match) const {
    if (line.binary) return;
    ms->atoms.clear();
    // NCCL INFO lines are most of a log: they get a prefilter over just the
    // rules that can match them (most WARN-message rules say `level:`).
    const bool info = line.family == Family::kNccl && line.level == NcclLevel::kInfo;
    const bool headered = Headered(line);
    const auto& atom_rules = info ? info_atom_rules_ : atom_rules_;
    (info ? info_matcher_ : matcher_).FindAll(PrefilterText(line), &ms->atoms, &ms->seen);
    bool found = false;  // a rule with a finding matched
    auto try_rule = [&](int idx) {
      const CompiledRule& r = rules_[idx];
      if (!r.spec.any_family && r.spec.family != line.family) return;
      if (!r.LevelAdmits(line)) return;
      re2::StringPiece input = (r.spec.any_family || line.family == Family::kElastic || line.family == Family::kOther)
                                   ? re2::StringPiece(line.text.data(), line.text.size())
                                   : re2::StringPiece(line.message.data(), line.message.size());
      if (!r.gate_atoms.empty() && !PassesGate(r, input)) return;
      if (r.re) {
        if (!MatchRegex(r, input, ms->groups)) return;
      } else if (!ExtractFields(r, std::string_view(input.data(), input.size()), ms->groups)) {
        return;
      }
      found |= r.has_finding;
      on_match(idx, ms->groups, r.num_captures + 1);
    };
    auto try_fallbacks = [&] {
      if (found || fallback_rules_.empty() || !MayFallBack(line)) return;
      for (size_t k = 0; k < fallback_rules_.size(); ++k) {
        int idx = fallback_rules_[k];
        if (FallbackGated(k, info, headered, ms->atoms)) continue;
        try_rule(idx);
        if (found) return;  // the first catch-all that matches speaks for the line
      }
    };
    if (ms->atoms.empty()) {
      try_fallbacks();
      return;
    }
    // Most matching lines have one atom that keys one rule (a COLL line).
    if (ms->atoms.size() == 1 && atom_rules[ms->atoms[0]].size() == 1) {
      try_rule(atom_rules[ms->atoms[0]][0]);
      try_fallbacks();
      return;
    }
    // Every rule has one required "key" atom (or, rarely, a set of which one
    // must occur): rules whose key atoms are absent cannot match.
    ms->candidates.clear();
    ms->rule_seen.resize(rules_.size());
    for (int a : ms->atoms) {
      for (int idx : atom_rules[a]) {
        if (!ms->rule_seen[idx]) {
          ms->rule_seen[idx] = 1;
          ms->candidates.push_back(idx);
        }
      }
    }
    for (int idx : ms->candidates) ms->rule_seen[idx] = 0;
    if (ms->candidates.size() > 1) std::sort(ms->candidates.begin(), ms->candidates.end());
    for (int idx : ms->candidates) try_rule(idx);
    try_fallbacks();
  }

  const std::vector<int>& fallback_rules() const { return fallback_rules_; }

  // A hash of every rule file's name and text (built-in and --rules), so a
  // diagnosis says exactly which rules made it.
  const std::string& content_hash() const { return content_hash_; }
  void set_content_hash(std::string h) { content_hash_ = std::move(h); }

 private:
  // Out of line, like FallbackGated: Match is inlined into the scanner's loop.
  static bool PassesGate(const CompiledRule& r, re2::StringPiece input);
  // Whether fallback rule k is kept off a line whose prefilter found `atoms`.
  bool FallbackGated(size_t k, bool info, bool headered, const std::vector<int>& atoms) const;
  // Cheap test before any fallback rule: the line's level is one some fallback admits.
  bool MayFallBack(const ParsedLine& line) const {
    return (fallback_nccl_levels_ | fallback_c10_severities_) != 0 &&
           CompiledRule::AdmitsLevel(fallback_nccl_levels_, fallback_c10_severities_, line);
  }
  friend class RuleLoader;
  // (Re)builds the prefilter and the fallback list over rules_ (by key_atoms).
  void IndexRules();
  // `fields` rules: every anchor must occur; groups[i] is the token next to anchor i.
  static bool ExtractFields(const CompiledRule& r, std::string_view text, re2::StringPiece* groups);
  // r.re's leftmost match in input and its groups (see CompiledRule::match_prefix).
  static bool MatchRegex(const CompiledRule& r, re2::StringPiece input, re2::StringPiece* groups) {
    const int n = r.num_captures + 1;
    if (!r.match_prefix) return r.re->Match(input, 0, input.size(), RE2::UNANCHORED, groups, n);
    const std::string_view text(input.data(), input.size());
    for (size_t at = r.match_prefix->Find(text); at != std::string_view::npos;
         at = r.match_prefix->Find(text, at + 1)) {
      if (r.re->Match(input, at, input.size(), RE2::ANCHOR_START, groups, n)) return true;
    }
    return false;
  }
  std::vector<FactSpec> facts_;
  std::map<std::string, int, std::less<>> fact_index_;
  std::array<int, kNumEngineFacts> engine_facts_ = MissingEngineFacts();
  static constexpr std::array<int, kNumEngineFacts> MissingEngineFacts() {
    std::array<int, kNumEngineFacts> a{};
    for (int& v : a) v = -1;
    return a;
  }
  std::vector<CompiledRule> rules_;  // index = FilteredRE2 regexp id
  std::vector<CompiledCorrelation> correlations_;
  std::vector<CompiledRule> disabled_rules_;
  std::vector<CompiledCorrelation> disabled_correlations_;
  std::vector<RuleChange> changes_;
  std::vector<std::string> remembered_;
  LiteralMatcher matcher_;
  std::vector<std::vector<int>> atom_rules_;  // matcher atom id -> rules keyed on it
  LiteralMatcher info_matcher_;               // the same over rules that admit NCCL INFO lines
  std::vector<std::vector<int>> info_atom_rules_;
  std::vector<int> fallback_rules_;  // in rule order
  // Per fallback rule: its key atoms' ids in matcher_ and info_matcher_ (an
  // atom no regular rule keys on maps to no rule there).
  std::vector<std::vector<int>> fallback_atoms_;
  std::vector<std::vector<int>> fallback_info_atoms_;
  std::string content_hash_;
  uint32_t fallback_nccl_levels_ = 0;  // union of the fallback rules' masks
  uint32_t fallback_c10_severities_ = 0;
};

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_RULE_SET_H_
