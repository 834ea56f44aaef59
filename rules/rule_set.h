// RuleSet: the compiled, immutable rule set (pass 3 of the loader).
//
// Matching a line is: one Aho-Corasick pass over the line for the prefilter
// atoms of every rule (LiteralMatcher), FilteredRE2 to turn present atoms into
// candidate rules, then full RE2 with captures on candidates of the line's
// family only. Lines without atoms cost one table walk and nothing else.
//
// Thread-safety: immutable after the loader builds it; Match() is const and may
// be called from many threads, each with its own MatchScratch.
#ifndef NCCLSCAN_RULES_RULE_SET_H_
#define NCCLSCAN_RULES_RULE_SET_H_

#include <re2/filtered_re2.h>
#include <re2/re2.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "parsers/parsed_line.h"
#include "rules/literal_matcher.h"
#include "rules/rule.h"
#include "rules/template.h"

namespace ncclscan {

inline constexpr int kMaxCaptures = 15;

// Identity slots a rule may fill (see docs/rules.md "Identity").
enum IdentitySlot { kIdComm, kIdCommId, kIdRank, kIdNranks, kIdEvent, kIdAddress, kIdGlobalRank, kNumIdSlots };
const char* IdentitySlotName(int slot);

struct CompiledLookup {
  std::string name;
  int from_capture = -1;
  std::map<std::string, std::string, std::less<>> map;
  Template default_value;
};

struct CompiledFact {
  int fact = -1;  // index into RuleSet::facts()
  Template key;   // keyed facts only
  Template value;
};

struct CompiledRule {
  LineRule spec;
  const RE2* re = nullptr;  // owned by the FilteredRE2
  int num_captures = 0;
  std::vector<std::string> capture_names;  // [i] = name of group i (1-based; [0] empty)
  std::vector<CompiledFact> facts;
  Template identity[kNumIdSlots];
  bool has_identity = false;
  std::vector<CompiledLookup> lookups;
  Template explanation;
  Template remediation;
  int subject_capture = -1;          // group named "rank" when subject: capture
  std::vector<std::string> group_by; // variable names

  int CaptureIndex(std::string_view name) const;
};

struct CompiledCorrelation {
  CorrelationRule spec;
  int fact = -1;
  int present = -1;
  int absent = -1;
  int require = -1;
  std::vector<int> where_facts;
  Template explanation;
  Template remediation;
};

// Per-thread scratch for Match(); reused across lines so matching allocates nothing.
struct MatchScratch {
  std::vector<int> atoms;
  std::vector<uint8_t> seen;
  std::vector<int> potentials;
  re2::StringPiece groups[kMaxCaptures + 1];
};

class RuleSet {
 public:
  RuleSet();
  ~RuleSet();

  const std::vector<FactSpec>& facts() const { return facts_; }
  const std::vector<CompiledRule>& rules() const { return rules_; }
  const std::vector<CompiledCorrelation>& correlations() const { return correlations_; }
  int FindFact(std::string_view name) const;
  const CompiledRule* FindRule(std::string_view id) const;
  const CompiledCorrelation* FindCorrelation(std::string_view id) const;

  // Calls on_match(rule_index, groups, num_groups) for every rule matching line;
  // groups[0] is the whole match, groups[i] the i-th capture (empty if unset).
  template <typename F>
  void Match(const ParsedLine& line, MatchScratch* ms, F&& on_match) const {
    if (line.binary) return;
    ms->atoms.clear();
    matcher_.FindAll(line.text, &ms->atoms, &ms->seen);
    if (ms->atoms.empty()) return;
    ms->potentials.clear();
    filter_.AllPotentials(ms->atoms, &ms->potentials);
    for (int idx : ms->potentials) {
      const CompiledRule& r = rules_[idx];
      if (!r.spec.any_family && r.spec.family != line.family) continue;
      re2::StringPiece input = (r.spec.any_family || line.family == Family::kElastic ||
                                line.family == Family::kOther)
                                   ? re2::StringPiece(line.text.data(), line.text.size())
                                   : re2::StringPiece(line.message.data(), line.message.size());
      if (!r.re->Match(input, 0, input.size(), RE2::UNANCHORED, ms->groups, r.num_captures + 1)) continue;
      on_match(idx, ms->groups, r.num_captures + 1);
    }
  }

 private:
  friend class RuleLoader;
  std::vector<FactSpec> facts_;
  std::map<std::string, int, std::less<>> fact_index_;
  std::vector<CompiledRule> rules_;  // index = FilteredRE2 regexp id
  std::vector<CompiledCorrelation> correlations_;
  re2::FilteredRE2 filter_;
  LiteralMatcher matcher_;
};

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_RULE_SET_H_
