// Correlations: the cross-rank rule kinds of docs/rules.md §3, interpreted over
// the facts of all subjects once scanning is done.
#include "engine/models/correlate.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "engine/models/consensus.h"
#include "engine/models/diagnosis.h"
#include "parsers/text_util.h"

namespace ncclscan {

namespace {

// A fact's comparable value on one subject ("" if absent).
std::string ValueOf(const FactValue& v, const FactSpec& spec) {
  if (spec.merge == MergeMode::kSet) {
    std::string out;
    for (const auto& x : v.values) out += (out.empty() ? "" : "+") + x;
    return out;
  }
  return v.value;
}

struct Ctx {
  const JobState& state;
  const CompiledCorrelation& c;
  std::vector<Finding>* out;
  std::vector<int> live;

  Finding Make(const std::vector<int>& subjects, const Vars& vars, const std::string& group) const {
    Finding f =
        FindingOf(c.spec.id.value, c.spec.kind, c.spec.category, c.spec.title, c.spec.finding, c.spec.references);
    f.group = group;
    FillSubjects(state, subjects, &f);
    f.count = static_cast<int64_t>(subjects.size());
    RenderTexts(&f, [&](const std::string& name, std::string* o) { AppendFindingVar(f, vars, name, o); });
    auto key = vars.find("key");
    if (key != vars.end() && c.fact >= 0) {
      // What the key names is declared by the fact (`key: comm` / `key: pg`).
      switch (state.rules().facts()[c.fact].key_kind) {
        case KeyKind::kComm:
          f.communicator = key->second;
          break;
        case KeyKind::kPg:
          f.process_group = key->second;
          break;
        case KeyKind::kName:
        case KeyKind::kCount:
          break;
      }
    }
    return f;
  }

  template <typename Lookup>
  void RenderTexts(Finding* f, Lookup&& lookup) const {
    f->explanation = c.explanation.Render(lookup);
    f->remediation = c.remediation.Render(lookup);
  }

  // Evidence in the order given: callers list the named subjects' lines first,
  // then one line of the majority for contrast (the order is deterministic).
  void AddEvidence(Finding* f, const std::vector<const FactValue*>& values) const {
    bool first = true;
    for (const FactValue* fv : values) {
      if (f->evidence.size() >= kMaxEvidencePerFinding) break;
      if (fv->evidence.file >= 0) f->evidence.push_back(fv->evidence);
      if (first || fv->seen.file < f->first.file || (fv->seen.file == f->first.file && fv->seen.line < f->first.line)) {
        f->first = fv->seen;
        first = false;
      }
    }
  }

  // Values of a keyed or unkeyed fact per subject: key -> subject -> value.
  std::map<std::string, std::map<int, const FactValue*>> Values(int fact) const {
    std::map<std::string, std::map<int, const FactValue*>> m;
    const FactSpec& spec = state.rules().facts()[fact];
    for (int i : live) {
      const Subject& s = state.subjects()[i];
      if (spec.keyed) {
        for (const auto& kv : s.keyed[fact]) m[kv.first][i] = &kv.second;
      } else if (const FactValue* v = s.Get(fact)) {
        m[""][i] = v;
      }
    }
    return m;
  }
};

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
void UnplacedValues(Ctx& x, const std::string& key, const std::map<int, const FactValue*>& values,
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

void Consensus(Ctx& x) {
  const FactSpec& spec = x.state.rules().facts()[x.c.fact];
  auto values = x.Values(x.c.fact);
  // Keyed facts: a subject that reports the fact for some key but not this one is "(unset)".
  std::set<int> reporters;
  for (const auto& kv : values) {
    for (const auto& sv : kv.second) reporters.insert(sv.first);
  }
  // Subjects that printed the population fact would have printed this one too:
  // for them a missing key means the default ("(unset)").
  if (x.c.population >= 0) {
    for (int s : x.live) {
      if (x.state.subjects()[s].Has(x.c.population)) reporters.insert(s);
    }
  }
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
    // Per host: each host's value is the majority of its subjects.
    std::map<std::string, std::vector<int>> groups;  // value -> subjects (or hosts' subjects)
    std::map<std::string, std::vector<int>> host_subjects;
    if (x.c.spec.over == Over::kHost) {
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
        std::map<std::string, std::vector<int>> hv;
        for (int s : hs.second) hv[val[s]].push_back(s);
        std::string note;
        std::string hval = Majority(hv, &note);
        auto& g = groups[hval];
        g.insert(g.end(), hs.second.begin(), hs.second.end());
      }
      if (groups.size() < 2 || static_cast<int>(host_subjects.size()) < x.c.spec.min_subjects) {
        if (groups.size() < 2) UnplacedValues(x, key, kv.second, groups, unplaced);
        continue;
      }
    } else {
      if (static_cast<int>(val.size()) < x.c.spec.min_subjects) continue;
      for (const auto& sv : val) groups[sv.second].push_back(sv.first);
    }
    if (groups.size() < 2) continue;
    // Majority by number of hosts (over: host) or subjects.
    auto weight = [&](const std::vector<int>& members) {
      if (x.c.spec.over != Over::kHost) return members.size();
      std::set<std::string> hs;
      for (int s : members) {
        const std::string& h = x.state.subjects()[s].host;
        hs.insert(h.empty() ? "\x01subject " + std::to_string(s) : h);  // see unhosted_ranks
      }
      return hs.size();
    };
    std::string majority;
    size_t best = 0;
    bool tie = false;
    for (const auto& g : groups) {
      size_t n = weight(g.second);
      if (n > best) {
        best = n;
        majority = g.first;
        tie = false;
      } else if (n == best) {
        tie = true;
      }
    }
    // A tie is broken by the values the rule calls normal (a default, the fast
    // transport); otherwise nobody is the odd one out and every subject is named.
    if (tie && !x.c.spec.normal.empty()) {
      std::vector<std::string> normal_tied;
      for (const auto& g : groups) {
        size_t n = weight(g.second);
        bool is_normal = std::find(x.c.spec.normal.begin(), x.c.spec.normal.end(), g.first) != x.c.spec.normal.end();
        if (n == best && is_normal) normal_tied.push_back(g.first);
      }
      if (normal_tied.size() == 1) {
        majority = normal_tied[0];
        tie = false;
      }
    }
    std::vector<int> outliers, majority_subjects = tie ? std::vector<int>() : groups[majority];
    if (tie) majority = "(no majority)";
    std::string outlier_values;
    std::vector<const FactValue*> ev;
    for (const auto& g : groups) {
      if (g.first == majority) continue;
      outliers.insert(outliers.end(), g.second.begin(), g.second.end());
      outlier_values += (outlier_values.empty() ? "" : ", ") + g.first;
      for (int s : g.second) {
        auto it = kv.second.find(s);
        if (it != kv.second.end()) ev.push_back(it->second);
      }
    }
    for (int s : majority_subjects) {
      auto it = kv.second.find(s);
      if (it != kv.second.end() && ev.size() < kMaxEvidencePerFinding + 1) {
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

void ConditionKind(Ctx& x) {
  if (x.c.spec.job_hosts_gt >= 0 && static_cast<int>(x.state.Hosts().size()) <= x.c.spec.job_hosts_gt) return;
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

void Absence(Ctx& x) {
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

void MissingRanks(Ctx& x) {
  for (const auto& kv : x.state.comms()) {
    const CommInfo& ci = kv.second;
    if (ci.nranks <= 1) continue;
    std::set<int> seen = ci.RanksSeen();
    int n = static_cast<int>(seen.size());
    // One rank's log, or a dump of a few ranks, is an excerpt, not a job with missing ranks.
    if (n < 2 || n >= ci.nranks || n * 2 < ci.nranks) continue;
    std::vector<int> missing;
    for (int r = 0; r < ci.nranks; ++r) {
      if (!seen.count(r)) missing.push_back(r);
    }
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

// {group} of an extreme finding: what its key names, in words ("process group
// 3"; "the process group" for a line that names none: the empty key).
std::string KeyPhrase(KeyKind kind, const std::string& key) {
  switch (kind) {
    case KeyKind::kPg:
      return key.empty() ? "the process group" : "process group " + key;
    case KeyKind::kComm:
      return key.empty() ? "an unnamed communicator" : "communicator " + key;
    case KeyKind::kName:
    case KeyKind::kCount:
      break;
  }
  return key;
}

void Extreme(Ctx& x) {
  const FactSpec& spec = x.state.rules().facts()[x.c.fact];
  if (x.c.require >= 0) {
    bool any = false;
    for (int s : x.live) any |= x.state.subjects()[s].Has(x.c.require);
    if (!any) return;
  }
  auto values = x.Values(x.c.fact);
  // The key most subjects report is where silent subjects are counted.
  std::string main_key;
  size_t main_n = 0;
  for (const auto& kv : values) {
    if (kv.second.size() > main_n) {
      main_n = kv.second.size();
      main_key = kv.first;
    }
  }
  std::set<int> reporters;
  for (const auto& kv : values)
    for (const auto& sv : kv.second) reporters.insert(sv.first);
  // A silent subject whose own NCCL trace shows it issued as many collectives as the
  // reporters did (last_opcount on every communicator it shares with them, against their
  // most common value) reached the collective they hang in: it was cut off (stopped by its
  // launcher after a sibling failed, its log cut short), not behind.
  const int progress = x.state.rules().fact(Fact::kLastOpcount);
  auto caught_up = [&](const Subject& sub) {
    if (progress < 0 || progress >= static_cast<int>(sub.keyed.size())) return false;
    const bool hex = x.state.rules().facts()[progress].hex;
    int shared = 0;
    for (const auto& mine : sub.keyed[progress]) {
      std::map<long double, int> theirs;  // value -> reporters
      for (int r : reporters) {
        const auto& rk = x.state.subjects()[r].keyed;
        if (progress >= static_cast<int>(rk.size())) continue;
        auto it = rk[progress].find(mine.first);
        long double v;
        if (it != rk[progress].end() && ParseNumber(it->second.value, hex, &v)) theirs[v]++;
      }
      long double m, common = 0;
      int best = 0;
      for (const auto& t : theirs) {
        if (t.second > best) {
          best = t.second;
          common = t.first;
        }
      }
      if (best == 0 || !ParseNumber(mine.second.value, hex, &m)) continue;
      if (m < common) return false;
      ++shared;
    }
    return shared > 0;
  };
  for (const auto& kv : values) {
    std::vector<int> silent;
    if (x.c.spec.silent_is_behind && kv.first == main_key) {
      for (int s : x.live) {
        const Subject& sub = x.state.subjects()[s];
        if (sub.rank < 0 || reporters.count(s)) continue;
        if (x.c.require >= 0 && sub.Has(x.c.require)) continue;
        if (caught_up(sub)) continue;
        silent.push_back(s);
      }
    }
    std::map<long double, std::vector<int>> by_value;
    std::map<long double, std::string> text;
    for (const auto& sv : kv.second) {
      long double v;
      if (!ParseNumber(sv.second->value, spec.hex, &v)) continue;
      by_value[v].push_back(sv.first);
      // NCCL prints opCounts in hex without a prefix: "opCount 27" is 39 ops.
      // Say both, "39 (0x27)", so the explanation cannot be misread.
      const std::string& raw = sv.second->value;
      text[v] = spec.hex && v >= 0 && v < 1.8e19L
                    ? fmt::format("{} (0x{})", static_cast<uint64_t>(v), StartsWith(raw, "0x") ? raw.substr(2) : raw)
                    : raw;
    }
    // Sequences are compared within one group only. Lines that do not name
    // their process group or communicator (old watchdog formats: the empty
    // key) may come from several groups, whose numbers are unrelated: they
    // are compared only when they are close. Within one group the ranks block on
    // the same oldest unfinished collective, so a rank that is behind is a few
    // sequence numbers behind, never thousands.
    constexpr long double kUnknownGroupMaxGap = 64;
    const bool unknown_group = kv.first.empty() && spec.keyed && spec.key_kind != KeyKind::kName;
    if (unknown_group && !by_value.empty() &&
        by_value.rbegin()->first - by_value.begin()->first > kUnknownGroupMaxGap) {
      continue;
    }
    size_t total = silent.size();
    for (const auto& bv : by_value) total += bv.second.size();
    if (total < 2) continue;
    std::vector<int> culprits = silent;
    std::string value = silent.empty() ? "" : "no work (it reported none)";
    if (by_value.size() > 1) {
      auto& ext = x.c.spec.select == Select::kMax ? by_value.rbegin()->second : by_value.begin()->second;
      const std::string& t = x.c.spec.select == Select::kMax ? text.rbegin()->second : text.begin()->second;
      culprits.insert(culprits.end(), ext.begin(), ext.end());
      value += (value.empty() ? "" : " / ") + t;
    }
    if (culprits.empty() || culprits.size() * 2 > total) continue;  // not an outlier
    // The most common value among the others.
    std::string majority;
    size_t best = 0;
    for (const auto& bv : by_value) {
      if (std::find(culprits.begin(), culprits.end(), bv.second.front()) != culprits.end()) continue;
      if (bv.second.size() > best) {
        best = bv.second.size();
        majority = text[bv.first];
      }
    }
    std::vector<const FactValue*> ev;
    for (int s : culprits) {
      auto it = kv.second.find(s);
      if (it != kv.second.end()) ev.push_back(it->second);
    }
    for (const auto& sv : kv.second) {
      if (std::find(culprits.begin(), culprits.end(), sv.first) == culprits.end()) {
        ev.push_back(sv.second);
        break;
      }
    }
    Finding f = x.Make(
        culprits,
        {{"key", kv.first}, {"group", KeyPhrase(spec.key_kind, kv.first)}, {"value", value}, {"majority", majority}},
        kv.first);
    x.AddEvidence(&f, ev);
    x.out->push_back(std::move(f));
  }
}

void FirstInTime(Ctx& x) {
  std::vector<std::pair<int, const FactValue*>> have;
  for (int s : x.live) {
    if (const FactValue* v = x.state.subjects()[s].Get(x.c.fact)) have.push_back({s, v});
  }
  if (have.size() < 2) return;
  bool all_timed = true;
  for (const auto& h : have) all_timed &= h.second->seen.time >= 0;
  const FactSpec& spec = x.state.rules().facts()[x.c.fact];
  std::string uncertainty;
  std::pair<int, const FactValue*> first = have.front();
  if (all_timed) {
    for (const auto& h : have) {
      if (h.second->seen.time < first.second->seen.time) first = h;
    }
    int ties = 0;
    double second_best = -1;
    for (const auto& h : have) {
      if (h.first == first.first) continue;
      if (h.second->seen.time == first.second->seen.time) ++ties;
      if (second_best < 0 || h.second->seen.time < second_best) second_best = h.second->seen.time;
    }
    if (ties) return;  // no earliest
    // Ranks that fail within a second of each other (a timeout firing everywhere)
    // have no meaningful "first": clocks of different hosts disagree by more.
    if (second_best - first.second->seen.time < 1.0) return;
    uncertainty = fmt::format(
        "{:.3f} s before the next rank; timestamps come from different hosts whose clocks "
        "may disagree by more than that",
        second_best - first.second->seen.time);
  } else {
    // Without timestamps only lines of one file can be ordered.
    int file = have.front().second->seen.file;
    for (const auto& h : have) {
      if (h.second->seen.file != file) return;
      if (h.second->seen.line < first.second->seen.line) first = h;
    }
    uncertainty = "no timestamps; ordered by line within " + x.state.files()[file].path;
  }
  Finding f = x.Make({first.first}, {{"value", ValueOf(*first.second, spec)}, {"uncertainty", uncertainty}}, "");
  std::vector<const FactValue*> ev{first.second};
  x.AddEvidence(&f, ev);
  x.out->push_back(std::move(f));
}

// "10.0.0.5<53311>" -> "10.0.0.5"; "gpu-b03.cluster.local<51234>" -> "gpu-b03".
std::string PeerHost(const std::string& peer, const std::map<std::string, std::string>& owner,
                     const std::set<std::string>& hosts) {
  std::string p = peer.substr(0, peer.find('<'));
  auto it = owner.find(p);
  if (it != owner.end()) return it->second;
  if (hosts.count(p)) return p;
  bool ip = !p.empty() && (std::isdigit(static_cast<unsigned char>(p[0])) || p.find(':') != std::string::npos);
  if (!ip) {
    std::string short_name = p.substr(0, p.find('.'));
    if (hosts.count(short_name)) return short_name;
    // "node-ib" style aliases of a host.
    for (const auto& h : hosts) {
      if (StartsWith(short_name, h) && short_name.size() > h.size() && short_name[h.size()] == '-') return h;
    }
    return short_name;
  }
  return p;
}

void PeerMap(Ctx& x) {
  std::set<std::string> hosts = x.state.Hosts();
  std::map<std::string, std::set<int>> reporters;  // peer host -> subjects reporting it
  std::map<std::string, std::vector<const FactValue*>> ev;
  std::set<int> all_reporters;
  for (int s : x.live) {
    const FactValue* v = x.state.subjects()[s].Get(x.c.fact);
    if (!v) continue;
    std::set<std::string> peers;
    for (const auto& p : v->values) peers.insert(PeerHost(p, x.state.address_owner(), hosts));
    if (v->values.empty() && !v->value.empty()) peers.insert(PeerHost(v->value, x.state.address_owner(), hosts));
    for (const auto& ph : peers) {
      // A host naming itself among other peers is discounted; when it is the only
      // peer named, a local process died (a proxy or a rank of the same node).
      if (ph == x.state.subjects()[s].host && peers.size() > 1) continue;
      reporters[ph].insert(s);
      if (ev[ph].size() < kMaxEvidencePerFinding) ev[ph].push_back(v);
    }
    all_reporters.insert(s);
  }
  if (reporters.empty()) return;
  std::string top;
  size_t top_n = 0;
  bool tie = false;
  for (const auto& kv : reporters) {
    if (kv.second.size() > top_n) {
      top_n = kv.second.size();
      top = kv.first;
      tie = false;
    } else if (kv.second.size() == top_n) {
      tie = true;
    }
  }
  // Two hosts named equally often: no single host to blame.
  if (tie || static_cast<int>(top_n) < x.c.spec.min_reporters) return;
  // The named host must account for most reports, or it is a storm without a centre.
  if (top_n * 2 < all_reporters.size()) return;
  // One report alone names a culprit only on another host of this job: a host
  // naming itself says a local process died, not which, and an address no
  // process of the job owns may be a foreign connection to the bootstrap port
  // during init (NVIDIA/nccl#1612). A reporter already past init (Init
  // COMPLETE, a collective it waited in) lost a connection of the running job:
  // its peer is the job's, whether or not that host's logs were collected.
  if (top_n == 1) {
    const Subject& rep = x.state.subjects()[*reporters[top].begin()];
    bool known = hosts.count(top) > 0;
    for (const auto& kv : x.state.address_owner()) known |= kv.second == top;
    // Past init when it reported: a line of those facts comes before the
    // report, or is the report itself (a collective's error that quotes the
    // closed connection: its continuation lines are cited by its first line).
    // Lines of two files without timestamps have no order: they count.
    const FactValue* report = rep.Get(x.c.fact);
    auto before = [&](const Evidence& e) {
      if (!report) return false;
      const Evidence& r = report->evidence;
      if (e.time >= 0 && r.time >= 0) return e.time <= r.time;
      return e.file != r.file || e.line <= r.line;
    };
    bool running = false;
    for (Fact f : {Fact::kInitComplete, Fact::kTimeoutOp, Fact::kTimeoutSeq, Fact::kLastEnqueued, Fact::kLastOpcount}) {
      const int id = x.state.rules().fact(f);
      if (id < 0) continue;
      if (const FactValue* v = rep.Get(id)) running |= before(v->evidence);
      if (id < static_cast<int>(rep.keyed.size())) {
        for (const auto& kv : rep.keyed[id]) running |= before(kv.second.evidence);
      }
    }
    if ((!known && !running) || rep.host == top) return;
  }
  std::vector<int> suspects;
  for (int s : x.live) {
    if (x.state.subjects()[s].host == top) suspects.push_back(s);
  }
  Finding rep;
  FillSubjects(x.state, std::vector<int>(reporters[top].begin(), reporters[top].end()), &rep);
  Finding f = x.Make(suspects, {{"peer_hosts", top}, {"reporters", SubjectsText(rep)}}, top);
  f.hosts = {top};
  if (suspects.empty()) {
    f.others = {top};
  }
  f.count = static_cast<int64_t>(top_n);
  // Re-render: {peer_ranks} / {hosts} depend on the suspects set above.
  Finding suspects_f;
  FillSubjects(x.state, suspects, &suspects_f);
  x.RenderTexts(&f, [&](const std::string& name, std::string* o) {
    if (name == "peer_hosts" || name == "hosts")
      o->append(top);
    else if (name == "peer_ranks" || name == "ranks")
      o->append(suspects.empty() ? "?" : SubjectsText(suspects_f));
    else if (name == "reporters")
      o->append(SubjectsText(rep));
    else if (name == "count")
      o->append(std::to_string(top_n));
  });
  x.AddEvidence(&f, ev[top]);
  x.out->push_back(std::move(f));
}

}  // namespace

void RunCorrelations(const JobState& state, std::vector<Finding>* out, std::vector<std::string>* errors) {
  std::vector<int> live = state.LiveSubjects();
  for (const CompiledCorrelation& c : state.rules().correlations()) {
    Ctx x{state, c, out, live};
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
