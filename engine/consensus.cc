#include "engine/consensus.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "engine/diagnosis.h"
#include "parsers/text_util.h"

namespace ncclscan {

const char* CallStateName(CallState s) {
  switch (s) {
    case CallState::kEnqueued: return "enqueued (scheduled)";
    case CallState::kStarted: return "started";
    case CallState::kCompleted: return "completed";
    default: return "not seen";
  }
}

namespace {

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string Shapes(const std::vector<std::vector<int64_t>>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    out += (i ? ", [" : "[");
    for (size_t j = 0; j < v[i].size(); ++j) out += (j ? ", " : "") + std::to_string(v[i][j]);
    out += "]";
  }
  return out + "]";
}

std::string Join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : sep) + x;
  return out;
}

// NCCL's ncclDataType_t codes as the COLL trace prints them (nccl.h).
std::string DtypeName(const std::string& code) {
  static const char* kNames[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                 "fp16", "fp32",  "fp64",  "bf16",   "fp8e4m3", "fp8e5m2"};
  int64_t v;
  std::string_view sv = code;
  if (ConsumeInt(&sv, &v) && sv.empty() && v >= 0 && v < 12) return kNames[v];
  return code;
}

// "send 1->2" / "recv 2<-1": the group-local peer.
bool ParseP2p(const std::string& name, bool* send, int* self, int* peer) {
  std::string_view s = name;
  if (StartsWith(s, "nccl:")) s.remove_prefix(5);
  bool is_send = StartsWith(s, "send ");
  bool is_recv = StartsWith(s, "recv ");
  if (!is_send && !is_recv) return false;
  s.remove_prefix(5);
  int64_t a, b;
  if (!ConsumeInt(&s, &a)) return false;
  if (StartsWith(s, "->") || StartsWith(s, "<-")) s.remove_prefix(2);
  else return false;
  if (!ConsumeInt(&s, &b)) return false;
  *send = is_send;
  *self = static_cast<int>(a);
  *peer = static_cast<int>(b);
  return true;
}

}  // namespace

void CollectiveModel::Keep(RankView* v, CollectiveCall c) {
  if (c.p2p) {
    if (v->p2p.size() >= kMaxP2p) v->p2p.erase(v->p2p.begin());
    v->p2p.push_back(std::move(c));
    return;
  }
  v->calls[c.seq] = std::move(c);
  while (v->calls.size() > kWindow) v->calls.erase(v->calls.begin());  // oldest sequences go
}

void CollectiveModel::AddDump(const FrFile& f, int file) {
  if (f.rank < 0) return;
  dump_ranks_.insert(f.rank);
  dump_paths_[f.rank] = f.path;
  const FrDump& d = f.dump;
  std::map<std::string, std::string> pg_name_of_id;  // entries tie pg ids to names
  for (const auto& e : d.entries) {
    if (!e.pg_id.empty() && !e.pg_name.empty()) pg_name_of_id[e.pg_id] = e.pg_name;
  }
  auto group = [&](const std::string& name) -> GroupView& {
    GroupView& g = groups_["pg " + name];
    g.id = "pg " + name;
    g.from_dump = true;
    auto it = d.pg_config.find(name);
    if (it != d.pg_config.end()) {
      if (g.desc.empty()) g.desc = it->second.desc;
      if (g.members.empty()) g.members = it->second.ranks;
    }
    return g;
  };
  for (const auto& pc : d.pg_config) configured_ranks_.insert(pc.second.ranks.begin(), pc.second.ranks.end());
  Evidence base;
  base.file = file;
  // Evidence cites the dump file; a pickle has no lines, so the "line" is the
  // 1-based position of the entry in `entries` (pg_status: 1), and the text
  // names the entry (record id, profiling name, top frame).
  const std::string where = file >= 0 ? "" : f.path + ": ";
  base.line = 1;
  for (const auto& ps : d.pg_status) {
    auto nit = pg_name_of_id.find(ps.first);
    std::string name = nit != pg_name_of_id.end() ? nit->second : ps.first;
    RankView& v = group(name).ranks[f.rank];
    v.last_enqueued = std::max(v.last_enqueued, ps.second.last_enqueued);
    v.last_started = std::max(v.last_started, ps.second.last_started);
    v.last_completed = std::max(v.last_completed, ps.second.last_completed);
    if (v.evidence.text.empty()) {
      v.evidence = base;
      v.evidence.text = fmt::format("{}pg_status[{}]: last enqueued {}, started {}, completed {}", where, ps.first,
                                    ps.second.last_enqueued, ps.second.last_started, ps.second.last_completed);
    }
  }
  int64_t position = 0;
  for (const auto& e : d.entries) {
    ++position;
    std::string name = e.pg_name.empty() ? e.pg_id : e.pg_name;
    GroupView& g = group(name);
    RankView& v = g.ranks[f.rank];
    CollectiveCall c;
    c.state = e.state == "completed" ? CallState::kCompleted
              : e.state == "started" ? CallState::kStarted
                                     : CallState::kEnqueued;
    std::string op = e.profiling_name;
    if (StartsWith(op, "nccl:")) op = op.substr(5);
    c.op = Upper(op);
    c.sizes = Shapes(e.input_sizes) + " -> " + Shapes(e.output_sizes);
    c.dtype = Join(e.input_dtypes, "/");
    if (e.output_dtypes != e.input_dtypes && !e.output_dtypes.empty()) c.dtype += " -> " + Join(e.output_dtypes, "/");
    c.evidence = base;
    c.evidence.line = position;
    c.evidence.text = fmt::format("{}record {} {} (pg {} seq {}, {}){}", where, e.record_id, e.profiling_name,
                                  name, e.is_p2p ? e.p2p_seq_id : e.collective_seq_id, e.state,
                                  e.top_frame.empty() ? "" : " at " + e.top_frame);
    c.evidence.time = -1;
    int self = -1, peer = -1;
    bool send = false;
    if (e.is_p2p && ParseP2p(e.profiling_name, &send, &self, &peer)) {
      c.p2p = true;
      c.send = send;
      c.op = send ? "SEND" : "RECV";
      // Peers in profiling names are group-local; pg_config maps them to global ranks.
      c.peer = peer >= 0 && peer < static_cast<int>(g.members.size()) ? g.members[peer] : peer;
      c.seq = e.p2p_seq_id;
      Keep(&v, std::move(c));
      continue;
    }
    if (e.is_p2p) continue;  // a p2p name this reader does not know: nothing to pair
    c.seq = e.collective_seq_id;
    if (c.seq < 0) continue;
    // Per-entry progress when pg_status is absent or older than the entries.
    v.last_enqueued = std::max(v.last_enqueued, c.seq);
    if (c.state >= CallState::kStarted) v.last_started = std::max(v.last_started, c.seq);
    if (c.state == CallState::kCompleted) v.last_completed = std::max(v.last_completed, c.seq);
    if (v.evidence.text.empty()) v.evidence = c.evidence;
    Keep(&v, std::move(c));
  }
}

// The token after `word` in a COLL trace line ("... count 1048576 datatype 7 ..."), "" if none.
static std::string_view TokenAfter(std::string_view line, std::string_view word) {
  size_t p = line.find(word);
  if (p == std::string_view::npos) return {};
  p += word.size();
  size_t e = line.find(' ', p);
  return line.substr(p, e == std::string_view::npos ? std::string_view::npos : e - p);
}

void CollectiveModel::AddCollTrace(const JobState& state) {
  // last_opcount (rules/coll.yaml) keeps, per communicator, the line of the
  // highest opCount: the rank's latest call, where it hangs. Its op, count,
  // datatype and root are read from that line, so tracing costs one fact a line.
  const int fact = state.rules().FindFact("last_opcount");
  if (fact < 0) return;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if (sub.rank < 0 || fact >= static_cast<int>(sub.keyed.size())) continue;
    for (const auto& kv : sub.keyed[fact]) {
      long double seq;
      if (!ParseNumber(kv.second.value, /*hex=*/true, &seq)) continue;
      std::string_view line = kv.second.evidence.text;
      size_t oc = line.find(": opCount ");
      if (oc == std::string_view::npos) continue;
      size_t ob = line.rfind(' ', oc);
      std::string_view op = line.substr(ob == std::string_view::npos ? 0 : ob + 1,
                                        oc - (ob == std::string_view::npos ? 0 : ob + 1));
      std::string_view count = TokenAfter(line, " count ");
      std::string_view dtype = TokenAfter(line, " datatype ");
      std::string_view root = TokenAfter(line, " root ");
      if (op.empty() || count.empty() || dtype.empty()) continue;
      const std::string id = "comm " + kv.first;
      GroupView& g = groups_[id];
      g.id = id;
      RankView& v = g.ranks[sub.rank];
      CollectiveCall c;
      c.seq = static_cast<int64_t>(seq);
      c.state = CallState::kEnqueued;
      c.op = Upper(std::string(op));
      c.sizes = "count " + std::string(count);
      c.dtype = DtypeName(std::string(dtype));
      c.evidence = kv.second.evidence;
      if (c.op == "SEND" || c.op == "RECV") {
        // The peer is a communicator-local rank the model cannot map yet: not paired here.
        continue;
      }
      // root matters to rooted collectives only (NCCL prints 0 for the others).
      if (c.op == "BROADCAST" || c.op == "REDUCE" || c.op == "GATHER" || c.op == "SCATTER") c.root = std::string(root);
      v.last_enqueued = std::max(v.last_enqueued, c.seq);
      if (v.evidence.file < 0) v.evidence = c.evidence;
      Keep(&v, std::move(c));
    }
  }
}

void CollectiveModel::AddWatchdog(const JobState& state) {
  const int seq_fact = state.rules().FindFact("timeout_seq");
  const int op_fact = state.rules().FindFact("timeout_op");
  const int size_fact = state.rules().FindFact("work_size");
  if (seq_fact < 0) return;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if (sub.rank < 0 || seq_fact >= static_cast<int>(sub.keyed.size())) continue;
    const FactValue* op = sub.Get(op_fact);
    for (const auto& kv : sub.keyed[seq_fact]) {
      long double seq;
      if (!ParseNumber(kv.second.value, false, &seq)) continue;
      // The watchdog line names no process group before PyTorch 2.2 ("-"):
      // such SeqNums are compared only with each other.
      const std::string id = kv.first == "-" ? "the process group" : "pg " + kv.first;
      GroupView& g = groups_[id];
      g.id = id;
      RankView& v = g.ranks[sub.rank];
      CollectiveCall c;
      c.seq = static_cast<int64_t>(seq);
      c.state = CallState::kStarted;
      c.op = op ? Upper(op->value) : "";
      // NumelIn/NumelOut of that collective ("{op} #{seq}" key of work_size).
      if (size_fact >= 0 && size_fact < static_cast<int>(sub.keyed.size())) {
        auto it = sub.keyed[size_fact].find(c.op + " #" + kv.second.value);
        if (it != sub.keyed[size_fact].end() && it->second.value != "/") c.sizes = "numel " + it->second.value;
      }
      c.evidence = kv.second.evidence;
      v.waiting_in = c.seq;
      if (v.evidence.file < 0) v.evidence = c.evidence;
      // A dump of the same rank and group already holds this sequence: keep the dump's.
      if (!v.calls.count(c.seq)) Keep(&v, std::move(c));
    }
  }
}

namespace {

using Vars = std::map<std::string, std::string>;

struct Checks {
  const JobState& state;
  const CollectiveModel& m;
  std::vector<Finding>* out;

  // A finding of correlation `c` naming `suspects` (global ranks), with `vars`.
  void Emit(const CompiledCorrelation& c, const std::vector<int>& suspects, const std::vector<int>& reporters,
            Vars vars, const std::string& group, std::vector<Evidence> evidence) const {
    Finding f = FindingOf(c.spec.id.value, c.spec.kind.value, c.spec.category, c.spec.title, c.spec.finding,
                          c.spec.references);
    f.group = group;
    f.ranks = suspects;
    // Hosts of the suspects, where a text log placed them.
    std::set<std::string> hosts;
    for (int s : state.LiveSubjects()) {
      const Subject& sub = state.subjects()[s];
      if (sub.rank >= 0 && !sub.host.empty() && std::count(suspects.begin(), suspects.end(), sub.rank)) {
        hosts.insert(sub.host);
      }
    }
    f.hosts.assign(hosts.begin(), hosts.end());
    f.count = static_cast<int64_t>(suspects.size());
    auto g = vars.find("group");
    if (g != vars.end()) {
      if (StartsWith(g->second, "pg ")) f.process_group = g->second.substr(3);
      else if (StartsWith(g->second, "comm ")) f.communicator = g->second.substr(5);
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
      if (f.first.file < 0 && e.file >= 0) f.first = Seen{e.time, e.file, e.line};
      f.evidence.push_back(std::move(e));
    }
    out->push_back(std::move(f));
  }

  // World size the job itself states: NCCL communicators' nranks (the largest:
  // the world communicator), PyTorch's default process-group size, pg_config.
  int WorldSize() const {
    int n = 0;
    for (const auto& kv : state.comms()) n = std::max(n, kv.second.nranks);
    const int world = state.rules().FindFact("world_size");
    for (int s : state.LiveSubjects()) {
      const FactValue* v = state.subjects()[s].Get(world);
      long double x;
      if (v && ParseNumber(v->value, false, &x) && x > 0 && x < (1 << 24)) n = std::max(n, static_cast<int>(x));
    }
    if (!m.configured_ranks().empty()) n = std::max(n, *m.configured_ranks().rbegin() + 1);
    return n;
  }

  std::set<int> PresentRanks() const {
    std::set<int> r = m.dump_ranks();
    for (int s : state.LiveSubjects()) {
      if (state.subjects()[s].rank >= 0) r.insert(state.subjects()[s].rank);
    }
    return r;
  }

  // What the text logs say about a rank: its first error (exception, OOM, NCCL WARN).
  std::string TextSays(int rank, std::vector<Evidence>* ev) const {
    const int first_error = state.rules().FindFact("first_error");
    for (int s : state.LiveSubjects()) {
      const Subject& sub = state.subjects()[s];
      if (sub.rank != rank) continue;
      if (const FactValue* v = sub.Get(first_error)) {
        if (ev) ev->push_back(v->evidence);
        return v->value;
      }
    }
    return "";
  }

  // never_joined: the world size is known, ranks wait in a collective (the
  // watchdog fired), and some ranks of the world left no trace in any input.
  void NeverJoined(const CompiledCorrelation& c) const {
    // With dumps, a rank without one is missing_dump's finding (it says more).
    if (!m.dump_ranks().empty()) return;
    const int timeout_seq = state.rules().FindFact("timeout_seq");
    const int timeout_op = state.rules().FindFact("timeout_op");
    const int first_error = state.rules().FindFact("first_error");
    std::vector<int> waiting;
    std::vector<Evidence> ev;
    std::string op, seq;
    for (int s : state.LiveSubjects()) {
      const Subject& sub = state.subjects()[s];
      // A rank of the input that failed on its own is the better suspect.
      if (sub.Has(first_error)) return;
      if (sub.rank < 0 || !sub.Has(timeout_seq)) continue;
      waiting.push_back(sub.rank);
      for (const auto& kv : sub.keyed[timeout_seq]) {
        if (seq.empty()) seq = kv.second.value;
        if (ev.size() < 3) ev.push_back(kv.second.evidence);
      }
      if (const FactValue* o = sub.Get(timeout_op); o && op.empty()) op = o->value;
    }
    if (waiting.empty()) return;
    const int world = WorldSize();
    const std::set<int> present = PresentRanks();
    std::vector<int> missing;
    for (int r = 0; r < world; ++r) {
      if (!present.count(r)) missing.push_back(r);
    }
    if (missing.empty()) return;
    Vars vars{{"group", "pg 0"},
              {"op", op},
              {"seq", seq},
              {"missing", CompactRanks(missing)},
              {"nranks", std::to_string(world)},
              {"reporters", CompactRanks(waiting)}};
    Emit(c, missing, waiting, vars, "world", ev);
  }

  // missing_dump: pg_config lists ranks that wrote no dump while others did.
  void MissingDump(const CompiledCorrelation& c) const {
    if (m.dump_ranks().empty()) return;
    // A rank whose file is there but unreadable (truncated, foreign) did dump:
    // that is an input problem (status partial), not evidence against the rank.
    std::set<int> unreadable;
    for (const auto& fi : state.files()) {
      if (!fi.error.empty()) {
        int r = RankFromDumpName(fi.path);
        if (r >= 0) unreadable.insert(r);
      }
    }
    std::vector<int> missing;
    for (int r : m.configured_ranks()) {
      if (!m.dump_ranks().count(r) && !unreadable.count(r)) missing.push_back(r);
    }
    if (missing.empty()) return;
    std::vector<Evidence> ev;
    std::string says;
    for (int r : missing) {
      std::string t = TextSays(r, &ev);
      if (!t.empty()) says += fmt::format(" The text log of rank {} says: {}.", r, t);
    }
    std::vector<int> dumped(m.dump_ranks().begin(), m.dump_ranks().end());
    for (const auto& kv : m.groups()) {
      for (const auto& rv : kv.second.ranks) {
        if (ev.size() < kMaxEvidencePerFinding && !rv.second.evidence.text.empty()) ev.push_back(rv.second.evidence);
        break;
      }
      break;
    }
    Vars vars{{"missing", CompactRanks(missing)},
              {"nranks", std::to_string(m.configured_ranks().size())},
              {"value", says}};
    Emit(c, missing, dumped, vars, "dumps", ev);
  }

  // behind: in one group of the dumps, the rank(s) furthest behind in what
  // they enqueued while the others went further.
  void Behind(const CompiledCorrelation& c) const {
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
  void Mismatch(const CompiledCorrelation& c) const {
    for (const auto& kv : m.groups()) {
      const GroupView& g = kv.second;
      if (g.ranks.size() < 2) continue;
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
        // The signature of each rank's call; the majority signature is the consensus.
        std::map<std::string, std::vector<int>> by_sig;
        auto sig = [&](const CollectiveCall& cc) {
          std::string s;
          for (const Field& fd : kFields) {
            if (variable && fd.member == &CollectiveCall::sizes) continue;
            s += cc.*fd.member + "\x1f";
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
        for (const Field& fd : kFields) {
          if (variable && fd.member == &CollectiveCall::sizes) continue;
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
  void NotStarted(const CompiledCorrelation& c) const {
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
  void P2pUnpaired(const CompiledCorrelation& c) const {
    for (const auto& kv : m.groups()) {
      const GroupView& g = kv.second;
      if (!g.from_dump) continue;
      // (src, dst) -> sends / receives in order.
      std::map<std::pair<int, int>, std::vector<const CollectiveCall*>> sends, recvs;
      for (const auto& rv : g.ranks) {
        for (const auto& p : rv.second.p2p) {
          if (p.send) sends[{rv.first, p.peer}].push_back(&p);
          else recvs[{p.peer, rv.first}].push_back(&p);
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
                    {"value", fmt::format("rank {} sends {} {} to rank {}, which receives {} {}", src, ss,
                                          s[i]->dtype, dst, rs, r[i]->dtype)}};
          Emit(c, {std::min(src, dst), std::max(src, dst)}, {}, vars, fmt::format("{} {}->{} size", g.id, src, dst),
               {s[i]->evidence, r[i]->evidence});
          reported = true;
        }
        if (s.size() > n) extra_send[pr] = s[n];
        if (r.size() > n) extra_recv[pr] = r[n];
      }
      std::set<std::pair<int, int>> told_send, told_recv;
      // The receiver chose another peer: a->d unreceived, and d receives from b, who never sends.
      for (const auto& es : extra_send) {
        const int a = es.first.first, d = es.first.second;
        for (const auto& er : extra_recv) {
          if (er.first.second != d || er.first.first == a || told_recv.count(er.first)) continue;
          const int b = er.first.first;
          Vars vars{{"group", g.id},
                    {"op", "SEND/RECV"},
                    {"value", fmt::format("rank {} sends to rank {}, but rank {} posted its receive from rank {} "
                                          "instead, which sends nothing to it (peer mismatch)",
                                          a, d, d, b)}};
          Emit(c, {d}, {a}, vars, fmt::format("{} {}->{} peer", g.id, a, d), {es.second->evidence, er.second->evidence});
          told_send.insert(es.first);
          told_recv.insert(er.first);
          break;
        }
      }
      // The sender chose another peer: a->x unreceived, and y receives from a.
      for (const auto& es : extra_send) {
        if (told_send.count(es.first)) continue;
        const int a = es.first.first, x = es.first.second;
        for (const auto& er : extra_recv) {
          if (er.first.first != a || er.first.second == x || told_recv.count(er.first)) continue;
          const int y = er.first.second;
          Vars vars{{"group", g.id},
                    {"op", "SEND/RECV"},
                    {"value", fmt::format("rank {} expects a send from rank {}, but rank {} sent to rank {} instead "
                                          "(peer mismatch)",
                                          y, a, a, x)}};
          Emit(c, {a}, {y}, vars, fmt::format("{} {}->{} peer", g.id, a, x), {es.second->evidence, er.second->evidence});
          told_send.insert(es.first);
          told_recv.insert(er.first);
          break;
        }
      }
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
  void Straggler(const CompiledCorrelation& c) const {
    const int killed = state.rules().FindFact("job_killed");
    const int opcount = state.rules().FindFact("last_opcount");
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
      auto hex = [](long double v) { return fmt::format("{} (0x{:x})", static_cast<uint64_t>(v), static_cast<uint64_t>(v)); };
      Vars vars{{"group", "comm " + kv.first},
                {"value", hex(by_v.begin()->first)},
                {"majority", hex(by_v.rbegin()->first)},
                {"source", how}};
      Emit(c, low, others, vars, "comm " + kv.first, ev);
    }
  }
};

}  // namespace

void RunCollectiveChecks(const JobState& state, std::vector<Finding>* out) {
  bool any = false;
  for (const CompiledCorrelation& c : state.rules().correlations()) any |= c.spec.kind.value == "collective";
  if (!any) return;
  CollectiveModel model;
  for (const FrFile& f : state.flight_recorders()) {
    int file = -1;
    for (size_t i = 0; i < state.files().size(); ++i) {
      if (state.files()[i].path == f.path) file = static_cast<int>(i);
    }
    model.AddDump(f, file);
  }
  model.AddCollTrace(state);
  model.AddWatchdog(state);
  Checks x{state, model, out};
  for (const CompiledCorrelation& c : state.rules().correlations()) {
    if (c.spec.kind.value != "collective" || !c.spec.enabled) continue;
    const std::string& k = c.spec.check.value;
    if (k == "never_joined") x.NeverJoined(c);
    else if (k == "missing_dump") x.MissingDump(c);
    else if (k == "behind") x.Behind(c);
    else if (k == "mismatch") x.Mismatch(c);
    else if (k == "not_started") x.NotStarted(c);
    else if (k == "p2p_unpaired") x.P2pUnpaired(c);
    else if (k == "straggler") x.Straggler(c);
  }
}

}  // namespace ncclscan
