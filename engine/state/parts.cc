// JobState's parts (engine/state/parts.h): files, subjects, communicators,
// line findings, identity clues and counters, each with its encoding and its
// merge with the same part of a later state. The Flight Recorder dumps' part
// is in parts_dumps.cc.
#include "engine/state/parts.h"

#include <algorithm>

#include "engine/state/wire.h"
#include "parsers/parsed_line.h"

namespace ncclscan {

namespace {

// Ranks are below 2^24 wherever a scan makes them (ConsumeIntBelow): a
// decoded one past that could size a per-rank table in the correlations.
bool RankOk(int64_t v) { return v >= -1 && v < kMaxRanks; }

// A map whose keys are subject indices.
template <typename Map>
void CheckSubjectKeys(WireReader* r, const Map& m, const Limits& l) {
  if (!m.empty() && (m.begin()->first < 0 || static_cast<size_t>(m.rbegin()->first) >= l.subjects)) r->Fail();
}

template <typename Map>
void AddCounts(Map* into, const Map& from) {
  for (const auto& kv : from) (*into)[kv.first] += kv.second;
}

void PutInts(WireWriter* w, const std::set<int>& s) {
  w->U(s.size());
  for (int x : s) w->I(x);
}

}  // namespace

// ---- counters ----

void Counters::Encode(WireWriter* w) const {
  Each(*this, [&](uint64_t v) { w->U(v); });
  w->U(static_cast<uint64_t>(year_min));
  w->U(static_cast<uint64_t>(year_max));
}

void Counters::Decode(WireReader* r) {
  Each(*this, [&](uint64_t& v) { v = r->U(); });
  const uint64_t lo = r->U(), hi = r->U();
  if (lo > 9999 || hi > 9999 || lo > hi || (lo == 0) != (hi == 0)) r->Fail();
  year_min = static_cast<int>(lo);
  year_max = static_cast<int>(hi);
}

void Remap::Fix(Evidence* e) const {
  e->file = File(e->file);
  e->subject = Subject(e->subject);
  if (e->origin >= 0) {
    e->origin = origin[e->origin];
    if (e->origin < 0) e->origin_line = 0;
  }
}

// ---- files and origins ----

int InputFiles::InternOrigin(std::string_view name) {
  auto it = origin_index.find(name);
  if (it != origin_index.end()) return it->second;
  if (origins.size() >= kMaxOrigins) return -1;
  origins.emplace_back(name);
  origin_index.emplace(std::string(name), static_cast<int>(origins.size()) - 1);
  return static_cast<int>(origins.size()) - 1;
}

void InputFiles::Encode(WireWriter* w) const {
  w->U(files.size());
  for (const FileInfo& f : files) {
    w->S(f.path);
    w->U(f.bytes);
    w->U(f.lines);
    w->S(f.error);
    w->I(f.path_rank);
    w->S(f.path_host);
    w->I(f.path_pid);
  }
  PutPairs(w, skipped.count);
  w->U(skipped.paths.size());
  for (const auto& kv : skipped.paths) {
    w->S(kv.first);
    w->S(kv.second);
  }
  w->U(skipped.walk_errors);
  PutStrings(w, origins);
  PutInts(w, labels_not_ranks);
}

void InputFiles::Decode(WireReader* r, Limits* l) {
  size_t n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    FileInfo& f = files.emplace_back();
    f.path = r->S();
    f.bytes = r->U();
    f.lines = r->U();
    f.error = r->S();
    f.path_rank = static_cast<int>(r->I());
    f.path_host = r->S();
    f.path_pid = r->I();
  }
  l->files = files.size();
  GetMap(r, &skipped.count);
  n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    std::string reason = r->S();
    skipped.paths.emplace_back(std::move(reason), r->S());
  }
  skipped.walk_errors = r->U();
  GetStrings(r, &origins);
  if (origins.size() > kMaxOrigins) r->Fail();
  for (size_t i = 0; i < origins.size(); ++i) origin_index.emplace(origins[i], static_cast<int>(i));
  l->origins = origins.size();
  n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) labels_not_ranks.insert(r->Index(0, l->files));
}

void InputFiles::Absorb(InputFiles&& later, Remap* r) {
  r->file_off = static_cast<int>(files.size());
  for (auto& f : later.files) files.push_back(std::move(f));
  skipped.Merge(later.skipped);
  // Grep-prefix origins are interned as a scan does, up to the same bound.
  r->origin.assign(later.origins.size(), -1);
  for (size_t i = 0; i < later.origins.size(); ++i) r->origin[i] = InternOrigin(later.origins[i]);
  for (int f : later.labels_not_ranks) labels_not_ranks.insert(r->File(f));
}

// ---- subjects ----

int SubjectTable::Add(const SubjectKeyView& key, Subject s, size_t facts, uint64_t* over_cap) {
  SubjectKey k = SubjectKey::Of(key);
  if (all.size() >= kMaxSubjects) {
    ++*over_cap;
    const int past = Find(SubjectKey::OverCap());
    if (past >= 0) return past;
    // Neither a process nor a rank: its first/last facts keep every value, as
    // for a stream several processes share.
    s = Subject();
    s.label = "(more processes and ranks than the subject cap)";
    s.over_cap = true;
    k = SubjectKey();
  }
  s.facts = FactSlots<FactValue>(facts);
  s.keyed = KeyedSlots(facts);
  all.push_back(std::move(s));
  const int idx = static_cast<int>(all.size()) - 1;
  index.emplace(std::move(k), idx);
  return idx;
}

void SubjectTable::Merge(int from, int into, const std::vector<FactSpec>& specs, uint64_t* over_key_cap) {
  Subject& a = all[from];
  Subject& b = all[into];
  a.merged_away = true;
  a.merged_into = into;
  if (b.host.empty()) b.host = a.host;
  if (b.pid < 0) b.pid = a.pid;
  b.devices |= a.devices;
  b.names_another |= a.names_another;
  for (int f : a.files) b.AddFile(f);
  // The facts move: a merged-away subject is read only through the one it
  // was merged into (JobState::LiveSubject; reports name it by its label).
  MergeFacts(specs, &b.facts, &b.keyed, std::move(a.facts), std::move(a.keyed), MergeOrder::kBySeen, over_key_cap);
  a.facts = FactSlots<FactValue>(specs.size());
  a.keyed = KeyedSlots(specs.size());
}

void SubjectTable::Encode(WireWriter* w) const {
  // Facts sparsely, by fact index (most subjects carry few).
  w->U(all.size());
  for (const Subject& s : all) {
    w->S(s.host);
    w->I(s.pid);
    w->I(s.rank);
    w->S(s.label);
    w->U(s.files.size());
    for (int f : s.files) w->I(f);
    w->U(s.devices);
    PutPairs(w, s.rank_hints);
    PutPairs(w, s.label_hints);
    w->U(s.host_from_hint);
    w->U(s.over_cap);
    w->U(s.names_another);
    w->U(s.facts.slots().size());
    for (const auto& [f, v] : s.facts.slots()) {
      w->I(f);
      Put(w, v);
    }
    w->U(s.keyed.slots().size());
    for (const auto& [f, m] : s.keyed.slots()) {
      w->I(f);
      w->U(m.size());
      for (const auto& kv : m) {
        w->S(kv.first);
        Put(w, kv.second);
      }
    }
  }
  w->U(index.size());
  for (const auto& [key, i] : index) {
    w->U(static_cast<uint64_t>(key.kind));
    w->S(key.host);
    w->I(key.pid);
    w->I(key.n);
    w->I(i);
  }
}

void SubjectTable::Decode(WireReader* r, Limits* l) {
  // The scan's caps hold for a decoded state too: a crafted partial of a few
  // KB naming ten million empty subjects is corrupt, not gigabytes of them.
  size_t n = r->Count();
  if (n > kMaxSubjects + 1) r->Fail();  // + the one past the cap
  for (size_t i = 0; i < n && r->ok(); ++i) {
    Subject& s = all.emplace_back();
    s.host = r->S();
    s.pid = r->I();
    s.rank = static_cast<int>(r->I());
    s.label = r->S();
    size_t k = r->Count();
    for (size_t j = 0; j < k && r->ok(); ++j) s.files.push_back(r->Index(0, l->files));
    s.devices = r->U();
    GetMap(r, &s.rank_hints);
    GetMap(r, &s.label_hints);
    s.host_from_hint = r->U() != 0;
    s.over_cap = r->U() != 0;
    s.names_another = r->U() != 0;
    s.facts = FactSlots<FactValue>(l->facts);
    s.keyed = KeyedSlots(l->facts);
    // Slots come in fact order; one out of order or twice is corrupt.
    k = r->Count();
    for (size_t j = 0, last = 0; j < k && r->ok(); ++j) {
      int f = r->Index(0, l->facts);
      if (j > 0 && static_cast<size_t>(f) <= last) r->Fail();
      last = static_cast<size_t>(f);
      if (!r->ok()) break;
      Get(r, &s.facts.At(f), *l);
    }
    k = r->Count();
    for (size_t j = 0, last = 0; j < k && r->ok(); ++j) {
      int f = r->Index(0, l->facts);
      if (j > 0 && static_cast<size_t>(f) <= last) r->Fail();
      last = static_cast<size_t>(f);
      if (!r->ok()) break;
      KeyedValues& m = s.keyed.At(f);
      size_t keys = r->Count();
      for (size_t q = 0; q < keys && r->ok(); ++q) {
        std::string key = r->S();
        Get(r, &m[key], *l);
      }
    }
  }
  for (const Subject& s : all) {
    if (!RankOk(s.rank)) r->Fail();
    for (const auto* hints : {&s.rank_hints, &s.label_hints}) {
      for (const auto& kv : *hints) {
        if (!RankOk(kv.first) || kv.second < 0) r->Fail();
      }
    }
  }
  l->subjects = all.size();
  n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    SubjectKey key;
    const uint64_t kind = r->U();
    if (kind > static_cast<uint64_t>(SubjectKind::kDevice)) r->Fail();
    key.kind = static_cast<SubjectKind>(kind);
    key.host = r->S();
    key.pid = r->I();
    key.n = r->I();
    index[std::move(key)] = r->Index(0, l->subjects);
  }
}

void SubjectTable::Absorb(SubjectTable&& later, const std::vector<FactSpec>& specs, Remap* r, Counters* c) {
  std::vector<SubjectKey> key_of(later.all.size());
  for (auto& kv : later.index) key_of[kv.second] = kv.first;
  r->subject.assign(later.all.size(), -1);
  for (size_t i = 0; i < later.all.size(); ++i) {
    Subject& bs = later.all[i];
    SubjectKey key = std::move(key_of[i]);
    if (key.kind == SubjectKind::kStream) key.n = r->File(static_cast<int>(key.n));
    for (int& f : bs.files) f = r->File(f);
    for (auto& [f, v] : bs.facts.slots()) r->Fix(&v);
    for (auto& [f, m] : bs.keyed.slots()) {
      for (auto& kv : m) r->Fix(&kv.second);
    }
    int j = Find(key.View());
    if (j < 0 && all.size() < kMaxSubjects) {
      all.push_back(std::move(bs));
      r->subject[i] = static_cast<int>(all.size()) - 1;
      index.emplace(std::move(key), r->subject[i]);
      continue;
    }
    // Past the cap a scan would have summarised this subject's lines; its
    // state joins the summary (counted once, not per line: a merge past the
    // cap summarises as a scan does, but its count is of subjects).
    if (j < 0) j = Add(key.View(), Subject(), specs.size(), &c->over_subject_cap);
    r->subject[i] = j;
    Subject& a = all[j];
    if (a.host.empty() && !bs.host.empty() && !a.over_cap) {
      a.host = bs.host;
      a.host_from_hint = bs.host_from_hint;
    }
    for (int f : bs.files) a.AddFile(f);
    a.devices |= bs.devices;
    a.names_another |= bs.names_another;
    if (!a.over_cap) {
      AddCounts(&a.rank_hints, bs.rank_hints);
      AddCounts(&a.label_hints, bs.label_hints);
    }
    MergeFacts(specs, &a.facts, &a.keyed, std::move(bs.facts), std::move(bs.keyed), MergeOrder::kLater,
               &c->over_key_cap);
  }
}

// ---- communicators ----

CommInfo* CommTable::For(const std::string& id, uint64_t* over_cap) {
  if (!CanTrack(id)) {
    ++*over_cap;
    return nullptr;
  }
  CommInfo& ci = by_id[id];
  ci.id = id;
  return &ci;
}

bool CommTable::TranslateKey(const std::map<std::string, std::string, std::less<>>& ptrs, std::string_view key,
                             std::string* out) {
  const size_t sp = key.find(' ');
  auto it = ptrs.find(key.substr(0, sp));
  if (it == ptrs.end()) return false;
  *out = it->second;
  if (sp != std::string_view::npos) out->append(key.substr(sp));
  return true;
}

void CommTable::Encode(WireWriter* w) const {
  w->U(by_id.size());
  for (const auto& kv : by_id) {
    const CommInfo& c = kv.second;
    w->S(kv.first);
    w->S(c.id);
    w->I(c.nranks);
    for (const std::set<int>* set : {&c.ranks_started, &c.ranks_completed, &c.ranks_aborted, &c.subjects}) {
      PutInts(w, *set);
    }
  }
  w->U(ptr.size());
  for (const auto& m : ptr) PutPairs(w, m);
  PutPairs(w, rank_in);
}

void CommTable::Decode(WireReader* r, const Limits& l) {
  size_t n = r->Count();
  if (n > kMaxComms) r->Fail();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    CommInfo& c = by_id[r->S()];
    c.id = r->S();
    c.nranks = static_cast<int>(r->I());
    for (std::set<int>* set : {&c.ranks_started, &c.ranks_completed, &c.ranks_aborted}) {
      size_t k = r->Count();
      for (size_t j = 0; j < k && r->ok(); ++j) set->insert(static_cast<int>(r->I()));
    }
    size_t k = r->Count();
    for (size_t j = 0; j < k && r->ok(); ++j) c.subjects.insert(r->Index(0, l.subjects));
  }
  n = r->Count();
  if (n > l.subjects) r->Fail();
  for (size_t i = 0; i < n && r->ok(); ++i) GetMap(r, &ptr.emplace_back());
  for (const auto& kv : by_id) {
    const CommInfo& c = kv.second;
    if (!RankOk(c.nranks)) r->Fail();
    for (const std::set<int>* set : {&c.ranks_started, &c.ranks_completed, &c.ranks_aborted}) {
      if (!set->empty() && (!RankOk(*set->begin()) || !RankOk(*set->rbegin()))) r->Fail();
    }
  }
  GetMap(r, &rank_in);
  for (const auto& kv : rank_in) {
    for (const auto& cr : kv.second) {
      if (!RankOk(cr.second)) r->Fail();
    }
  }
  CheckSubjectKeys(r, rank_in, l);
}

void CommTable::Absorb(CommTable&& later, const Remap& r, uint64_t* over_cap) {
  // Per subject, later assignments win, as they would line by line.
  for (size_t i = 0; i < later.ptr.size(); ++i) {
    if (later.ptr[i].empty()) continue;
    const size_t j = static_cast<size_t>(r.Subject(static_cast<int>(i)));
    if (ptr.size() <= j) ptr.resize(j + 1);
    for (auto& kv : later.ptr[i]) ptr[j][kv.first] = std::move(kv.second);
  }
  for (auto& kv : later.rank_in) {
    auto& m = rank_in[r.Subject(kv.first)];
    for (auto& cr : kv.second) {
      if (CanTrack(cr.first)) m[cr.first] = cr.second;
    }
  }
  for (auto& kv : later.by_id) {
    CommInfo* mine = For(kv.first, over_cap);
    if (!mine) continue;  // past the cap, as its lines would have been
    mine->Join(kv.second, /*o_is_later=*/true, [&](int s) { return r.Subject(s); });
  }
}

// ---- line findings ----

void LineFindingTable::Encode(WireWriter* w) const {
  w->U(by_key.size());
  for (const auto& kv : by_key) {
    const LineFindingAcc& a = kv.second;
    w->S(kv.first);
    w->I(a.rule);
    w->S(a.group);
    PutPairs(w, a.vars);
    PutInts(w, a.subjects);
    w->U(a.evidence.size());
    for (const auto& e : a.evidence) Put(w, e);
    w->I(a.count);
    Put(w, a.first);
    w->I(a.first_subject);
    Put(w, a.last);
    w->S(a.result);
  }
  PutStrings(w, open_warn);
}

void LineFindingTable::Decode(WireReader* r, const Limits& l) {
  size_t n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    LineFindingAcc& a = by_key[r->S()];
    a.rule = r->Index(0, l.rules);
    a.group = r->S();
    GetMap(r, &a.vars);
    size_t k = r->Count();
    for (size_t j = 0; j < k && r->ok(); ++j) a.subjects.insert(r->Index(0, l.subjects));
    k = r->Count();
    if (k > kMaxEvidencePerFinding) r->Fail();
    for (size_t j = 0; j < k && r->ok(); ++j) Get(r, &a.evidence.emplace_back(), l);
    a.count = r->I();
    CheckCount(r, a.count);
    Get(r, &a.first, l);
    a.first_subject = r->Index(-1, l.subjects);
    Get(r, &a.last, l);
    a.result = r->S();
  }
  GetStrings(r, &open_warn);
  if (open_warn.size() > l.subjects) r->Fail();
}

void LineFindingTable::Absorb(LineFindingTable&& later, const Remap& r) {
  for (size_t i = 0; i < later.open_warn.size(); ++i) {
    if (later.open_warn[i].empty()) continue;
    const size_t j = static_cast<size_t>(r.Subject(static_cast<int>(i)));
    if (open_warn.size() <= j) open_warn.resize(j + 1);
    open_warn[j] = std::move(later.open_warn[i]);
  }
  for (auto& kv : later.by_key) {
    LineFindingAcc& bf = kv.second;
    for (auto& e : bf.evidence) r.Fix(&e);
    r.Fix(&bf.first);
    r.Fix(&bf.last);
    std::set<int> subjects;
    for (int s : bf.subjects) subjects.insert(r.Subject(s));
    bf.subjects = std::move(subjects);
    if (bf.first_subject >= 0) bf.first_subject = r.Subject(bf.first_subject);
    auto it = by_key.find(kv.first);
    if (it == by_key.end()) {
      by_key.emplace(kv.first, std::move(bf));
      continue;
    }
    LineFindingAcc& a = it->second;
    a.count += bf.count;
    a.subjects.insert(bf.subjects.begin(), bf.subjects.end());
    for (auto& e : bf.evidence) {
      if (a.evidence.size() >= kMaxEvidencePerFinding) break;
      a.evidence.push_back(std::move(e));
    }
    if (SeenBefore(bf.first, a.first)) {
      a.first = bf.first;
      a.first_subject = bf.first_subject;
    }
    if (SeenBefore(a.last, bf.last)) a.last = bf.last;
    if (a.result.empty()) a.result = std::move(bf.result);
  }
}

// ---- identity clues ----

void IdentityClues::NoteConflict(const std::string& msg) {
  // Distinct messages only, and a bounded number: memory must not grow with input.
  if (conflicts.size() >= kMaxIdentityConflicts) return;
  if (std::find(conflicts.begin(), conflicts.end(), msg) == conflicts.end()) conflicts.push_back(msg);
}

void IdentityClues::NameGlobalRank(int subject, int rank, const Subject& s) {
  auto it = global_rank.find(subject);
  if (it == global_rank.end()) {
    global_rank[subject] = rank;
  } else if (it->second != rank) {
    NoteConflict(s.host + ":" + std::to_string(s.pid) + " is named rank " + std::to_string(it->second) + " and rank " +
                 std::to_string(rank) + " (one process driving several GPUs?); using " + std::to_string(it->second));
  }
}

void IdentityClues::Encode(WireWriter* w) const {
  PutPairs(w, global_rank);
  PutPairs(w, address_owner);
  PutPairs(w, hint_hosts);
  PutStrings(w, address);
  PutStrings(w, conflicts);
}

void IdentityClues::Decode(WireReader* r, const Limits& l) {
  GetMap(r, &global_rank);
  for (const auto& kv : global_rank) {
    if (!RankOk(kv.second)) r->Fail();
  }
  CheckSubjectKeys(r, global_rank, l);
  GetMap(r, &address_owner);
  GetMap(r, &hint_hosts);
  GetStrings(r, &address);
  GetStrings(r, &conflicts);
  if (address.size() > l.subjects) r->Fail();
}

void IdentityClues::Absorb(IdentityClues&& later, const Remap& r, const std::vector<Subject>& subjects) {
  for (const auto& kv : later.global_rank) {
    const int j = r.Subject(kv.first);
    NameGlobalRank(j, kv.second, subjects[j]);
  }
  for (size_t i = 0; i < later.address.size(); ++i) {
    if (later.address[i].empty()) continue;
    const size_t j = static_cast<size_t>(r.Subject(static_cast<int>(i)));
    if (address.size() <= j) address.resize(j + 1);
    if (address[j].empty()) address[j] = std::move(later.address[i]);
  }
  for (auto& kv : later.hint_hosts) {
    auto h = hint_hosts.find(kv.first);
    if (h == hint_hosts.end()) h = hint_hosts.try_emplace(kv.first).first;
    AddCounts(&h->second, kv.second);
  }
  for (auto& kv : later.address_owner) address_owner[kv.first] = std::move(kv.second);
  for (const auto& c : later.conflicts) NoteConflict(c);
}

}  // namespace ncclscan
