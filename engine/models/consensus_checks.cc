#include "engine/models/consensus_checks.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/models/diagnosis.h"
#include "parsers/text_util.h"

namespace ncclscan {

// A finding of correlation `c` naming `suspects` (global ranks), with `vars`.
void Checks::Emit(const CompiledCorrelation& c, const std::vector<int>& suspects, const std::vector<int>& reporters,
                  Vars vars, const std::string& group, std::vector<Evidence> evidence,
                  const std::vector<std::string>* on_hosts) const {
  Finding f = FindingOf(c.spec.id.value, c.spec.kind, c.spec.category, c.spec.title, c.spec.finding, c.spec.references);
  f.group = group;
  f.ranks = suspects;
  // Hosts of the suspects, where a text log placed them.
  std::set<std::string> hosts;
  const std::set<int> named(suspects.begin(), suspects.end());
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if (sub.rank >= 0 && !sub.host.empty() && named.count(sub.rank)) {
      hosts.insert(sub.host);
    }
  }
  // (A finding about hosts, not ranks, names them itself.)
  if (on_hosts) hosts.insert(on_hosts->begin(), on_hosts->end());
  f.hosts.assign(hosts.begin(), hosts.end());
  f.count = static_cast<int64_t>(suspects.size());
  auto g = vars.find("group");
  if (g != vars.end()) {
    if (StartsWith(g->second, "pg "))
      f.process_group = g->second.substr(3);
    else if (StartsWith(g->second, "comm "))
      f.communicator = g->second.substr(5);
  }
  auto op = vars.find("op");
  if (op != vars.end()) f.op_type = op->second;
  auto seq = vars.find("seq");
  if (seq != vars.end()) f.sequence = seq->second;
  vars["ranks"] = suspects.empty() ? "?" : CompactRanks(suspects);
  vars["hosts"] = HostsText(f);
  vars["count"] = std::to_string(f.count);
  if (!vars.count("reporters")) vars["reporters"] = reporters.empty() ? "?" : CompactRanks(reporters);
  auto lookup = [&](const std::string& name, std::string* o) {
    auto it = vars.find(name);
    if (it != vars.end()) o->append(it->second);
  };
  f.explanation = c.explanation.Render(lookup);
  f.remediation = c.remediation.Render(lookup);
  for (auto& e : evidence) {
    if (f.evidence.size() >= kMaxEvidencePerFinding) break;
    if (e.file < 0 && e.text.empty()) continue;
    // First seen: the first evidence line, or the first with a time where
    // the lines before it have none (a start line printed without one).
    if (e.file >= 0 && (f.first.file < 0 || (f.first.time < 0 && e.time >= 0))) f.first = Seen{e.time, e.file, e.line};
    f.evidence.push_back(std::move(e));
  }
  out->push_back(std::move(f));
}

// behind: in one group of the dumps, the rank(s) furthest behind in what
// they enqueued while the others went further.
void Checks::Behind(const CompiledCorrelation& c) const {
  for (const auto& kv : m.groups()) {
    const GroupView& g = kv.second;
    if (!g.from_dump || g.ranks.size() < 2) continue;
    std::map<int64_t, std::vector<int>> by_enqueued;
    for (const auto& rv : g.ranks) by_enqueued[rv.second.last_enqueued].push_back(rv.first);
    if (by_enqueued.size() < 2) continue;
    const auto& low = by_enqueued.begin()->second;
    const int64_t low_seq = by_enqueued.begin()->first, high_seq = by_enqueued.rbegin()->first;
    if (low.size() * 2 > g.ranks.size() && g.ranks.size() > 2) continue;  // not an outlier
    std::vector<int> others;
    for (const auto& rv : g.ranks) {
      if (!std::count(low.begin(), low.end(), rv.first)) others.push_back(rv.first);
    }
    // The sequence the others wait in: the first one after the laggards'.
    int64_t wait = low_seq + 1;
    std::string op;
    std::vector<Evidence> ev;
    for (int r : low) ev.push_back(g.ranks.at(r).evidence);
    for (int r : others) {
      const auto& calls = g.ranks.at(r).calls;
      auto it = calls.find(wait);
      if (it != calls.end()) {
        if (op.empty()) op = it->second.op;
        if (ev.size() < kMaxEvidencePerFinding) ev.push_back(it->second.evidence);
      }
    }
    std::string says;
    for (int r : low) {
      std::string t = TextSays(r, &ev);
      if (!t.empty()) says += fmt::format(" Its text log says: {}.", t);
    }
    Vars vars{{"group", g.id},
              {"seq", std::to_string(wait)},
              {"op", op.empty() ? "the next collective" : op},
              {"value", std::to_string(low_seq)},
              {"majority", std::to_string(high_seq)},
              {"source", says}};
    Emit(c, low, others, vars, g.id + " behind", ev);
  }
}

// mismatch: one sequence of one group, called differently by a minority.
void Checks::Mismatch(const CompiledCorrelation& c) const {
  for (const auto& kv : m.groups()) {
    const GroupView& g = kv.second;
    if (g.ranks.size() < 2) continue;
    // opCounts of a communicator that carried sends / receives count each
    // rank's own launches: equal opCounts are not the same call there.
    if (g.coll_p2p) continue;
    std::set<int64_t> seqs;
    for (const auto& rv : g.ranks) {
      for (const auto& cv : rv.second.calls) seqs.insert(cv.first);
    }
    for (int64_t seq : seqs) {
      std::map<int, const CollectiveCall*> calls;
      for (const auto& rv : g.ranks) {
        auto it = rv.second.calls.find(seq);
        if (it != rv.second.calls.end()) calls[rv.first] = &it->second;
      }
      if (calls.size() < 2) continue;
      // Variable-size collectives have legitimately different sizes per rank.
      bool variable = false;
      for (const auto& cv : calls) {
        const std::string& op = cv.second->op;
        variable |= op.find("ALL_TO_ALL") != std::string::npos || op.find("ALLTOALL") != std::string::npos ||
                    op.find("COALESCED") != std::string::npos || op.find("GATHER_INTO") != std::string::npos;
      }
      struct Field {
        const char* name;
        std::string CollectiveCall::*member;
      };
      static const Field kFields[] = {{"op type", &CollectiveCall::op},
                                      {"size", &CollectiveCall::sizes},
                                      {"dtype", &CollectiveCall::dtype},
                                      {"root", &CollectiveCall::root}};
      // A field some rank's line does not show (a line cut inside "NumelIn=1, N",
      // an older format) is unknown there, not different: it is not compared.
      constexpr size_t kFieldCount = sizeof(kFields) / sizeof(kFields[0]);
      bool shown[kFieldCount];
      for (size_t i = 0; i < kFieldCount; ++i) {
        shown[i] = !(variable && kFields[i].member == &CollectiveCall::sizes);
        for (auto cv = calls.begin(); shown[i] && cv != calls.end(); ++cv)
          shown[i] = !(cv->second->*kFields[i].member).empty();
      }
      auto compared = [&](const Field& fd) { return shown[&fd - kFields]; };
      // The signature of each rank's call; the majority signature is the consensus.
      std::map<std::string, std::vector<int>> by_sig;
      auto sig = [&](const CollectiveCall& cc) {
        std::string s;
        for (const Field& fd : kFields) {
          if (compared(fd)) s += cc.*fd.member + "\x1f";
        }
        return s;
      };
      for (const auto& cv : calls) by_sig[sig(*cv.second)].push_back(cv.first);
      if (by_sig.size() < 2) continue;
      size_t best = 0;
      int ties = 0;
      std::string major;
      for (const auto& bs : by_sig) {
        if (bs.second.size() > best) {
          best = bs.second.size();
          major = bs.first;
          ties = 0;
        } else if (bs.second.size() == best) {
          ++ties;
        }
      }
      std::vector<int> minority, majority;
      // Fingerprints: two ranks' lines name each other, so only a majority of
      // three or more says which one departed (the line rule speaks otherwise).
      if (g.fingerprints && (ties || calls.size() < 3)) continue;
      if (ties) {
        // No majority (two ranks, or even split): every rank is named.
        for (const auto& cv : calls) minority.push_back(cv.first);
      } else {
        majority = by_sig[major];
        for (const auto& bs : by_sig) {
          if (bs.first != major) minority.insert(minority.end(), bs.second.begin(), bs.second.end());
        }
      }
      std::sort(minority.begin(), minority.end());
      const CollectiveCall& ref = *calls.at(majority.empty() ? calls.begin()->first : majority.front());
      std::vector<std::string> fields, values;
      std::set<std::string> ops;
      for (const auto& cv : calls) ops.insert(cv.second->op);
      for (const Field& fd : kFields) {
        if (!compared(fd)) continue;
        // A root belongs to rooted collectives only: between two op types it says nothing more.
        if (ops.size() > 1 && fd.member == &CollectiveCall::root) continue;
        std::set<std::string> vals;
        for (const auto& cv : calls) vals.insert(cv.second->*fd.member);
        if (vals.size() < 2) continue;
        fields.push_back(fd.name);
        for (int r : minority) {
          const CollectiveCall& mc = *calls.at(r);
          if (mc.*fd.member != ref.*fd.member) {
            values.push_back(fmt::format("rank {} {} {}", r, fd.name, mc.*fd.member));
          }
        }
        if (!majority.empty()) {
          values.push_back(fmt::format("ranks {} {} {}", CompactRanks(majority), fd.name, ref.*fd.member));
        }
      }
      std::vector<Evidence> ev;
      for (int r : minority) ev.push_back(calls.at(r)->evidence);
      if (!majority.empty()) ev.push_back(calls.at(majority.front())->evidence);
      Vars vars{{"group", g.id},
                {"seq", std::to_string(seq)},
                {"op", ref.op},
                {"fields", Join(fields)},
                {"value", Join(values, "; ")},
                {"majority", majority.empty() ? "(no majority)" : CompactRanks(majority)}};
      Emit(c, minority, majority, vars, g.id + " #" + std::to_string(seq) + " " + Join(fields), ev);
    }
  }
}

// not_started: the same sequence started on some ranks but is only
// enqueued on others (their GPU stream is stuck in something earlier).
void Checks::NotStarted(const CompiledCorrelation& c) const {
  for (const auto& kv : m.groups()) {
    const GroupView& g = kv.second;
    if (!g.from_dump) continue;
    std::set<int64_t> seqs;
    for (const auto& rv : g.ranks) {
      for (const auto& cv : rv.second.calls) {
        if (cv.second.state == CallState::kEnqueued) seqs.insert(cv.first);
      }
    }
    for (int64_t seq : seqs) {
      std::vector<int> stuck, started;
      std::vector<Evidence> ev;
      std::string op;
      for (const auto& rv : g.ranks) {
        auto it = rv.second.calls.find(seq);
        if (it == rv.second.calls.end()) continue;
        if (it->second.state == CallState::kEnqueued) {
          stuck.push_back(rv.first);
          ev.push_back(it->second.evidence);
          op = it->second.op;
        } else {
          started.push_back(rv.first);
        }
      }
      if (stuck.empty() || started.empty()) continue;
      for (int r : started) {
        if (ev.size() < kMaxEvidencePerFinding) ev.push_back(g.ranks.at(r).calls.at(seq).evidence);
        break;
      }
      Vars vars{{"group", g.id}, {"seq", std::to_string(seq)}, {"op", op}};
      Emit(c, stuck, started, vars, g.id + " #" + std::to_string(seq), ev);
      break;  // the first such sequence: later ones queue behind it
    }
  }
}

// p2p_unpaired: each send a->b must meet a receive at b from a with the
// same size, counted per (group, a, b). A receive posted from the wrong
// peer shows as a send nobody receives plus a receive nobody sends: the
// two are told as one finding against the rank that chose the peer.
void Checks::PeerMismatches(const CompiledCorrelation& c, const GroupView& g, const PeerOps& extra_send,
                            const PeerOps& extra_recv, std::set<std::pair<int, int>>* told_send,
                            std::set<std::pair<int, int>>* told_recv) const {
  auto tell = [&](const auto& es, const auto& er, int culprit, int victim, std::string value) {
    Vars vars{{"group", g.id}, {"op", "SEND/RECV"}, {"value", std::move(value)}};
    Emit(c, {culprit}, {victim}, vars, fmt::format("{} {}->{} peer", g.id, es.first.first, es.first.second),
         {es.second->evidence, er.second->evidence});
    told_send->insert(es.first);
    told_recv->insert(er.first);
  };
  // The receiver chose another peer: a->d unreceived, and d receives from b, who never sends.
  for (const auto& es : extra_send) {
    const int a = es.first.first, d = es.first.second;
    for (const auto& er : extra_recv) {
      if (er.first.second != d || er.first.first == a || told_recv->count(er.first)) continue;
      tell(es, er, d, a,
           fmt::format("rank {} sends to rank {}, but rank {} posted its receive from rank {} instead, which sends "
                       "nothing to it (peer mismatch)",
                       a, d, d, er.first.first));
      break;
    }
  }
  // The sender chose another peer: a->x unreceived, and y receives from a.
  for (const auto& es : extra_send) {
    if (told_send->count(es.first)) continue;
    const int a = es.first.first, x = es.first.second;
    for (const auto& er : extra_recv) {
      if (er.first.first != a || er.first.second == x || told_recv->count(er.first)) continue;
      const int y = er.first.second;
      tell(es, er, a, y,
           fmt::format("rank {} expects a send from rank {}, but rank {} sent to rank {} instead (peer mismatch)", y, a,
                       a, x));
      break;
    }
  }
}

void Checks::P2pUnpaired(const CompiledCorrelation& c) const {
  for (const auto& kv : m.groups()) {
    const GroupView& g = kv.second;
    if (!g.from_dump) continue;
    // (src, dst) -> sends / receives in order.
    std::map<std::pair<int, int>, std::vector<const CollectiveCall*>> sends, recvs;
    for (const auto& rv : g.ranks) {
      for (const auto& p : rv.second.p2p) {
        if (p.send)
          sends[{rv.first, p.peer}].push_back(&p);
        else
          recvs[{p.peer, rv.first}].push_back(&p);
      }
    }
    std::set<std::pair<int, int>> pairs;
    for (const auto& s : sends) pairs.insert(s.first);
    for (const auto& r : recvs) pairs.insert(r.first);
    // Surplus ops per pair, after pairing in order.
    std::map<std::pair<int, int>, const CollectiveCall*> extra_send, extra_recv;
    for (const auto& pr : pairs) {
      const int src = pr.first, dst = pr.second;
      // Only ranks that dumped can be compared: a missing dump is missing_dump's.
      if (!m.dump_ranks().count(src) || !m.dump_ranks().count(dst)) continue;
      const auto& s = sends[pr];
      const auto& r = recvs[pr];
      const size_t n = std::min(s.size(), r.size());
      bool reported = false;
      for (size_t i = 0; i < n && !reported; ++i) {
        // A send's input and a receive's output are the same tensor shape.
        std::string ss = s[i]->sizes.substr(0, s[i]->sizes.find(" -> "));
        std::string rs = r[i]->sizes.substr(0, r[i]->sizes.find(" -> "));
        if (ss == rs && s[i]->dtype == r[i]->dtype) continue;
        Vars vars{{"group", g.id},
                  {"op", "SEND/RECV"},
                  {"value", fmt::format("rank {} sends {} {} to rank {}, which receives {} {}", src, ss, s[i]->dtype,
                                        dst, rs, r[i]->dtype)}};
        Emit(c, {std::min(src, dst), std::max(src, dst)}, {}, vars, fmt::format("{} {}->{} size", g.id, src, dst),
             {s[i]->evidence, r[i]->evidence});
        reported = true;
      }
      if (s.size() > n) extra_send[pr] = s[n];
      if (r.size() > n) extra_recv[pr] = r[n];
    }
    std::set<std::pair<int, int>> told_send, told_recv;
    PeerMismatches(c, g, extra_send, extra_recv, &told_send, &told_recv);
    // What is left: a side that posted an op its partner never posted; the partner is the suspect.
    for (const auto& es : extra_send) {
      if (told_send.count(es.first)) continue;
      const int a = es.first.first, d = es.first.second;
      Vars vars{{"group", g.id},
                {"op", "SEND/RECV"},
                {"value", fmt::format("rank {} posted a send to rank {} that rank {} never receives", a, d, d)}};
      Emit(c, {d}, {a}, vars, fmt::format("{} {}->{} unreceived", g.id, a, d), {es.second->evidence});
    }
    for (const auto& er : extra_recv) {
      if (told_recv.count(er.first)) continue;
      const int a = er.first.first, d = er.first.second;
      Vars vars{{"group", g.id},
                {"op", "SEND/RECV"},
                {"value", fmt::format("rank {} posted a receive from rank {} that rank {} never sends", d, a, a)}};
      Emit(c, {a}, {d}, vars, fmt::format("{} {}->{} unsent", g.id, a, d), {er.second->evidence});
    }
  }
}

// straggler: the job was killed from outside while one rank was behind in
// its COLL trace: the lowest progress is the culprit of the missed deadline.
void Checks::Straggler(const CompiledCorrelation& c) const {
  const int killed = state.rules().fact(Fact::kJobKilled);
  const int opcount = state.rules().fact(Fact::kLastOpcount);
  if (killed < 0 || opcount < 0) return;
  std::vector<Evidence> kill_ev;
  std::string how;
  for (int s : state.LiveSubjects()) {
    if (const FactValue* v = state.subjects()[s].Get(killed)) {
      if (how.empty()) how = v->value;
      kill_ev.push_back(v->evidence);
      break;
    }
  }
  if (how.empty()) return;
  std::map<std::string, std::map<int, std::pair<long double, const FactValue*>>> by_comm;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if (sub.rank < 0 || opcount >= static_cast<int>(sub.keyed.size())) continue;
    for (const auto& kv : sub.keyed[opcount]) {
      long double v;
      if (ParseNumber(kv.second.value, true, &v)) by_comm[kv.first][sub.rank] = {v, &kv.second};
    }
  }
  for (const auto& kv : by_comm) {
    if (kv.second.size() < 2) continue;
    // Where sends and receives share the communicator, each rank's opCount
    // counts its own launches: lower is not behind.
    auto g = m.groups().find("comm " + kv.first);
    if (g != m.groups().end() && g->second.coll_p2p) continue;
    std::map<long double, std::vector<int>> by_v;
    for (const auto& rv : kv.second) by_v[rv.second.first].push_back(rv.first);
    if (by_v.size() < 2) continue;
    const auto& low = by_v.begin()->second;
    if (low.size() * 2 > kv.second.size() && kv.second.size() > 2) continue;
    std::vector<int> others;
    for (const auto& rv : kv.second) {
      if (!std::count(low.begin(), low.end(), rv.first)) others.push_back(rv.first);
    }
    std::vector<Evidence> ev;
    for (int r : low) ev.push_back(kv.second.at(r).second->evidence);
    ev.push_back(kv.second.at(others.front()).second->evidence);
    ev.insert(ev.end(), kill_ev.begin(), kill_ev.end());
    auto hex = [](long double v) {
      return fmt::format("{} (0x{:x})", static_cast<uint64_t>(v), static_cast<uint64_t>(v));
    };
    Vars vars{{"group", "comm " + kv.first},
              {"value", hex(by_v.begin()->first)},
              {"majority", hex(by_v.rbegin()->first)},
              {"source", how}};
    Emit(c, low, others, vars, "comm " + kv.first, ev);
  }
}

// p2p_unpaired from the COLL trace: per communicator and ordered pair (a, b),
// the sends a posted to b and the receives b posted from a over the whole
// trace (p2p_last counts them; peers mapped to global ranks by the Init
// lines). Equal numbers: the latest of each are the same transfer, so their
// count and datatype must agree. Unequal: the surplus side waits forever; told
// as in the dumps' check — a receive from the wrong peer against the rank that
// chose it, else against the partner that never posted its side. Both ends
// must have traced the communicator: a rank without a trace is not evidence.
void Checks::P2pUnpairedColl(const CompiledCorrelation& c) const {
  struct Side {
    const CollectiveCall* op = nullptr;
    int64_t n = 0;
  };
  for (const auto& kv : m.groups()) {
    const GroupView& g = kv.second;
    if (!g.coll_p2p) continue;
    std::map<std::pair<int, int>, Side> sends, recvs;  // (src, dst)
    for (const auto& rv : g.ranks) {
      for (const auto& p : rv.second.p2p) {
        if (p.peer < 0) continue;
        if (p.send)
          sends[{rv.first, p.peer}] = Side{&p, p.calls};
        else
          recvs[{p.peer, rv.first}] = Side{&p, p.calls};
      }
    }
    std::set<std::pair<int, int>> pairs;
    for (const auto& x : sends) pairs.insert(x.first);
    for (const auto& x : recvs) pairs.insert(x.first);
    std::map<std::pair<int, int>, Side> extra_send, extra_recv;
    for (const auto& pr : pairs) {
      const int src = pr.first, dst = pr.second;
      if (!g.ranks.count(src) || !g.ranks.count(dst)) continue;
      const Side s = sends[pr], r = recvs[pr];
      if (s.n == r.n) {
        if (s.op && r.op && (s.op->sizes != r.op->sizes || s.op->dtype != r.op->dtype)) {
          Vars vars{{"group", g.id},
                    {"op", "SEND/RECV"},
                    {"value", fmt::format("rank {} sends {} {} to rank {}, which receives {} {} (the latest of {} "
                                          "each in the COLL trace)",
                                          src, s.op->sizes, s.op->dtype, dst, r.op->sizes, r.op->dtype, s.n)}};
          Emit(c, {std::min(src, dst), std::max(src, dst)}, {}, vars, fmt::format("{} {}->{} size", g.id, src, dst),
               {s.op->evidence, r.op->evidence});
        }
        continue;
      }
      if (s.n > r.n)
        extra_send[pr] = Side{s.op, s.n - r.n};
      else
        extra_recv[pr] = Side{r.op, r.n - s.n};
    }
    std::set<std::pair<int, int>> told_send, told_recv;
    PeerOps send_ops, recv_ops;
    for (const auto& es : extra_send) send_ops[es.first] = es.second.op;
    for (const auto& er : extra_recv) recv_ops[er.first] = er.second.op;
    PeerMismatches(c, g, send_ops, recv_ops, &told_send, &told_recv);
    for (const auto& es : extra_send) {
      if (told_send.count(es.first)) continue;
      const int a = es.first.first, d = es.first.second;
      const int64_t posted = sends[es.first].n;
      Vars vars{{"group", g.id},
                {"op", "SEND/RECV"},
                {"value", fmt::format("rank {} posted {} send(s) to rank {}, which posted only {} receive(s) from it: "
                                      "rank {} never receives the last {}",
                                      a, posted, d, posted - es.second.n, d, es.second.n)}};
      Emit(c, {d}, {a}, vars, fmt::format("{} {}->{} unreceived", g.id, a, d), {es.second.op->evidence});
    }
    for (const auto& er : extra_recv) {
      if (told_recv.count(er.first)) continue;
      const int a = er.first.first, d = er.first.second;
      const int64_t posted = recvs[er.first].n;
      Vars vars{{"group", g.id},
                {"op", "SEND/RECV"},
                {"value", fmt::format("rank {} posted {} receive(s) from rank {}, which posted only {} send(s) to it: "
                                      "rank {} never sends the last {}",
                                      d, posted, a, posted - er.second.n, a, er.second.n)}};
      Emit(c, {a}, {d}, vars, fmt::format("{} {}->{} unsent", g.id, a, d), {er.second.op->evidence});
    }
  }
}

}  // namespace ncclscan
