#include "engine/models/consensus.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "engine/models/consensus_checks.h"
#include "engine/models/diagnosis.h"
#include "parsers/text_util.h"

namespace ncclscan {

std::string PgName(const std::string& pg) { return pg.empty() ? std::string("the process group") : "pg " + pg; }

const char* CallStateName(CallState s) {
  switch (s) {
    case CallState::kEnqueued:
      return "enqueued (scheduled)";
    case CallState::kStarted:
      return "started";
    case CallState::kCompleted:
      return "completed";
    default:
      return "not seen";
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

// NCCL's ncclDataType_t codes as the COLL trace prints them (nccl.h).
std::string DtypeName(const std::string& code) {
  static const char* kNames[] = {"int8", "uint8", "int32", "uint32", "int64",   "uint64",
                                 "fp16", "fp32",  "fp64",  "bf16",   "fp8e4m3", "fp8e5m2"};
  int64_t v;
  if (ParseInt(code, &v) && v >= 0 && v < 12) return kNames[v];
  return code;
}

// A sequence number or opCount as an int64_t: a value past its range (a
// corrupt line, 25 digits) is no sequence, rather than undefined behaviour.
bool SequenceFits(long double v) { return v >= 0 && v < 9.0e18L; }

// "send 1->2" / "recv 2<-1": the group-local peer.
bool ParseP2p(const std::string& name, bool* send, int* self, int* peer) {
  std::string_view s = name;
  if (StartsWith(s, "nccl:")) s.remove_prefix(5);
  bool is_send = StartsWith(s, "send ");
  bool is_recv = StartsWith(s, "recv ");
  if (!is_send && !is_recv) return false;
  s.remove_prefix(5);
  // Group ranks that do not fit an int are no ranks (never wrapped).
  int64_t a, b;
  if (ConsumeIntBelow(&s, kMaxRanks, &a) != IntParse::kOk) return false;
  if (StartsWith(s, "->") || StartsWith(s, "<-"))
    s.remove_prefix(2);
  else
    return false;
  if (ConsumeIntBelow(&s, kMaxRanks, &b) != IntParse::kOk) return false;
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
    GroupView& g = groups_[PgName(name)];
    g.id = PgName(name);
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
    c.evidence.text = fmt::format("{}record {} {} (pg {} seq {}, {}){}", where, e.record_id, e.profiling_name, name,
                                  e.is_p2p ? e.p2p_seq_id : e.collective_seq_id, e.state,
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

void CollectiveModel::AddCollTrace(const JobState& state) {
  // last_opcount (rules/coll.yaml) keeps, per communicator, the highest
  // opCount: the rank's latest call, where it hangs, with that call's op,
  // count, datatype and root (the fact's fields).
  const int fact = state.rules().fact(Fact::kLastOpcount);
  if (fact < 0) return;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if (sub.rank < 0 || fact >= static_cast<int>(sub.keyed.size())) continue;
    for (const auto& kv : sub.keyed[fact]) {
      long double seq;
      if (!ParseNumber(kv.second.value, /*hex=*/true, &seq) || !SequenceFits(seq)) continue;
      const FactValue& call = kv.second;
      std::string_view op = FieldOf(call, CollField::kOp);
      std::string_view count = FieldOf(call, CollField::kCount);
      std::string_view dtype = FieldOf(call, CollField::kDatatype);
      std::string_view root = FieldOf(call, CollField::kRoot);
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
  AddCollP2p(state);
}

void CollectiveModel::AddCollP2p(const JobState& state) {
  // p2p_last (rules/coll.yaml NCCL-COLL-P2P) keeps, per communicator, the
  // latest send to and receive from each peer ("<commId> Send 3") and how many
  // lines set it: the whole trace's count per pair, at one fact entry per run.
  const int fact = state.rules().fact(Fact::kP2pLast);
  if (fact < 0) return;
  // The peer NCCL prints is communicator-local: commId -> local rank -> global
  // rank, from each process's Init lines (its subject may since be merged).
  std::map<std::string, std::map<int, int>> global_of;
  const int n = static_cast<int>(state.subjects().size());
  for (const auto& kv : state.comm_ranks()) {
    const int s = state.LiveSubject(kv.first);
    if (s < 0 || s >= n || state.subjects()[s].rank < 0) continue;
    for (const auto& cr : kv.second) global_of[cr.first][cr.second] = state.subjects()[s].rank;
  }
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if (sub.rank < 0 || fact >= static_cast<int>(sub.keyed.size())) continue;
    for (const auto& kv : sub.keyed[fact]) {
      // The key is a communicator's (KeyKind::kComm: the commId, then what
      // tells the calls apart); the direction and the peer are fields.
      const std::string comm = kv.first.substr(0, kv.first.find(' '));
      const std::string_view dir = FieldOf(kv.second, P2pField::kDir);
      std::string_view lv = FieldOf(kv.second, P2pField::kPeer);
      int64_t local;
      // "<commId> Broadcast 0": a collective called without a send buffer.
      if ((dir != "Send" && dir != "Recv") || !ConsumeInt(&lv, &local) || !lv.empty()) continue;
      long double seq;
      if (!ParseNumber(kv.second.value, /*hex=*/true, &seq) || !SequenceFits(seq)) continue;
      std::string_view count = FieldOf(kv.second, P2pField::kCount);
      std::string_view dtype = FieldOf(kv.second, P2pField::kDatatype);
      const std::string id = "comm " + comm;
      GroupView& g = groups_[id];
      g.id = id;
      g.coll_p2p = true;
      RankView& v = g.ranks[sub.rank];
      CollectiveCall c;
      c.p2p = true;
      c.send = dir == "Send";
      c.op = c.send ? "SEND" : "RECV";
      c.seq = static_cast<int64_t>(seq);
      c.state = CallState::kEnqueued;
      c.sizes = "count " + std::string(count);
      c.dtype = DtypeName(std::string(dtype));
      c.calls = kv.second.count;
      c.evidence = kv.second.evidence;
      auto gm = global_of.find(comm);
      if (gm != global_of.end()) {
        auto it = gm->second.find(static_cast<int>(local));
        if (it != gm->second.end()) c.peer = it->second;
      }
      Keep(&v, std::move(c));
    }
  }
}

void CollectiveModel::AddWatchdog(const JobState& state) {
  const int seq_fact = state.rules().fact(Fact::kTimeoutSeq);
  const int op_fact = state.rules().fact(Fact::kTimeoutOp);
  const int size_fact = state.rules().fact(Fact::kWorkSize);
  if (seq_fact < 0) return;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if (sub.rank < 0 || seq_fact >= static_cast<int>(sub.keyed.size())) continue;
    const FactValue* op = sub.Get(op_fact);
    for (const auto& kv : sub.keyed[seq_fact]) {
      long double seq;
      if (!ParseNumber(kv.second.value, false, &seq) || !SequenceFits(seq)) continue;
      // The watchdog line names no process group before PyTorch 2.2 (the
      // empty key): such SeqNums are compared only with each other.
      const std::string id = PgName(kv.first);
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

void CollectiveModel::AddFingerprints(const JobState& state) {
  const int fact = state.rules().fact(Fact::kCollectiveFingerprint);
  if (fact < 0) return;
  // A rank's own line first (it names its own call first), then what other
  // ranks' lines say of it.
  for (const bool own : {true, false}) {
    for (const Subject& sub : state.subjects()) {
      if (fact >= static_cast<int>(sub.keyed.size())) continue;
      AddFingerprintsOf(sub, fact, own);
    }
  }
}

void CollectiveModel::AddFingerprintsOf(const Subject& sub, int fact, bool own) {
  for (const auto& kv : sub.keyed[fact]) {
    long double rank, seq = 0;
    const std::string& v = kv.second.value;
    const size_t hash = v.rfind(" #");
    if (!ParseNumber(kv.first, false, &rank) || rank < 0 || rank >= kMaxRanks || hash == std::string::npos ||
        hash == 0 || own != (static_cast<int>(rank) == sub.rank)) {
      continue;
    }
    // A fingerprint without a SequenceNumber (PyTorch < 1.13) is call 0.
    const std::string seq_text = v.substr(hash + 2);
    if (!seq_text.empty() && (!ParseNumber(seq_text, false, &seq) || !SequenceFits(seq))) continue;
    GroupView& g = groups_["the collective fingerprints"];
    g.id = "the collective fingerprints";
    g.fingerprints = true;
    RankView& rv = g.ranks[static_cast<int>(rank)];
    CollectiveCall c;
    c.seq = static_cast<int64_t>(seq);
    c.state = CallState::kStarted;
    c.op = Upper(v.substr(0, hash));
    c.evidence = kv.second.evidence;
    if (rv.evidence.file < 0) rv.evidence = c.evidence;
    // The first report of a rank's call stands.
    if (!rv.calls.count(c.seq)) Keep(&rv, std::move(c));
  }
}

void RunCollectiveChecks(const JobState& state, std::vector<Finding>* out, std::vector<std::string>* errors) {
  bool any = false;
  for (const CompiledCorrelation& c : state.rules().correlations()) any |= c.spec.kind == CorrelationKind::kCollective;
  if (!any) return;
  CollectiveModel model;
  for (const FrFile& f : state.flight_recorders()) {
    int file = -1;
    for (size_t i = 0; i < state.files().size(); ++i) {
      if (state.files()[i].path == f.path) file = static_cast<int>(i);
    }
    model.AddDump(f, file);
  }
  bool built = true;
  RunGuarded("collective model", errors, [&] {
    built = false;
    model.AddCollTrace(state);
    model.AddWatchdog(state);
    model.AddFingerprints(state);
    built = true;
  });
  if (!built) return;
  Checks x{state, model, out};
  for (const CompiledCorrelation& c : state.rules().correlations()) {
    if (c.spec.kind != CorrelationKind::kCollective || !c.spec.enabled) continue;
    RunGuarded(c.spec.id.value, errors, [&] {
      switch (c.spec.check) {
        case CollectiveCheck::kStoreOverfull:
          x.StoreOverfull(c);
          break;
        case CollectiveCheck::kNeverJoined:
          x.NeverJoined(c);
          break;
        case CollectiveCheck::kMissingDump:
          x.MissingDump(c);
          break;
        case CollectiveCheck::kBehind:
          x.Behind(c);
          break;
        case CollectiveCheck::kMismatch:
          x.Mismatch(c);
          break;
        case CollectiveCheck::kNotStarted:
          x.NotStarted(c);
          x.NotStartedText(c);
          break;
        case CollectiveCheck::kDiedFirst:
          x.DiedFirst(c);
          break;
        case CollectiveCheck::kArrivedLate:
          x.ArrivedLate(c);
          break;
        case CollectiveCheck::kP2pUnpaired:
          x.P2pUnpaired(c);
          x.P2pUnpairedColl(c);
          break;
        case CollectiveCheck::kStraggler:
          x.Straggler(c);
          break;
        case CollectiveCheck::kStopped:
          x.Stopped(c);
          break;
        case CollectiveCheck::kStoppedCollectives:
          x.StoppedInCollectives(c);
          break;
        case CollectiveCheck::kLoneSubmitter:
          x.LoneSubmitter(c);
          break;
        case CollectiveCheck::kRankZeroAlone:
          x.RankZeroAlone(c);
          break;
        case CollectiveCheck::kNoProgress:
          x.NoProgress(c);
          break;
        case CollectiveCheck::kNcclTestsBandwidth:
          x.NcclTestsBandwidth(c);
          break;
        case CollectiveCheck::kTopoGdrDistance:
          x.TopoGdrDistance(c);
          break;
        case CollectiveCheck::kTopoP2pPath:
          x.TopoP2pPath(c);
          break;
        case CollectiveCheck::kDuplicateGpu:
          x.DuplicateGpu(c);
          break;
        case CollectiveCheck::kNeverStarted:
          x.NeverStarted(c);
          break;
        case CollectiveCheck::kStartedTwice:
          x.StartedTwice(c);
          break;
        case CollectiveCheck::kEndedAbnormally:
          x.EndedAbnormally(c);
          break;
        case CollectiveCheck::kEndedPartly:
          x.EndedPartly(c);
          break;
        case CollectiveCheck::kShmDespiteNvlink:
          x.ShmDespiteNvlink(c);
          break;
        case CollectiveCheck::kCount:
          break;  // refused by the loader
      }
    });
  }
}

}  // namespace ncclscan
