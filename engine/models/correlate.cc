// Correlations: the cross-rank rule kinds of docs/rules.md §3, interpreted over
// the facts of all subjects once scanning is done. Here RunCorrelations and
// the kinds consensus, condition, absence and missing_ranks; extreme,
// first_in_time and peer_map are in correlate_extreme.cc.
#include "engine/models/correlate.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "engine/models/consensus.h"
#include "engine/models/correlate_internal.h"
#include "engine/models/diagnosis.h"
#include "parsers/text_util.h"
#include "rules/version_range.h"

namespace ncclscan {

// A fact's comparable value on one subject ("" if absent).
std::string ValueOf(const FactValue& v, const FactSpec& spec) {
  if (spec.merge == MergeMode::kSet) {
    std::string out;
    for (const auto& x : v.values) out += (out.empty() ? "" : "+") + x;
    return out;
  }
  return v.value;
}

namespace {

std::string Majority(const std::map<std::string, std::vector<int>>& by_value, std::string* tie_note) {
  std::string best;
  size_t best_n = 0;
  int ties = 0;
  for (const auto& kv : by_value) {
    if (kv.second.size() > best_n) {
      best = kv.first;
      best_n = kv.second.size();
      ties = 0;
    } else if (kv.second.size() == best_n) {
      ++ties;
    }
  }
  *tie_note = ties ? " (no clear majority)" : "";
  return best;
}

// Over hosts, when the hosts agree (or none reported the fact): values on lines that carry no
// host (the bare NCCL <= 2.21 version banner in a combined log without labels) cannot be put on
// a host, but a value no host shows, or two values in one such stream, still mean the job is not
// uniform. The finding names the stream; its hosts stay unknown.
void UnplacedValues(CorrelationCtx& x, const std::string& key, const std::map<int, const FactValue*>& values,
                    std::map<std::string, std::vector<int>>& groups, const std::vector<int>& unplaced) {
  const FactSpec& spec = x.state.rules().facts()[x.c.fact];
  const std::string hosts_value = groups.empty() ? "" : groups.begin()->first;
  std::set<std::string> all, odd_values;
  if (!hosts_value.empty()) all.insert(hosts_value);
  std::vector<int> odd;
  std::vector<const FactValue*> ev;
  for (int s : unplaced) {
    auto it = values.find(s);
    if (it == values.end()) continue;
    std::vector<std::string> vs = it->second->values;
    if (vs.empty()) vs.push_back(ValueOf(*it->second, spec));
    bool differs = false;
    for (const auto& v : vs) {
      all.insert(v);
      if (v != hosts_value) {
        odd_values.insert(v);
        differs = true;
      }
    }
    if (differs) {
      odd.push_back(s);
      ev.push_back(it->second);
    }
  }
  if (all.size() < 2 || odd.empty()) return;
  std::vector<int> majority_subjects;
  if (!hosts_value.empty()) {
    majority_subjects = groups[hosts_value];
    for (int s : majority_subjects) {
      auto it = values.find(s);
      if (it != values.end()) {
        ev.push_back(it->second);
        break;  // one line of the majority for contrast
      }
    }
  }
  std::string value;
  for (const auto& v : odd_values) value += (value.empty() ? "" : ", ") + v;
  Finding maj;
  FillSubjects(x.state, majority_subjects, &maj);
  Vars vars{{"value", value},
            {"majority", hosts_value.empty() ? "(no majority)" : hosts_value},
            {"key", key},
            {"majority_ranks", SubjectsText(maj)},
            {"majority_hosts", HostsText(maj)}};
  Finding f = x.Make(odd, vars, key + "=" + value);
  x.AddEvidence(&f, ev);
  x.out->push_back(std::move(f));
}

using SubjectsByValue = std::map<std::string, std::vector<int>>;  // value -> subjects

// The subjects a consensus compares: those that report the fact for any key,
// and those that printed the population fact (they would have printed this
// one too: for them a missing key means the default, "(unset)").
std::set<int> ConsensusReporters(const CorrelationCtx& x,
                                 const std::map<std::string, std::map<int, const FactValue*>>& values) {
  // Keyed facts: a subject that reports the fact for some key but not this one is "(unset)".
  std::set<int> reporters;
  for (const auto& kv : values) {
    for (const auto& sv : kv.second) reporters.insert(sv.first);
  }
  if (x.c.population >= 0) {
    for (int s : x.live) {
      if (x.state.subjects()[s].Has(x.c.population)) reporters.insert(s);
    }
  }
  return reporters;
}

// over: host. Each host's value is the majority of its subjects; false when
// this key has no dispute among enough hosts (then the values of lines no
// process can be placed on are checked alone).
bool GroupByHost(CorrelationCtx& x, const std::string& key, const std::map<int, const FactValue*>& key_values,
                 const std::map<int, std::string>& val, SubjectsByValue* groups) {
  std::map<std::string, std::vector<int>> host_subjects;
  std::vector<int> unplaced;  // unprefixed lines of a stream several processes share
  std::vector<int> unhosted_ranks;
  for (const auto& sv : val) {
    const Subject& sub = x.state.subjects()[sv.first];
    if (!sub.host.empty()) {
      host_subjects[sub.host].push_back(sv.first);
    } else if (sub.rank < 0 && sub.pid < 0) {
      unplaced.push_back(sv.first);
    } else if (sub.rank >= 0) {
      unhosted_ranks.push_back(sv.first);
    }
  }
  // No reporter names its host (pasted fragments, "[rankN]:" lines only): each
  // rank stands for a host of its own, the best grouping the input allows, so
  // that the rank that differs is still named. Where any host is known the
  // hosts alone vote, as before.
  if (host_subjects.empty()) {
    for (int s : unhosted_ranks) host_subjects["\x01subject " + std::to_string(s)].push_back(s);
  }
  for (const auto& hs : host_subjects) {
    SubjectsByValue hv;
    for (int s : hs.second) hv[val.at(s)].push_back(s);
    std::string note;
    std::string hval = Majority(hv, &note);
    auto& g = (*groups)[hval];
    g.insert(g.end(), hs.second.begin(), hs.second.end());
  }
  if (groups->size() < 2 || static_cast<int>(host_subjects.size()) < x.c.spec.min_subjects) {
    if (groups->size() < 2) UnplacedValues(x, key, key_values, *groups, unplaced);
    return false;
  }
  return true;
}

// A group's weight in the vote: its hosts (over: host) or its subjects.
size_t GroupWeight(const CorrelationCtx& x, const std::vector<int>& members) {
  if (x.c.spec.over != Over::kHost) return members.size();
  std::set<std::string> hs;
  for (int s : members) {
    const std::string& h = x.state.subjects()[s].host;
    hs.insert(h.empty() ? "\x01subject " + std::to_string(s) : h);  // see GroupByHost's unhosted ranks
  }
  return hs.size();
}

// The version a value names: its first dotted number ("2.14.3+cuda11.7",
// "NCCL 2.19-2.20" is 2.19).
Version VersionIn(const std::string& value) {
  Version v;
  const size_t digit = value.find_first_of("0123456789");
  if (digit != std::string::npos) ParseVersion(std::string_view(value).substr(digit), &v);
  return v;
}

// `tie: newest`: among the groups tied at weight `best`, the one of the newest
// release; still a tie when two name the same release or one names none.
std::string NewestOfTied(const CorrelationCtx& x, const SubjectsByValue& groups, size_t best, bool* tie) {
  const std::string* newest = nullptr;
  Version newest_v;
  bool unique = false;
  for (const auto& g : groups) {
    if (GroupWeight(x, g.second) != best) continue;
    Version v = VersionIn(g.first);
    if (!v.ok()) return {};
    const int c = newest ? CompareVersions(v, newest_v) : 1;
    if (c > 0) {
      newest = &g.first;
      newest_v = std::move(v);
      unique = true;
    } else if (c == 0) {
      unique = false;
    }
  }
  if (!unique) return {};
  *tie = false;
  return *newest;
}

// The majority's value; *tie when no group outweighs the others.
std::string MajorityValue(const CorrelationCtx& x, const SubjectsByValue& groups, bool* tie) {
  std::string majority;
  size_t best = 0;
  *tie = false;
  for (const auto& g : groups) {
    size_t n = GroupWeight(x, g.second);
    if (n > best) {
      best = n;
      majority = g.first;
      *tie = false;
    } else if (n == best) {
      *tie = true;
    }
  }
  // A tie is broken by the values the rule calls normal (a default, the fast
  // transport); otherwise nobody is the odd one out and every subject is named.
  if (*tie && !x.c.spec.normal.empty()) {
    std::vector<std::string> normal_tied;
    for (const auto& g : groups) {
      size_t n = GroupWeight(x, g.second);
      bool is_normal = std::find(x.c.spec.normal.begin(), x.c.spec.normal.end(), g.first) != x.c.spec.normal.end();
      if (n == best && is_normal) normal_tied.push_back(g.first);
    }
    if (normal_tied.size() == 1) {
      majority = normal_tied[0];
      *tie = false;
    }
  }
  if (*tie && x.c.spec.tie_newest) majority = NewestOfTied(x, groups, best, tie);
  return majority;
}

// The finding naming the subjects outside the majority, with their lines and
// one line of the majority for contrast.
void EmitOutliers(CorrelationCtx& x, const std::string& key, const std::map<int, const FactValue*>& key_values,
                  SubjectsByValue& groups, std::string majority, bool tie) {
  std::vector<int> outliers, majority_subjects = tie ? std::vector<int>() : groups[majority];
  if (tie) majority = "(no majority)";
  std::string outlier_values;
  std::vector<const FactValue*> ev;
  for (const auto& g : groups) {
    if (g.first == majority) continue;
    outliers.insert(outliers.end(), g.second.begin(), g.second.end());
    outlier_values += (outlier_values.empty() ? "" : ", ") + g.first;
    for (int s : g.second) {
      auto it = key_values.find(s);
      if (it != key_values.end()) ev.push_back(it->second);
    }
  }
  for (int s : majority_subjects) {
    auto it = key_values.find(s);
    if (it != key_values.end() && ev.size() < kMaxEvidencePerFinding + 1) {
      ev.push_back(it->second);
      break;  // one line of the majority for contrast
    }
  }
  Finding maj;
  FillSubjects(x.state, majority_subjects, &maj);
  Vars vars{{"value", outlier_values},
            {"majority", majority},
            {"key", key},
            {"majority_ranks", SubjectsText(maj)},
            {"majority_hosts", HostsText(maj)}};
  Finding f = x.Make(outliers, vars, key + "=" + outlier_values);
  x.AddEvidence(&f, ev);
  x.out->push_back(std::move(f));
}

void Consensus(CorrelationCtx& x) {
  const FactSpec& spec = x.state.rules().facts()[x.c.fact];
  auto values = x.Values(x.c.fact);
  const std::set<int> reporters = ConsensusReporters(x, values);
  for (const auto& kv : values) {
    const std::string& key = kv.first;
    std::map<int, std::string> val;
    for (int s : reporters) {
      auto it = kv.second.find(s);
      if (it != kv.second.end())
        val[s] = ValueOf(*it->second, spec);
      else if (spec.keyed && !x.c.spec.ignore_unset)
        val[s] = "(unset)";
    }
    SubjectsByValue groups;
    if (x.c.spec.over == Over::kHost) {
      if (!GroupByHost(x, key, kv.second, val, &groups)) continue;
    } else {
      if (static_cast<int>(val.size()) < x.c.spec.min_subjects) continue;
      for (const auto& sv : val) groups[sv.second].push_back(sv.first);
    }
    if (groups.size() < 2) continue;
    // Majority by number of hosts (over: host) or subjects.
    bool tie = false;
    const std::string majority = MajorityValue(x, groups, &tie);
    EmitOutliers(x, key, kv.second, groups, majority, tie);
  }
}

bool Holds(const Condition& cond, const FactValue* v, const FactSpec& spec) {
  if (cond.op == ConditionOp::kExists) return v != nullptr;
  if (cond.op == ConditionOp::kAbsent) return v == nullptr;
  if (!v) return false;
  std::string val = ValueOf(*v, spec);
  if (cond.op == ConditionOp::kEquals) return val == cond.value.value;
  if (cond.op == ConditionOp::kNotEquals) return val != cond.value.value;
  if (cond.op == ConditionOp::kMatches) {
    // Validated by the loader; Latin-1 like the line rules (values are log bytes).
    RE2::Options o;
    o.set_encoding(RE2::Options::EncodingLatin1);
    o.set_log_errors(false);
    RE2 re(cond.value.value, o);
    if (spec.merge == MergeMode::kSet) {
      for (const auto& x : v->values) {
        if (RE2::PartialMatch(x, re)) return true;
      }
      return false;
    }
    return RE2::PartialMatch(val, re);
  }
  // The loader checked that the rule's value is a number; a fact value that is
  // not one (NCCL_IB_TIMEOUT=abc) satisfies no comparison.
  long double a, b;
  if (!ParseNumber(val, spec.hex, &a) || !ParseNumber(cond.value.value, false, &b)) return false;
  switch (cond.op) {
    case ConditionOp::kGt:
      return a > b;
    case ConditionOp::kLt:
      return a < b;
    case ConditionOp::kGe:
      return a >= b;
    case ConditionOp::kLe:
      return a <= b;
    default:
      return false;  // the text operators, above
  }
}

// The value a condition reads on one subject: the fact, or one key of a keyed fact.
const FactValue* ConditionValue(const Subject& sub, int fact, const Condition& cond) {
  if (cond.key.value.empty()) return sub.Get(fact);
  if (fact < 0 || fact >= static_cast<int>(sub.keyed.size())) return nullptr;
  auto it = sub.keyed[fact].find(cond.key.value);
  return it == sub.keyed[fact].end() ? nullptr : &it->second;
}

void ConditionKind(CorrelationCtx& x) {
  // The job's hosts: those the logs place processes on, or as many nodes as
  // the job itself says it spans (NCCL's nNodes: an excerpt of one node's lines).
  const int64_t hosts = std::max<int64_t>(static_cast<int64_t>(x.state.Hosts().size()), x.state.StatedNodes());
  if (x.c.spec.job_hosts_gt >= 0 && hosts <= x.c.spec.job_hosts_gt) return;
  std::vector<int> hits;
  std::vector<const FactValue*> ev;
  std::string value;
  for (int s : x.live) {
    const Subject& sub = x.state.subjects()[s];
    bool all = true;
    const FactValue* first = nullptr;
    for (size_t k = 0; k < x.c.spec.where.size() && all; ++k) {
      int fact = x.c.where_facts[k];
      const FactSpec& spec = x.state.rules().facts()[fact];
      const FactValue* v = ConditionValue(sub, fact, x.c.spec.where[k]);
      if (!Holds(x.c.spec.where[k], v, spec)) all = false;
      if (k == 0) first = v;
    }
    if (!all) continue;
    hits.push_back(s);
    if (first) {
      ev.push_back(first);
      if (value.empty()) value = ValueOf(*first, x.state.rules().facts()[x.c.where_facts[0]]);
    }
  }
  if (hits.empty()) return;
  Finding f = x.Make(hits, {{"value", value}}, "");
  x.AddEvidence(&f, ev);
  x.out->push_back(std::move(f));
}

void Absence(CorrelationCtx& x) {
  std::vector<int> hits;
  std::vector<const FactValue*> ev;
  bool anyone_has_absent = false;
  for (int s : x.live) {
    const Subject& sub = x.state.subjects()[s];
    if (sub.Has(x.c.absent)) anyone_has_absent = true;
  }
  // Without a single subject that reached the "absent" fact, an excerpt that
  // stops early cannot be told from a real hang: say nothing.
  if (!anyone_has_absent) return;
  for (int s : x.live) {
    const Subject& sub = x.state.subjects()[s];
    const FactValue* p = sub.Get(x.c.present);
    if (p && !sub.Has(x.c.absent)) {
      hits.push_back(s);
      ev.push_back(p);
    }
  }
  if (hits.empty()) return;
  Finding f = x.Make(hits, {}, "");
  x.AddEvidence(&f, ev);
  x.out->push_back(std::move(f));
}

void MissingRanks(CorrelationCtx& x) {
  const int nccltests_rank = x.state.rules().fact(Fact::kNccltestsRank);
  for (const auto& kv : x.state.comms()) {
    const CommInfo& ci = kv.second;
    if (ci.nranks <= 1) continue;
    std::set<int> seen = ci.RanksSeen();
    int n = static_cast<int>(seen.size());
    // A rank nccl-tests' banner places in a process that logged this
    // communicator (one process driving several GPUs, -g N) ran: its lines
    // are cut from the excerpt or its init is still going, never a rank that
    // did not start or crashed apart from the others.
    for (int s : ci.subjects) {
      const FactValue* banner = nccltests_rank >= 0 ? x.state.subjects()[s].Get(nccltests_rank) : nullptr;
      if (!banner) continue;
      for (const std::string& r : banner->values) {
        long double v;
        if (ParseNumber(r, false, &v) && v >= 0 && v < ci.nranks) seen.insert(static_cast<int>(v));
      }
    }
    // One rank's log, or a dump of a few ranks, is an excerpt, not a job with missing ranks.
    if (n < 2 || n >= ci.nranks || n * 2 < ci.nranks) continue;
    std::vector<int> missing;
    for (int r = 0; r < ci.nranks; ++r) {
      if (!seen.count(r)) missing.push_back(r);
    }
    if (missing.empty()) continue;
    Finding f =
        x.Make({}, {{"missing", CompactRanks(missing)}, {"nranks", std::to_string(ci.nranks)}, {"comm", ci.id}}, ci.id);
    f.ranks = missing;
    f.count = static_cast<int64_t>(missing.size());
    f.communicator = ci.id;
    // Re-render now that ranks are the missing ones.
    x.RenderTexts(&f, [&](const std::string& name, std::string* o) {
      if (name == "ranks" || name == "missing")
        o->append(CompactRanks(missing));
      else if (name == "nranks")
        o->append(std::to_string(ci.nranks));
      else if (name == "comm")
        o->append(ci.id);
      else if (name == "count")
        o->append(std::to_string(missing.size()));
      else if (name == "hosts")
        o->append("?");
    });
    x.out->push_back(std::move(f));
  }
}

}  // namespace

void RunCorrelations(const JobState& state, std::vector<Finding>* out, std::vector<std::string>* errors) {
  std::vector<int> live = state.LiveSubjects();
  for (const CompiledCorrelation& c : state.rules().correlations()) {
    CorrelationCtx x{state, c, out, live};
    if (c.spec.kind == CorrelationKind::kCollective) continue;  // below
    RunGuarded(c.spec.id.value, errors, [&] {
      switch (c.spec.kind) {
        case CorrelationKind::kConsensus:
          Consensus(x);
          break;
        case CorrelationKind::kCondition:
          ConditionKind(x);
          break;
        case CorrelationKind::kAbsence:
          Absence(x);
          break;
        case CorrelationKind::kMissingRanks:
          MissingRanks(x);
          break;
        case CorrelationKind::kExtreme:
          Extreme(x);
          break;
        case CorrelationKind::kFirstInTime:
          FirstInTime(x);
          break;
        case CorrelationKind::kPeerMap:
          PeerMap(x);
          break;
        case CorrelationKind::kCollective:
        case CorrelationKind::kCount:  // refused by the loader
          break;
      }
    });
  }
  // Kind `collective`: the checks of the consensus model, all over one model.
  RunCollectiveChecks(state, out, errors);
}

}  // namespace ncclscan
