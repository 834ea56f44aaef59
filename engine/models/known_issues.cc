#include "engine/models/known_issues.h"

#include <re2/re2.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace ncclscan {

namespace {

// The versions of `fact` (nccl_version, torch_version) that finding f's
// subjects run: its ranks and host:pid subjects, else the processes of its
// hosts; when none of those printed one, every version the job printed.
std::vector<std::string> VersionsFor(const JobState& state, const std::vector<int>& live, const Finding& f, int fact) {
  std::set<std::string> mine, hosts, job;
  const std::set<int> ranks(f.ranks.begin(), f.ranks.end());
  const std::set<std::string> others(f.others.begin(), f.others.end()), on(f.hosts.begin(), f.hosts.end());
  for (int i : live) {
    const Subject& s = state.subjects()[i];
    const FactValue* v = s.Get(fact);
    if (!v || v->value.empty()) continue;
    job.insert(v->value);
    if ((s.rank >= 0 && ranks.count(s.rank)) || others.count(s.label))
      mine.insert(v->value);
    else if (on.count(s.host))
      hosts.insert(v->value);
  }
  const std::set<std::string>& use = !mine.empty() ? mine : (!hosts.empty() ? hosts : job);
  return std::vector<std::string>(use.begin(), use.end());
}

KnownIssueNote Judge(const KnownIssue& k, std::vector<std::string> versions) {
  KnownIssueNote n;
  n.issue = &k;
  bool any = false, affected = false, fixed = false;
  for (const auto& text : versions) {
    Version v;
    if (!ParseVersion(text, &v)) continue;
    any = true;
    affected |= k.Affects(v);
    fixed |= k.fixed_version.ok() && CompareVersions(v, k.fixed_version) >= 0;
  }
  n.status = !any ? "unknown" : affected ? "affected" : fixed ? "fixed" : "not_affected";
  n.versions = std::move(versions);
  return n;
}

// Known issue k concerns a finding of group `group` (its group_by values, split
// by \x1f): `when` matches one of them in full, or names none.
bool OfThisGroup(const KnownIssue& k, const std::string& group) {
  if (!k.when_re) return true;
  size_t b = 0;
  while (true) {
    const size_t e = std::min(group.find('\x1f', b), group.size());
    if (RE2::FullMatch(re2::StringPiece(group.data() + b, e - b), *k.when_re)) return true;
    if (e == group.size()) return false;
    b = e + 1;
  }
}

}  // namespace

void JudgeKnownIssues(const JobState& state, std::vector<Finding>* fs) {
  const RuleSet& rules = state.rules();
  std::map<std::string, const std::vector<KnownIssue>*> of;
  for (const auto& r : rules.rules()) {
    if (!r.spec.known_issues.empty()) of[r.spec.id.value] = &r.spec.known_issues;
  }
  for (const auto& c : rules.correlations()) {
    if (!c.spec.known_issues.empty()) of[c.spec.id.value] = &c.spec.known_issues;
  }
  if (of.empty()) return;
  const int nccl = rules.fact(Fact::kNcclVersion), torch = rules.fact(Fact::kTorchVersion);
  const std::vector<int> live = state.LiveSubjects();
  std::vector<Finding> kept;
  for (Finding& f : *fs) {
    auto it = of.find(f.rule_id);
    if (it == of.end()) {
      kept.push_back(std::move(f));
      continue;
    }
    f.known_issues.clear();
    bool drop = false;
    for (const KnownIssue& k : *it->second) {
      if (!OfThisGroup(k, f.group)) continue;
      const int fact = k.component == "torch" ? torch : nccl;
      KnownIssueNote n = Judge(k, fact < 0 ? std::vector<std::string>() : VersionsFor(state, live, f, fact));
      drop |= k.affected_only && (n.status == "fixed" || n.status == "not_affected");
      f.known_issues.push_back(std::move(n));
    }
    if (!drop) kept.push_back(std::move(f));
  }
  *fs = std::move(kept);
}

}  // namespace ncclscan
