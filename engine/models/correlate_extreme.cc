// The correlation kinds that single out subjects by their value, their time
// or their peers (docs/rules.md §3): extreme, first_in_time, peer_map.
// RunCorrelations (correlate.cc) calls them.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "engine/models/correlate_internal.h"
#include "engine/models/diagnosis.h"
#include "engine/models/story.h"
#include "parsers/text_util.h"

namespace ncclscan {

namespace {

// {group} of an extreme finding: what its key names, in words ("process group
// 3"; "the process group" for a line that names none: the empty key).
std::string KeyPhrase(KeyKind kind, const std::string& key) {
  switch (kind) {
    case KeyKind::kPg:
      return key.empty() ? "the process group" : "process group " + key;
    case KeyKind::kComm:
      return key.empty() ? "an unnamed communicator" : "communicator " + key;
    case KeyKind::kRank:
      return "rank " + key;
    case KeyKind::kName:
    case KeyKind::kCount:
      break;
  }
  return key;
}

// A silent subject whose own NCCL trace shows it issued as many collectives as the
// reporters did (last_opcount on every communicator it shares with them, against their
// most common value) reached the collective they hang in: it was cut off (stopped by its
// launcher after a sibling failed, its log cut short), not behind.
bool CaughtUp(const CorrelationCtx& x, const std::set<int>& reporters, const Subject& sub) {
  const int progress = x.state.rules().fact(Fact::kLastOpcount);
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
}

// The ranks that reported nothing (silent_is_behind: they count as the ones behind).
std::vector<int> SilentSubjects(const CorrelationCtx& x, const std::set<int>& reporters) {
  std::vector<int> silent;
  const int fired = x.state.rules().fact(Fact::kWatchdogFired);
  for (int s : x.live) {
    const Subject& sub = x.state.subjects()[s];
    if (sub.rank < 0 || reporters.count(s)) continue;
    if (HasAnyFact(sub, x.c.require)) continue;
    // Its own watchdog fired (a flight-recorder notice of its timeout): it waited too,
    // its timeout line is only missing from the excerpt.
    if (fired >= 0 && sub.Has(fired)) continue;
    if (CaughtUp(x, reporters, sub)) continue;
    silent.push_back(s);
  }
  return silent;
}

// One key's values as numbers: the subjects of each, and how each is said.
struct NumericValues {
  std::map<long double, std::vector<int>> by_value;
  std::map<long double, std::string> text;
};

NumericValues NumericValuesOf(const FactSpec& spec, const std::map<int, const FactValue*>& key_values) {
  NumericValues nv;
  for (const auto& sv : key_values) {
    long double v;
    if (!ParseNumber(sv.second->value, spec.hex, &v)) continue;
    nv.by_value[v].push_back(sv.first);
    // NCCL prints opCounts in hex without a prefix: "opCount 27" is 39 ops.
    // Say both, "39 (0x27)", so the explanation cannot be misread.
    const std::string& raw = sv.second->value;
    nv.text[v] = spec.hex && v >= 0 && v < 1.8e19L
                     ? fmt::format("{} (0x{})", static_cast<uint64_t>(v), StartsWith(raw, "0x") ? raw.substr(2) : raw)
                     : raw;
  }
  return nv;
}

// The finding for one key when the extreme value (and the silent) are the
// few: the culprits' lines and one line of the others for contrast.
void EmitExtreme(CorrelationCtx& x, const FactSpec& spec, const std::string& key,
                 const std::map<int, const FactValue*>& key_values, const std::vector<int>& silent, NumericValues& nv) {
  size_t total = silent.size();
  for (const auto& bv : nv.by_value) total += bv.second.size();
  if (total < 2) return;
  std::vector<int> culprits = silent;
  std::string value = silent.empty() ? "" : "none (it reported no completed work)";
  if (nv.by_value.size() > 1) {
    auto& ext = x.c.spec.select == Select::kMax ? nv.by_value.rbegin()->second : nv.by_value.begin()->second;
    const std::string& t = x.c.spec.select == Select::kMax ? nv.text.rbegin()->second : nv.text.begin()->second;
    culprits.insert(culprits.end(), ext.begin(), ext.end());
    value += (value.empty() ? "" : " / ") + t;
  }
  if (culprits.empty() || culprits.size() * 2 > total) return;  // not an outlier
  // The most common value among the others.
  std::string majority;
  size_t best = 0;
  for (const auto& bv : nv.by_value) {
    if (std::find(culprits.begin(), culprits.end(), bv.second.front()) != culprits.end()) continue;
    if (bv.second.size() > best) {
      best = bv.second.size();
      majority = nv.text[bv.first];
    }
  }
  std::vector<const FactValue*> ev;
  for (int s : culprits) {
    auto it = key_values.find(s);
    if (it != key_values.end()) ev.push_back(it->second);
  }
  // In input order, not by subject index (see below): the evidence cap keeps the same lines.
  auto earlier = [](const FactValue* a, const FactValue* b) {
    return std::tie(a->evidence.file, a->evidence.line) < std::tie(b->evidence.file, b->evidence.line);
  };
  std::stable_sort(ev.begin(), ev.end(), earlier);
  // One line of the others: the earliest in the input, not the first subject
  // by index (subjects are numbered as the scan meets them, which the chunk
  // size can reorder: the report would differ between -j or chunk sizes).
  const FactValue* contrast = nullptr;
  for (const auto& sv : key_values) {
    if (std::find(culprits.begin(), culprits.end(), sv.first) != culprits.end()) continue;
    if (!contrast || earlier(sv.second, contrast)) contrast = sv.second;
  }
  if (contrast) ev.push_back(contrast);
  Finding f =
      x.Make(culprits,
             {{"key", key}, {"group", KeyPhrase(spec.key_kind, key)}, {"value", value}, {"majority", majority}}, key);
  x.AddEvidence(&f, ev);
  x.out->push_back(std::move(f));
}

}  // namespace

void Extreme(CorrelationCtx& x) {
  const FactSpec& spec = x.state.rules().facts()[x.c.fact];
  if (!x.c.require.empty()) {
    bool any = false;
    for (int s : x.live) any |= HasAnyFact(x.state.subjects()[s], x.c.require);
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
  for (const auto& kv : values) {
    std::vector<int> silent;
    if (x.c.spec.silent_is_behind && kv.first == main_key) silent = SilentSubjects(x, reporters);
    NumericValues nv = NumericValuesOf(spec, kv.second);
    // Sequences are compared within one group only. Lines that do not name
    // their process group or communicator (old watchdog formats: the empty
    // key) may come from several groups, whose numbers are unrelated: they
    // are compared only when they are close. Within one group the ranks block on
    // the same oldest unfinished collective, so a rank that is behind is a few
    // sequence numbers behind, never thousands.
    constexpr long double kUnknownGroupMaxGap = 64;
    const bool unknown_group = kv.first.empty() && spec.keyed && spec.key_kind != KeyKind::kName;
    if (unknown_group && !nv.by_value.empty() &&
        nv.by_value.rbegin()->first - nv.by_value.begin()->first > kUnknownGroupMaxGap) {
      continue;
    }
    EmitExtreme(x, spec, kv.first, kv.second, silent, nv);
  }
}

void FirstInTime(CorrelationCtx& x) {
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

void PeerMap(CorrelationCtx& x) {
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
    // A watchdog that caught the error checked enqueued work: past init too.
    for (Fact f : {Fact::kInitComplete, Fact::kTimeoutOp, Fact::kTimeoutSeq, Fact::kLastEnqueued, Fact::kLastOpcount,
                   Fact::kWatchdogFired}) {
      const int id = x.state.rules().fact(f);
      if (id < 0) continue;
      if (const FactValue* v = rep.Get(id)) running |= before(v->evidence);
      if (id < static_cast<int>(rep.keyed.size())) {
        for (const auto& kv : rep.keyed[id]) running |= before(kv.second.evidence);
      }
    }
    // Work that had completed (the watchdog's "last completed NCCL work: 88",
    // printed after the error) ran before it, whatever the order of the lines:
    // the reporter was past init (corpus hypercomputer-deepdive lab-13). Not
    // where a rank timed out: the job hung first, and connections closed as
    // its ranks aborted (corpus hypercomputer-deepdive lab-15).
    const int timeout = x.state.rules().fact(Fact::kTimeoutSeq);
    const bool timed_out = timeout >= 0 && std::any_of(x.live.begin(), x.live.end(),
                                                       [&](int s) { return x.state.subjects()[s].Has(timeout); });
    if (const int done = x.state.rules().fact(Fact::kLastCompleted);
        !timed_out && done >= 0 && done < static_cast<int>(rep.keyed.size())) {
      for (const auto& kv : rep.keyed[done]) {
        long double n;
        running |= ParseNumber(kv.second.value, false, &n) && n >= 1;
      }
    }
    // An error that came back through transport or proxy code was on a channel's
    // connection, whose peer the job's bootstrap named: not a foreign connection.
    if (const int chain = x.state.rules().fact(Fact::kTransportChain); chain >= 0) running |= rep.Has(chain);
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
  f.count = static_cast<int64_t>(top_n);
  // Re-render: {peer_ranks} / {hosts} depend on the suspects set above.
  Finding suspects_f;
  FillSubjects(x.state, suspects, &suspects_f);
  x.RenderTexts(&f, [&](const std::string& name, std::string* o) {
    if (name == "peer_hosts" || name == "hosts")
      o->append(top);
    else if (name == "peer_ranks")
      o->append(suspects.empty() ? "none of its processes' logs is among the inputs"
                                 : "rank(s) " + SubjectsText(suspects_f));
    else if (name == "ranks")
      o->append(suspects.empty() ? "?" : SubjectsText(suspects_f));
    else if (name == "reporters")
      o->append(SubjectsText(rep));
    else if (name == "count")
      o->append(std::to_string(top_n));
  });
  x.AddEvidence(&f, ev[top]);
  x.out->push_back(std::move(f));
}

}  // namespace ncclscan
